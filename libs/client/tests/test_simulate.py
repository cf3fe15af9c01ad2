"""``peertrain simulate``: no login, no stack; the simulation is imported on use."""

from __future__ import annotations

import importlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from peertrain.client.cli import app
from peertrain.client.cli.simulate import INSTALL_HINT


def _csv(path: Path) -> Path:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=120)
    x = rng.normal(0, 1, size=(120, 3)) + y[:, None] * 3
    lines = ["a,b,c,label"] + [
        f"{r[0]:.4f},{r[1]:.4f},{r[2]:.4f},k{c}" for r, c in zip(x, y, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_simulate_runs_a_job_file_on_a_csv_and_writes_the_platforms_model(tmp_path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "name: t\ndataset_id: ignored\nmodel: {arch: mlp, hidden: [8]}\n"
        "training: {rounds: 2, lr: 0.1, seed: 1}\n"
    )
    out = tmp_path / "model.pt"
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "--config",
            str(config),
            "--data",
            str(_csv(tmp_path / "d.csv")),
            "--label-column",
            "label",
            "--peers",
            "3",
            "--peers-per-round",
            "2",
            "--threads",
            "1",
            "-o",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    assert doc["state"] == "completed" and doc["rounds"] == 2
    assert [r["peers"] for r in doc["per_round"]] == [2, 2]
    final = torch.load(io.BytesIO(out.read_bytes()), weights_only=True)
    assert final["spec"]["arch"] == "mlp" and final["spec"]["hidden"] == [8]
    assert final["state_dict"] and set(final) == {
        "format",
        "spec",
        "feature_spec",
        "architecture",
        "state_dict",
    }


def test_simulate_takes_the_training_settings_from_the_file_and_set(tmp_path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "model: {arch: mlp, hidden: [8]}\n"
        "training: {rounds: 2, lr: 0.1, seed: 1, optimizer: adamw, label_smoothing: 0.1,\n"
        "  lr_schedule: {kind: cosine, min_lr: 0.01}}\n"
    )
    data = str(_csv(tmp_path / "d.csv"))
    base = ["simulate", "--config", str(config), "--data", data, "--peers", "2"]
    sets = ["--set", "training.grad_clip_norm=1.0", "--set", "training.lr_schedule.warmup_rounds=1"]
    result = CliRunner().invoke(app, [*base, "--threads", "1", *sets, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout[result.stdout.index("{") :])["state"] == "completed"
    bad = CliRunner().invoke(app, [*base, "--set", "training.nesterov=true"])
    assert bad.exit_code == 2 and "nesterov needs optimizer sgd" in bad.output


def test_without_the_runtime_simulate_says_how_to_install_it(tmp_path, monkeypatch) -> None:
    real = importlib.import_module

    def missing(name: str, *args: object) -> object:
        if name == "peertrain.sim":
            raise ImportError("No module named 'peertrain.sim'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", missing)
    result = CliRunner().invoke(
        app, ["simulate", "--data", str(tmp_path / "x.csv"), "--peers", "2"]
    )
    assert result.exit_code == 1
    assert INSTALL_HINT in result.output


@pytest.mark.parametrize("bad", ["training: {rounds: 0}\n", "model: {arch: nope}\n"])
def test_a_bad_job_file_is_a_usage_error(tmp_path, bad) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(bad)
    result = CliRunner().invoke(
        app, ["simulate", "--config", str(config), "--data", "x.csv", "--peers", "2"]
    )
    assert result.exit_code == 2


RESIDUAL_MLP = """
import torch
from torch import nn


class ResidualMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(3, 8)
        self.block = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        return self.head(h + self.block(h))
"""


def test_simulate_trains_a_researchers_own_module_as_a_graph(tmp_path: Path) -> None:
    module = tmp_path / "mine.py"
    module.write_text(RESIDUAL_MLP)
    config = tmp_path / "job.yaml"
    config.write_text("training: {rounds: 2, lr: 0.1, seed: 1}\n")
    out = tmp_path / "model.pt"
    args = ["simulate", "--config", str(config), "--data", str(_csv(tmp_path / "d.csv"))]
    args += ["--label-column", "label", "--peers", "2", "--threads", "1"]
    args += ["--model", f"{module}:ResidualMLP", "-o", str(out), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    assert doc["state"] == "completed" and [r["peers"] for r in doc["per_round"]] == [2, 2]
    final = torch.load(io.BytesIO(out.read_bytes()), weights_only=True)
    assert final["spec"]["arch"] == "graph" and final["spec"]["input_shape"] == [3]
    assert [n["op"] for n in final["spec"]["nodes"]] == [
        "linear", "relu", "linear", "relu", "add", "linear"
    ]  # fmt: skip
    # The researcher's own state_dict keys, trained.
    assert set(final["state_dict"]) == {
        f"{layer}.{p}" for layer in ("stem", "block.0", "head") for p in ("weight", "bias")
    }


def test_simulate_starts_from_the_researchers_weights(tmp_path: Path) -> None:
    import peertrain.sim as sim
    from peertrain.common.events.models import model_key
    from peertrain.ml.weights import state_from_bytes

    module = tmp_path / "mine.py"
    module.write_text(RESIDUAL_MLP)
    data = _csv(tmp_path / "d.csv")
    namespace: dict[str, object] = {}
    exec(compile(RESIDUAL_MLP, str(module), "exec"), namespace)  # the researcher's model
    net = namespace["ResidualMLP"]()  # type: ignore[operator]
    weights = tmp_path / "start.pt"
    torch.save(net.state_dict(), weights)
    args = ["simulate", "--data", str(data), "--label-column", "label", "--peers", "2"]
    args += ["--model", f"{module}:ResidualMLP", "--set", "training.rounds=1"]
    result = CliRunner().invoke(app, [*args, "--init-weights", str(weights), "--json"])
    assert result.exit_code == 0, result.output

    # Version 0 is those weights, bit for bit.
    spec = {"model": _graph_of(net), "training": {"rounds": 1}}
    run = sim.run(spec, data, peers=2, label_column="label", init_weights=weights)
    v0 = state_from_bytes(run.blobs.objects[model_key("sim", 0)])
    assert all(torch.equal(v0[k], t) for k, t in net.state_dict().items())

    bad = tmp_path / "bad.pt"
    torch.save({"stem.weight": torch.zeros(8, 3)}, bad)
    refused = CliRunner().invoke(app, [*args, "--init-weights", str(bad)])
    assert refused.exit_code != 0 and "not the model's tensors" in refused.output


def _graph_of(net: torch.nn.Module) -> dict[str, object]:
    from peertrain.ml.graph import to_graph

    return to_graph(net, torch.zeros(2, 3)).model_dump(mode="json")


def test_simulate_reads_the_missing_values_it_is_given(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    rows = [
        f"{'unknown' if i % 7 == 0 else i % 5},{('p', 'q', '-')[i % 3]},{i % 2}" for i in range(60)
    ]
    data.write_text("n,c,label\n" + "\n".join(rows) + "\n")
    out = tmp_path / "model.pt"
    args = ["simulate", "--data", str(data), "--peers", "2", "--threads", "1"]
    args += ["--set", "training.rounds=1", "--missing-values", "unknown", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    final = torch.load(io.BytesIO(out.read_bytes()), weights_only=True)
    features = final["feature_spec"]
    assert features["missing_tokens"] == ["", "unknown"]
    assert [c["type"] for c in features["columns"]] == ["numeric", "categorical"]
    assert features["columns"][1]["categories"] == ["-", "p", "q"]
