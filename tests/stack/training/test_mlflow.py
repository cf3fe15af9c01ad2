"""``peertrain job export <job> --mlflow <uri>`` into a real MLflow tracking server.

The server is ``mlflow server`` (the full package, from its own cached venv:
deploy/local/mlflow-venv.sh) on a free port, with a SQLite backend store and a local
artifact root, started here (``peertrain.testkit.common.MlflowServer``); it boots while
the short MNIST job (2 peers, 2 rounds, shared with test_predict.py) trains. The real
CLI exports the ended job in a fresh process, and the run is read back through MLflow's
own client: the spec as params, holdout metrics per round (round as the step), each
peer's metrics, the final model; and a one-round job whose model is a layer graph: its
size as params, the graph as an artifact (never its nodes as a param).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from training_support import Platform, create_job, finished

from peertrain.client import FileTokenStore, Tokens
from peertrain.testkit.common import GATEWAY, MlflowServer, child_env

pytestmark = [pytest.mark.stack]
mlflow = pytest.importorskip("mlflow")  # the client: peertrain-client[mlflow], in the dev group


@pytest.fixture(scope="module")
def mlflow_and_job(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[MlflowServer, str]]:
    """The server, booting while the short MNIST job trains; then both ready."""
    server = MlflowServer.launch(tmp_path_factory.mktemp("mlflow"))
    try:
        job_id: str = request.getfixturevalue("short_mnist_job")
        server.wait_ready()
        yield server, job_id
    finally:
        server.stop()


def cli_config(platform: Platform, folder: Path) -> Path:
    """A config folder in which the CLI is logged in as the platform's user.

    The platform renews its own pair first and hands the CLI only the fresh access
    token: a CLI that refreshed would spend the platform's refresh token.
    """
    assert platform.auth is not None and platform.auth.tokens is not None
    stale = platform.auth.tokens
    r = httpx.post(
        f"{GATEWAY}/api/auth/refresh", json={"refresh_token": stale.refresh_token}, timeout=30
    )
    assert r.status_code == 200, r.text
    pair = Tokens.from_pair(r.json(), stale.username)
    platform.auth.set_tokens(pair)
    FileTokenStore(folder, api_url=GATEWAY).save(Tokens(pair.access_token, None, pair.expires_at))
    return folder


def peertrain(config_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env("cli", {"PEERTRAIN_CONFIG_DIR": str(config_dir), "COLUMNS": "200"})
    return subprocess.run(
        [sys.executable, "-m", "peertrain.client.cli", "--api", GATEWAY, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def export(platform: Platform, server: MlflowServer, job_id: str, tmp: Path) -> dict[str, Any]:
    """``peertrain job export JOB --mlflow URI --json`` as the platform's user; its output."""
    config_dir = cli_config(platform, tmp / "cli")
    done = peertrain(config_dir, "job", "export", job_id, "--mlflow", server.uri, "--json")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{server.tail()}"
    out: dict[str, Any] = json.loads(done.stdout)
    return out


async def test_export_logs_spec_round_and_peer_metrics_and_the_model_to_mlflow(
    mlflow_and_job: tuple[MlflowServer, str], platform: Platform, http: Any, tmp_path: Path
) -> None:
    server, job_id = mlflow_and_job
    job = (await http.get(f"/api/jobs/{job_id}")).json()
    metrics = (await http.get(f"/api/jobs/{job_id}/metrics")).json()
    final = await http.get(f"/api/models/{job_id}/final", params={"format": "pt"})
    assert final.status_code == 200, final.text

    out = export(platform, server, job_id, tmp_path)

    client = mlflow.MlflowClient(tracking_uri=server.uri)
    run = client.get_run(out["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.tags["peertrain.job_id"] == job_id
    params = run.data.params
    assert params["training.rounds"] == "2" and params["model.arch"] == "mlp"
    assert params["model.hidden"] == "[128]" and params["aggregation.strategy"] == "fedavg"
    assert params["dataset_id"] == job["dataset_id"]
    assert json.loads(params["peers"]) == job["peers"]
    summary = (await http.get(f"/api/jobs/{job_id}/model")).json()
    assert params["model.parameters"] == str(summary["parameters"])
    assert params["model.layers"] == str(len(summary["layers"]))

    def history(key: str) -> list[tuple[int, float]]:
        return sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))

    initial = metrics["initial"]
    assert history("accuracy") == [
        (0, initial["accuracy"]),
        *[(r["round"], r["accuracy"]) for r in metrics["rounds"]],
    ]
    assert [s for s, _ in history("loss")] == [0, 1, 2]
    for peer_id in job["peers"]:
        assert [s for s, _ in history(f"peer/{peer_id}/train_loss")] == [1, 2]

    artifacts = {f.path for f in client.list_artifacts(run.info.run_id)}
    assert {"model", "job.json", "metrics.json", "config.json", "model.json"} <= artifacts
    model = client.download_artifacts(run.info.run_id, "model/final.pt", str(tmp_path))
    digest = hashlib.sha256(Path(model).read_bytes()).hexdigest()
    assert digest == hashlib.sha256(final.content).hexdigest()
    print(json.dumps({"job": job_id, **out}))


async def test_a_graph_job_exports_its_size_as_params_and_its_graph_as_an_artifact(
    mlflow_and_job: tuple[MlflowServer, str], platform: Platform, http: Any, tmp_path: Path
) -> None:
    server, mnist_id = mlflow_and_job
    mnist = (await http.get(f"/api/jobs/{mnist_id}")).json()
    summary = (await http.get(f"/api/jobs/{mnist_id}/model")).json()
    shape, classes = summary["input_shape"], summary["layers"][-1]["shape"][-1]
    width = 1
    for d in shape:
        width *= d
    graph = {
        "arch": "graph",
        "input_shape": shape,
        "output": "fc",
        "nodes": [
            {"name": "flat", "op": "flatten", "inputs": ["x", 1]},
            {"name": "fc", "op": "linear", "module": "fc", "inputs": ["flat"],
             "args": {"in_features": width, "out_features": classes}},
        ],
    }  # fmt: skip
    body = {
        "name": "mlflow-graph",
        "dataset_id": mnist["dataset_id"],
        "peers": mnist["peers"],
        "model": graph,
        "training": {"rounds": 1, "local_epochs": 1, "batch_size": 64, "seed": 1},
        "aggregation": {"min_peers": 2, "round_deadline_s": 300},
    }
    job_id = await create_job(platform, body)
    assert (await finished(platform, job_id))["state"] == "completed"

    out = export(platform, server, job_id, tmp_path)
    assert {"model/graph.json", "model.json", "model/final.pt"} <= set(out["artifacts"])
    client = mlflow.MlflowClient(tracking_uri=server.uri)
    params = client.get_run(out["run_id"]).data.params
    assert (params["model.arch"], params["model.layers"]) == ("graph", "2")
    assert params["model.parameters"] == str(width * classes + classes)
    assert not any(k.startswith("model.nodes") for k in params)
    saved = client.download_artifacts(out["run_id"], "model/graph.json", str(tmp_path))
    assert json.loads(Path(saved).read_text())["nodes"][1]["module"] == "fc"
