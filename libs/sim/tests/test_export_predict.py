"""A downloaded model predicts on raw rows as it was trained and evaluated.

The dataset service's own preparation (:func:`peertrain.sim.data.load_data`) encodes a
small mixed CSV; the exported model's preprocessing must give, row for row, the same
features, find the same holdout rows, and so the same holdout accuracy; in a process
that has only torch, numpy and the loader's files; and as ONNX through onnxruntime.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from peertrain.ml.export import ExportError, load, onnx_bytes
from peertrain.ml.export.write import final_pt_bytes, save_final
from peertrain.ml.training import evaluate
from peertrain.ml.zoo import build_model
from peertrain.sim.data import load_data

SPEC = {"arch": "mlp", "hidden": [8]}


def mixed_csv(path: Path, rows: int = 240) -> None:
    """Numbers (some missing), booleans, categories (some missing), an empty column."""
    rng = np.random.default_rng(3)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", newline="") as f:
        out = csv.writer(f, delimiter=";")
        out.writerow(["size", "wet", "colour", "nothing", "kind"])
        for i in range(rows):
            size = rng.normal(10, 3)
            colour = ["red", "green", "blue"][i % 3]
            kind = "eel" if colour == "blue" else ("dog" if size > 10 else "cat")
            out.writerow(
                [
                    "?" if i % 17 == 0 else f"{size:.3f}",
                    "yes" if i % 2 else "No",
                    "" if i % 23 == 0 else colour,
                    "",
                    kind,
                ]
            )


def trained(data) -> torch.nn.Module:
    torch.manual_seed(0)
    model = build_model(SPEC, data.feature_spec, seed=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    x, y = torch.from_numpy(data.train_x), torch.from_numpy(data.train_y).long()
    for _ in range(40):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    raw = folder / "animals.csv.gz"
    mixed_csv(raw)
    data = load_data(raw, label_column="kind", holdout_fraction=0.25, dataset_id="ds-1")
    model = trained(data)
    pt, st = save_final(folder, SPEC, data.feature_spec, model.state_dict())
    reported = evaluate(model, torch.from_numpy(data.holdout_x), torch.from_numpy(data.holdout_y))
    return raw, data, model, pt, st, reported["accuracy"]


def test_raw_rows_encode_as_the_dataset_service_encoded_them(job):
    raw, data, _, pt, _, _ = job
    model, prep = load(pt)
    table = prep.read(raw)
    x = prep(table).numpy()
    labels = prep.labels(table["kind"])
    mask = prep.holdout_mask(labels)
    assert mask.sum() == len(data.holdout_y)
    assert np.array_equal(x[mask], data.holdout_x)
    assert np.array_equal(x[~mask], data.train_x)
    assert np.array_equal(labels[mask], data.holdout_y)
    assert prep.classes == ("cat", "dog", "eel") and prep.columns == ("size", "wet", "colour")
    assert not model.training


def test_holdout_accuracy_matches_the_evaluation(job):
    raw, _, zoo_model, pt, st, reported = job
    for path in (pt, st):
        model, prep = load(path)
        table = prep.read(raw)
        labels = prep.labels(table["kind"])
        mask = prep.holdout_mask(labels)
        with torch.inference_mode():
            predicted = model(prep(table)).argmax(dim=1).numpy()
        accuracy = float((predicted[mask] == labels[mask]).mean())
        assert accuracy == pytest.approx(reported, abs=1e-9)
        x = prep(table)
        assert torch.equal(model(x), zoo_model(x))


def test_unseen_and_missing_values_do_not_break_prediction(job):
    _, _, _, pt, _, _ = job
    model, prep = load(pt)
    x = prep([{"size": "NA", "wet": "TRUE", "colour": "purple"}, {"size": "3", "colour": ""}])
    assert x.shape == (2, prep.input_shape[0]) and torch.isfinite(model(x)).all()
    with pytest.raises(ValueError, match="'size' is numeric"):
        prep({"size": ["big"], "wet": ["yes"], "colour": ["red"]})
    with pytest.raises(ExportError, match="no column 'colour'"):
        prep({"size": ["1"], "wet": ["yes"]})


def test_first_format_exports_give_a_clear_error(tmp_path):
    features = {"input_size": 3, "num_classes": 2}
    state = build_model({"arch": "logreg"}, features).state_dict()
    old = {"spec": {"arch": "logreg"}, "feature_spec": features, "state_dict": state}
    torch.save(old, tmp_path / "old.pt")
    with pytest.raises(ExportError, match="first format"):
        load(tmp_path / "old.pt")
    _, prep = load(final_pt_bytes({"arch": "logreg"}, features, state))
    with pytest.raises(ExportError, match="records no preprocessing"):
        prep({"a": ["1"]})


LOADER = [
    "ml/__init__.py",
    "ml/export/images.py",
    "ml/export/load.py",
    "ml/export/plain.py",
    "ml/export/tables.py",
]


def test_load_needs_only_torch_numpy_and_its_own_files(job, tmp_path):
    """In ``python -I -S`` with the loader's files copied beside torch and numpy only."""
    raw, _, _, pt, _, reported = job
    src = Path(__file__).resolve().parents[2]  # libs/
    root = tmp_path / "site" / "peertrain"
    copies = {
        **{f"ml/{p.split('/', 1)[1]}": src / "ml/src/peertrain" / p for p in LOADER},
        "common/__init__.py": src / "common/src/peertrain/common/__init__.py",
    }
    for part in ("__init__.py", "encode.py", "holdout.py", "images.py", "missing.py"):
        copies[f"common/features/{part}"] = src / f"common/src/peertrain/common/features/{part}"
    for rel, origin in copies.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(origin, root / rel)
    # The package's __init__ also offers the writer and ONNX: a bare install needs only load.
    (root / "ml/export/__init__.py").write_text("from .load import load\n")
    code = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = [{str(tmp_path / "site")!r}, {sysconfig.get_paths()["purelib"]!r}]
        import torch
        from peertrain.ml.export import load
        model, prep = load({str(pt)!r})
        table = prep.read({str(raw)!r})
        labels = prep.labels(table["kind"])
        mask = prep.holdout_mask(labels)
        hits = (model(prep(table)).argmax(1).numpy() == labels)[mask]
        peertrain = sorted(m for m in sys.modules if m.startswith("peertrain"))
        others = sorted(m for m in ("pydantic", "fastapi", "pyarrow", "safetensors", "PIL")
                        if m in sys.modules)
        print(json.dumps({{"accuracy": float(hits.mean()), "peertrain": peertrain,
                          "others": others}}))
        """
    ).replace("import sys\n", "import json, sys\n", 1)
    env = {"PATH": os.environ.get("PATH", "")}
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result = json.loads(out.stdout)
    assert result["accuracy"] == pytest.approx(reported, abs=1e-9)
    assert result["others"] == []
    assert all(
        m.startswith(("peertrain.ml.export", "peertrain.common.features"))
        or m in ("peertrain", "peertrain.ml", "peertrain.common")
        for m in result["peertrain"]
    ), result["peertrain"]


def test_onnx_with_preprocessing_matches_torch(job):
    onnxruntime = pytest.importorskip("onnxruntime")
    raw, _, _, pt, _, _ = job
    model, prep = load(pt)
    table = prep.read(raw)
    session = onnxruntime.InferenceSession(onnx_bytes(pt))
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["peertrain.classes"]) == ["cat", "dog", "eel"]
    logits, index = session.run(None, {"raw": prep.raw_matrix(table)})
    with torch.inference_mode():
        expected = model(prep(table)).numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    assert np.array_equal(index, expected.argmax(axis=1))


class _Tabular(torch.nn.Module):
    """A researcher's own network for the rows: BatchNorm, a skip connection, dropout."""

    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(width, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.mid = torch.nn.Linear(16, 16)
        self.drop = torch.nn.Dropout(0.1)
        self.out = torch.nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn(self.inp(x)))
        return self.out(self.drop(h + torch.relu(self.mid(h))))


