"""``peertrain job export --mlflow``: what a run gets (pure), and the command against a
fake API into each kind of tracking URI, read back with MLflow's own client: a folder
(``file://``), a SQLite database (``sqlite:///``) and a real ``mlflow server`` on a free
local port (``http://``; the full package, from its cached venv: deploy/local/
mlflow-venv.sh), started for this module and stopped after. The export of a real job
through the gateway is tests/stack/training/test_mlflow.py's."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeApi
from typer.testing import CliRunner

from peertrain.client import ClientError, FileTokenStore, Tokens
from peertrain.client.cli import CliState, app
from peertrain.client.tracking import (
    MAX_PARAM_CHARS,
    Point,
    flatten,
    metric_key,
    store_kind,
    tracked_run,
)
from peertrain.testkit.common import MlflowServer

API = "http://api.test"
JOB: dict[str, Any] = {
    "job_id": "job-1",
    "name": "letters",
    "state": "completed",
    "dataset_id": "ds-1",
    "rounds": 2,
    "current_round": 2,
    "created_at": "2026-12-01T10:00:00+00:00",
    "finished_at": "2026-12-01T10:05:00+00:00",
    "owner_id": "u-1",
    "peers": ["pa", "pb"],
    "model": {"arch": "mlp", "hidden": [32, 16], "dropout": 0.0},
    "training": {"rounds": 2, "local_epochs": 2, "lr": 0.05, "optimizer": "sgd"},
    "aggregation": {"strategy": "fedavg", "min_peers": 2},
    "sharding": {"strategy": "iid", "alpha": None},
    "final_version": 2,
    "tasks": [],
    "error": None,
}
METRICS: dict[str, Any] = {
    "job_id": "job-1",
    "initial": {"version": 0, "loss": 2.3, "accuracy": 0.1},
    "rounds": [
        {
            "round": r,
            "version": r,
            "loss": 1.0 / r,
            "accuracy": 0.5 + r / 10,
            "per_class_accuracy": [0.5, None, 0.9],
            "samples": 200,
            "duration_s": 3.5,
            "peers": 2,
        }
        for r in (1, 2)
    ],
    "peers": [
        {
            "peer_id": peer,
            "round": r,
            "shard": 0 if peer == "pa" else 1,
            "task_id": f"t-{peer}-{r}",
            "epoch": e,
            "epochs": 2,
            "loss": 1.0 / (r * e) + (0.5 if peer == "pb" else 0.0),
            "accuracy": 0.4 + r / 10 + e / 100,
            "samples": 400,
            "duration_s": 0.25,
        }
        for peer in ("pa", "pb")
        for r in (1, 2)
        for e in (1, 2)
    ],
}
CONFIG = {"feature_spec": {"classes": ["A", "B/b", "C"], "input_shape": [16]}}


def _graph(blocks: int = 100) -> dict[str, Any]:
    """A residual MLP on 16 inputs as a layer graph: 2 + 2 * ``blocks`` nodes (20 kB)."""
    lin = {"in_features": 16, "out_features": 16}
    nodes: list[dict[str, Any]] = [
        {"name": "stem", "op": "linear", "module": "stem", "inputs": ["x"], "args": lin}
    ]
    last = "stem"
    for i in range(blocks):
        nodes.append({"name": f"relu{i}", "op": "relu", "inputs": [last]})
        nodes.append({"name": f"res{i}", "op": "add", "inputs": [last, f"relu{i}"]})
        last = f"res{i}"
    head = {"in_features": 16, "out_features": 3}
    nodes.append({"name": "head", "op": "linear", "module": "head", "inputs": [last], "args": head})
    return {"arch": "graph", "version": 1, "input_shape": [16], "nodes": nodes, "output": "head"}


GRAPH_JOB = {**JOB, "model": _graph()}
GRAPH_SUMMARY = {
    "arch": "graph",
    "name": None,
    "input_shape": [16],
    "parameters": 16 * 16 + 16 + 16 * 3 + 3,
    "activations": 16 * 202 + 3,
    "layers": [{"name": f"n{i}"} for i in range(202)],
}


def _series(points: list[Point], key: str) -> list[tuple[int, float]]:
    return [(p.step, p.value) for p in points if p.key == key]


def test_params_are_the_whole_spec_flattened() -> None:
    run = tracked_run(JOB, METRICS, CONFIG)
    assert run.params["training.lr"] == "0.05"
    assert run.params["model.hidden"] == "[32, 16]"
    assert run.params["aggregation.strategy"] == "fedavg"
    assert run.params["sharding.alpha"] == "null"
    assert run.params["peers"] == '["pa", "pb"]'
    assert run.params["name"] == "letters" and run.params["dataset_id"] == "ds-1"
    assert not any(k.startswith(("tasks", "owner_id", "error", "state")) for k in run.params)
    assert (run.name, run.status, run.tags["peertrain.job_id"]) == ("letters", "FINISHED", "job-1")
    assert run.end_ms is not None and run.start_ms == run.end_ms - 300_000


def test_a_graphs_nodes_are_no_param_but_counted_and_its_size_comes_from_the_summary() -> None:
    assert len(json.dumps(GRAPH_JOB["model"]["nodes"])) > MAX_PARAM_CHARS
    params = tracked_run(GRAPH_JOB, METRICS).params
    assert not any(k.startswith("model.nodes") for k in params)
    assert (params["model.arch"], params["model.layers"], params["model.output"]) == (
        "graph",
        "202",
        "head",
    )
    assert params["model.input_shape"] == "[16]" and "model.parameters" not in params
    sized = tracked_run(GRAPH_JOB, METRICS, model=GRAPH_SUMMARY).params
    assert (sized["model.parameters"], sized["model.layers"]) == ("323", "202")
    assert all(len(v) <= MAX_PARAM_CHARS for v in sized.values())


def test_a_named_architecture_logs_its_name_and_size() -> None:
    job = {**JOB, "model": {"arch": "torchvision", "name": "resnet18", "cifar_stem": True}}
    summary = {"parameters": 11_173_962, "layers": [{}] * 67}
    params = tracked_run(job, METRICS, model=summary).params
    assert (params["model.arch"], params["model.name"], params["model.cifar_stem"]) == (
        "torchvision",
        "resnet18",
        "true",
    )
    assert (params["model.parameters"], params["model.layers"]) == ("11173962", "67")


def test_a_value_longer_than_mlflow_takes_is_a_note_of_its_length() -> None:
    peers = [f"peer-{i:040d}" for i in range(200)]
    params = tracked_run({**JOB, "peers": peers}, METRICS).params
    assert params["peers"] == f"({len(json.dumps(peers))} characters: see job.json)"


def test_round_metrics_are_stepped_by_round_from_the_initial_model() -> None:
    points = tracked_run(JOB, METRICS, CONFIG).metrics
    assert _series(points, "loss") == [(0, 2.3), (1, 1.0), (2, 0.5)]
    assert _series(points, "accuracy") == [(0, 0.1), (1, 0.6), (2, 0.7)]
    assert _series(points, "round_peers") == [(1, 2.0), (2, 2.0)]
    assert _series(points, "holdout_samples") == [(1, 200.0), (2, 200.0)]
    # Class names from the config; a class without holdout rows has no value.
    assert _series(points, "class_accuracy/B_b") == []
    assert _series(points, "class_accuracy/C") == [(1, 0.9), (2, 0.9)]
    without_config = tracked_run(JOB, METRICS).metrics
    assert _series(without_config, "class_accuracy/2") == [(1, 0.9), (2, 0.9)]


def test_peer_metrics_per_round_and_per_epoch() -> None:
    points = tracked_run(JOB, METRICS, CONFIG).metrics
    # Per round: the round's last local epoch.
    assert _series(points, "peer/pa/train_loss") == [(1, 0.5), (2, 0.25)]
    assert _series(points, "peer/pb/train_loss") == [(1, 1.0), (2, 0.75)]
    # Per epoch, counted across rounds.
    steps = _series(points, "peer/pa/epoch_train_loss")
    assert [s for s, _ in steps] == [1, 2, 3, 4]
    assert steps[2] == (3, 0.5)


def test_a_retried_epoch_counts_once_the_later_report() -> None:
    again = {**METRICS["peers"][0], "task_id": "t-retry", "loss": 9.0}
    points = tracked_run(JOB, {**METRICS, "peers": [*METRICS["peers"], again]}).metrics
    assert _series(points, "peer/pa/epoch_train_loss")[0] == (1, 9.0)


def test_a_job_that_has_not_ended_is_refused() -> None:
    with pytest.raises(ClientError, match="job job-1 is still running"):
        tracked_run({**JOB, "state": "running"}, METRICS)
    failed = tracked_run({**JOB, "state": "failed", "final_version": None}, {})
    assert failed.status == "FAILED" and failed.metrics == []


def test_flatten_and_metric_keys() -> None:
    flat = flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x"})
    assert flat == {"a.b": "1", "a.c": "[1, 2]", "d": "x"}
    assert metric_key("peer", "p#1", "..") == "peer/p_1/_"


# -- the command ------------------------------------------------------------------------


def _run(api: FakeApi, cfg: Path, *args: str):  # type: ignore[no-untyped-def]
    FileTokenStore(cfg, api_url=API).save(Tokens("access-1", "refresh-1"))
    state = CliState(transport=api.transport)
    env = {"COLUMNS": "200", "PEERTRAIN_API": API, "PEERTRAIN_CONFIG_DIR": str(cfg)}
    return CliRunner().invoke(app, list(args), obj=state, env=env)


def _routes(api: FakeApi) -> None:
    api.route("GET", "/api/jobs/job-1", JOB)
    api.route("GET", "/api/jobs/job-1/metrics", METRICS)
    api.route("GET", "/api/jobs/job-1/config", CONFIG)
    api.route("GET", "/api/models/job-1/final", b"weights")


def test_without_the_mlflow_client_one_line_names_the_extra(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _routes(api)
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow -> ImportError
    result = _run(api, tmp_path, "job", "export", "job-1", "--mlflow", "http://127.0.0.1:9")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "peertrain: error: exporting to MLflow needs its client: "
        "pip install 'peertrain-client[mlflow]'"
    )
    assert result.stderr.count("\n") == 1
    assert api.requests == []  # said before anything is fetched


@pytest.fixture(autouse=True)
def _mlflow_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings the command sets for MLflow are undone after each test; none is set
    beforehand (the command must work without the user's help)."""
    for key in (
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
        "MLFLOW_HTTP_REQUEST_TIMEOUT",
        "MLFLOW_ALLOW_FILE_STORE",
        "MLFLOW_TRACKING_URI",
        "MLFLOW_REGISTRY_URI",
    ):
        monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    pytest.importorskip("mlflow")
    server = MlflowServer.launch(tmp_path_factory.mktemp("mlflow-server"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["file", "sqlite", pytest.param("http", marks=pytest.mark.external)])
def tracking_uri(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """A tracking URI of each kind, its store empty."""
    if request.param == "file":
        return (tmp_path / "mlruns").as_uri()
    if request.param == "sqlite":
        monkeypatch.chdir(tmp_path)  # a new experiment's artifacts go to ./mlruns
        return f"sqlite:///{tmp_path / 'mlflow.db'}"
    server: MlflowServer = request.getfixturevalue("mlflow_server")
    return server.uri


def test_tracking_uris_by_kind() -> None:
    assert store_kind("http://127.0.0.1:5000") == store_kind("HTTPS://mlflow.example") == "server"
    assert store_kind("sqlite:///mlflow.db") == "database"
    assert store_kind("postgresql+psycopg2://u@db/mlflow") == "database"
    assert store_kind("file:///tmp/mlruns") == store_kind("./mlruns") == "folder"
    assert store_kind("C:\\runs") == "folder"
    assert store_kind("databricks") == store_kind("databricks://profile") == "other"


def test_export_logs_a_run_once(api: FakeApi, tmp_path: Path, tracking_uri: str) -> None:
    mlflow = pytest.importorskip("mlflow")
    _routes(api)
    uri = tracking_uri
    result = _run(api, tmp_path, "job", "export", "job-1", "--mlflow", uri, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["artifacts"] == ["config.json", "job.json", "metrics.json", "model/final.pt"]

    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.get_run(out["run_id"])
    assert run.info.status == "FINISHED" and run.info.run_name == "letters"
    assert run.data.params["training.lr"] == "0.05"
    history = client.get_metric_history(out["run_id"], "accuracy")
    assert sorted((m.step, m.value) for m in history) == [(0, 0.1), (1, 0.6), (2, 0.7)]
    model = Path(client.download_artifacts(out["run_id"], "model/final.pt", str(tmp_path)))
    assert model.read_bytes() == b"weights"

    again = _run(api, tmp_path, "job", "export", "job-1", "--mlflow", uri)
    assert again.exit_code == 1
    assert f"already in experiment 'peertrain' as run {out['run_id']}" in again.stderr
    assert _run(api, tmp_path, "job", "export", "job-1", "--mlflow", uri, "--again").exit_code == 0
    experiment = client.get_experiment_by_name("peertrain")
    assert len(client.search_runs([experiment.experiment_id])) == 2


def test_a_database_without_sqlalchemy_is_one_line_naming_the_extra(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow")
    _routes(api)
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = _run(api, tmp_path, "job", "export", "job-1", "--mlflow", uri)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"peertrain: error: exporting to a database ({uri}) needs SQLAlchemy and Alembic"
        " beside MLflow's client: pip install 'peertrain-client[mlflow]'"
    )
    assert result.stderr.count("\n") == 1
    assert api.requests == [] and not (tmp_path / "mlflow.db").exists()


def test_a_graph_job_is_exported_with_its_graph_and_summary_as_artifacts(
    api: FakeApi, tmp_path: Path
) -> None:
    mlflow = pytest.importorskip("mlflow")
    _routes(api)
    api.route("GET", "/api/jobs/job-1", GRAPH_JOB)
    api.route("GET", "/api/jobs/job-1/model", GRAPH_SUMMARY)
    uri = (tmp_path / "mlruns").as_uri()
    result = _run(api, tmp_path, "job", "export", "job-1", "--mlflow", uri, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["artifacts"] == [
        "config.json",
        "job.json",
        "metrics.json",
        "model.json",
        "model/final.pt",
        "model/graph.json",
    ]
    client = mlflow.MlflowClient(tracking_uri=uri)
    params = client.get_run(out["run_id"]).data.params
    assert (params["model.arch"], params["model.parameters"], params["model.layers"]) == (
        "graph",
        "323",
        "202",
    )
    graph = Path(client.download_artifacts(out["run_id"], "model/graph.json", str(tmp_path)))
    assert json.loads(graph.read_text()) == GRAPH_JOB["model"]


def test_an_unreachable_tracking_server_is_one_line(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    _routes(api)
    result = _run(api, tmp_path, "job", "export", "job-1", "--mlflow", "http://127.0.0.1:9")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "peertrain: error: cannot reach the MLflow tracking server at http://127.0.0.1:9 ("
    )
    assert result.stderr.count("\n") == 1
