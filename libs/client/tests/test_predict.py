"""``peertrain predict`` and ``peertrain convert`` on a model the platform's code trained.

``peertrain simulate`` runs a job through the platform's own preparation, training,
aggregation and export; predict on the same CSV with ``--holdout`` must print the
accuracy the job reported for its last round.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from peertrain.client.cli import app


def _csv(path: Path, rows: int = 160) -> Path:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=rows)
    x = rng.normal(0, 1, size=(rows, 2)) + y[:, None]
    colour = np.array(["red", "green", "blue"])[(y + (rng.random(rows) < 0.2)) % 3]
    lines = ["a,b,colour,label"] + [
        f"{r[0]:.4f},{'?' if i % 11 == 0 else f'{r[1]:.4f}'},{c},kind {k}"
        for i, (r, c, k) in enumerate(zip(x, colour, y, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("predict")
    config = tmp / "job.yaml"
    config.write_text(
        "name: t\ndataset_id: ignored\nmodel: {arch: mlp, hidden: [8]}\n"
        "training: {rounds: 3, lr: 0.1, seed: 1}\n"
    )
    data, model = _csv(tmp / "d.csv"), tmp / "model.pt"
    args = ["simulate", "--config", str(config), "--data", str(data), "--label-column", "label"]
    result = CliRunner().invoke(app, [*args, "--peers", "2", "-o", str(model), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    return data, model, doc["per_round"][-1]["accuracy"]


def test_predict_on_the_holdout_prints_the_jobs_accuracy(trained, tmp_path):
    data, model, reported = trained
    out = tmp_path / "p.csv"
    args = ["predict", str(data), "--model", str(model), "--holdout", "-o", str(out), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["holdout"] and summary["accuracy"] == pytest.approx(reported, abs=1e-9)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == summary["rows"] and 0 < len(rows) < 160
    assert {r["prediction"] for r in rows} <= {"kind 0", "kind 1", "kind 2"}
    assert all(r["label"].startswith("kind ") for r in rows)


def test_predict_without_labels_writes_class_names(trained, tmp_path):
    data, model, _ = trained
    unlabelled = tmp_path / "u.csv"
    lines = data.read_text().splitlines()
    unlabelled.write_text("\n".join(",".join(line.split(",")[:3]) for line in lines[:6]) + "\n")
    result = CliRunner().invoke(app, ["predict", str(unlabelled), "--model", str(model)])
    assert result.exit_code == 0, result.output
    got = list(csv.reader(result.stdout.splitlines()))
    assert got[0] == ["row", "prediction"] and [r[0] for r in got[1:]] == list("12345")
    assert "accuracy" not in result.output
    result = CliRunner().invoke(app, ["predict", str(unlabelled), "-m", str(model), "--holdout"])
    assert result.exit_code == 1 and "needs the label column 'label'" in result.output


def test_predict_refuses_a_model_without_preprocessing_clearly(tmp_path):
    old = tmp_path / "old.pt"
    state = {"linear.weight": torch.zeros(2, 3), "linear.bias": torch.zeros(2)}
    features = {"input_size": 3, "num_classes": 2}
    torch.save({"spec": {"arch": "logreg"}, "feature_spec": features, "state_dict": state}, old)
    data = _csv(tmp_path / "d.csv")
    result = CliRunner().invoke(app, ["predict", str(data), "--model", str(old)])
    assert result.exit_code == 1 and "first format" in result.output


def test_convert_to_onnx_runs_in_onnxruntime(trained, tmp_path):
    onnxruntime = pytest.importorskip("onnxruntime")
    from peertrain.ml.export import load

    data, model, _ = trained
    dest = tmp_path / "m.onnx"
    result = CliRunner().invoke(app, ["convert", str(model), "--format", "onnx", "-o", str(dest)])
    assert result.exit_code == 0, result.output
    net, prep = load(model)
    table = prep.read(data)
    _, index = onnxruntime.InferenceSession(str(dest)).run(None, {"raw": prep.raw_matrix(table)})
    with torch.inference_mode():
        assert np.array_equal(index, net(prep(table)).argmax(dim=1).numpy())


def test_labels_that_never_match_a_class_are_reported_not_scored(trained, tmp_path):
    data, model, _ = trained
    dotted = tmp_path / "dotted.csv"
    lines = data.read_text().splitlines()
    dotted.write_text("\n".join([lines[0], *(f"{line}." for line in lines[1:11])]) + "\n")
    result = CliRunner().invoke(app, ["predict", str(dotted), "-m", str(model), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stderr.strip().splitlines()[-1])
    assert summary["unknown_labels"] == 10 and "accuracy" not in summary
    assert summary["unknown_examples"][0] in {"kind 0.", "kind 1.", "kind 2."}
    assert "no label is one of the model's classes (e.g. 'kind" in result.stderr
    assert "the model's: 'kind 0', 'kind 1', 'kind 2'" in result.stderr
    result = CliRunner().invoke(app, ["predict", str(dotted), "-m", str(model), "--holdout"])
    assert result.exit_code == 1 and "10 labels are not among the model's classes" in result.output