def test_a_graph_models_export_loads_predicts_and_converts_to_onnx(job, tmp_path):
    from peertrain.ml.graph import to_graph

    _, data, _, _, _, _ = job
    width = data.train_x.shape[1]
    torch.manual_seed(0)
    module = _Tabular(width, 3)
    spec = to_graph(module, torch.zeros(2, width)).model_dump(mode="json")
    x = torch.from_numpy(data.train_x)
    module.train()
    module(x)  # BatchNorm statistics that are not the initial ones
    module.eval()
    pt = tmp_path / "final.pt"
    pt.write_bytes(final_pt_bytes(spec, data.feature_spec, module.state_dict()))
    model, prep = load(pt)  # the graph, rebuilt with the module's weights, in eval mode
    with torch.inference_mode():
        assert torch.equal(model(x), module(x))
    onnxruntime = pytest.importorskip("onnxruntime")
    session = onnxruntime.InferenceSession(onnx_bytes(pt))
    raw = job[0]
    table = prep.read(raw)
    logits, _ = session.run(None, {"raw": prep.raw_matrix(table)})
    with torch.inference_mode():
        expected = model(prep(table)).numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)


def people_csv(path: Path, rows: int = 300) -> None:
    """A numeric column with 5% ``n/a`` and a few stray words, as people write tables."""
    rng = np.random.default_rng(5)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["age", "city", "buys"])
        for i in range(rows):
            age = rng.normal(40, 12)
            cell = "n/a" if i % 20 == 0 else ("unknown" if i % 50 == 3 else f"{age:.1f}")
            city = ["Oslo", "Lima", "NULL"][i % 3]
            out.writerow([cell, city, "yes" if age > 40 else "no"])


def test_a_model_from_a_table_with_n_a_predicts_those_rows_as_it_trained(tmp_path):
    raw = tmp_path / "people.csv"
    people_csv(raw)
    data = load_data(raw, holdout_fraction=0.2, dataset_id="ds-na")
    spec = data.feature_spec
    assert spec.input_shape == (4,)  # age; city one-hot (Lima, Oslo) + missing
    assert spec.missing_match == "casefold" and "N/A" in spec.missing_tokens
    assert spec.columns[0].non_numbers_missing
    assert any("'unknown'" in note for note in data.notes)
    model = trained(data)
    pt, _ = save_final(tmp_path, SPEC, spec, model.state_dict())
    loaded, prep = load(pt)
    table = prep.read(raw)
    x = prep(table).numpy()
    mask = prep.holdout_mask(prep.labels(table["buys"]))
    assert np.array_equal(x[~mask], data.train_x) and np.array_equal(x[mask], data.holdout_x)
    # A new row with "n/a" (any case) or a stray word reads as the training rows did.
    row = int(np.flatnonzero(np.array(table["age"]) == "n/a")[0])
    rows = [{"age": a, "city": c} for a, c in (("N/A", "Oslo"), ("unknown", "null"))]
    got = prep(rows).numpy()
    assert got[:, 0].tolist() == [x[row, 0]] * 2  # the training part's median, standardised
    assert got[1, 1:].tolist() == [0.0, 0.0, 1.0]
    with torch.inference_mode():
        again = loaded(prep([{"age": "n/a", "city": table["city"][row]}]))
        assert torch.equal(again, loaded(torch.from_numpy(x[row : row + 1])))
    onnxruntime = pytest.importorskip("onnxruntime")
    session = onnxruntime.InferenceSession(onnx_bytes(pt))
    logits, _ = session.run(None, {"raw": prep.raw_matrix(table)})
    with torch.inference_mode():
        np.testing.assert_allclose(logits, loaded(prep(table)).numpy(), rtol=1e-5, atol=1e-5)
