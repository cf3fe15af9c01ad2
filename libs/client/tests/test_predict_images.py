"""``peertrain predict`` on a folder or ZIP of raw images, with a model the platform trained.

``peertrain simulate`` prepares a ZIP of ``<class>/<file>.png`` folders with the dataset
service's own code and trains on it; predict on the same ZIP with ``--holdout`` must
find the very images the job held out, so print the accuracy the job reported.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from peertrain.client.cli import app


def _png(level: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = np.clip(rng.normal(level, 25, size=(8, 8)), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(out, format="PNG")
    return out.getvalue()


def _images(per_class: int = 30) -> dict[str, bytes]:
    return {
        f"{name}/{name}-{i:02}.png": _png(level, seed=i + 100 * level)
        for level, name in ((50, "dark"), (200, "light"))
        for i in range(per_class)
    }


def _folder(path: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("predict-images")
    data, model, config = tmp / "shades.zip", tmp / "model.pt", tmp / "job.yaml"
    with zipfile.ZipFile(data, "w") as archive:
        for name, png in _images().items():
            archive.writestr(f"shades/{name}", png)
    config.write_text(
        "name: t\ndataset_id: ignored\nmodel: {arch: mlp, hidden: [8]}\n"
        "training: {rounds: 3, lr: 0.1, seed: 1}\n"
    )
    args = ["simulate", "--config", str(config), "--data", str(data), "--peers", "2"]
    result = CliRunner().invoke(app, [*args, "-o", str(model), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    return data, model, doc["per_round"][-1]["accuracy"]


def _predict(*args: str):
    return CliRunner().invoke(app, ["predict", *args])


def test_holdout_of_the_uploaded_zip_gives_the_jobs_accuracy(trained, tmp_path):
    data, model, reported = trained
    out = tmp_path / "p.csv"
    result = _predict(str(data), "-m", str(model), "--holdout", "-o", str(out), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["holdout"] and summary["accuracy"] == pytest.approx(reported, abs=1e-9)
    assert summary["unknown_labels"] == 0 and summary["ignored_files"] == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == summary["rows"] == 6  # 10% of each class of 30
    assert all(r["file"].startswith(f"shades/{r['label']}/") for r in rows)
    assert {r["label"] for r in rows} == {"dark", "light"}


def test_a_folder_of_class_folders_is_scored_and_other_files_are_counted(trained, tmp_path):
    _, model, _ = trained
    files = {**_images(6), "notes.txt": b"x", ".DS_Store": b"x", "__MACOSX/dark/._a.png": b"x"}
    folder = _folder(tmp_path / "shades", files)
    result = _predict(str(folder), "-m", str(model))
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(result.stdout.splitlines()))
    assert rows[0] == ["file", "prediction", "label"] and len(rows) == 13
    assert rows[1][0] == "dark/dark-00.png" and rows[-1][0] == "light/light-05.png"
    assert "accuracy 1.0000 on 12 rows" in result.stderr
    assert "ignored 1 files" in result.stderr and "'notes.txt'" in result.stderr
    refused = _predict(str(folder), "-m", str(model), "--holdout")
    assert refused.exit_code == 1 and "only in the very .zip that was uploaded" in refused.output


def test_files_in_no_class_folder_get_predictions_only(trained, tmp_path):
    _, model, _ = trained
    flat = {name.split("/")[1]: png for name, png in _images(3).items()}
    folder = _folder(tmp_path / "flat", flat)
    zipped = tmp_path / "flat.zip"
    with zipfile.ZipFile(zipped, "w") as archive:  # one folder, not a class of the model
        for name, png in flat.items():
            archive.writestr(f"unsorted/{name}", png)
    for data, first in ((folder, "dark-00.png"), (zipped, "unsorted/dark-00.png")):
        out = tmp_path / "p.csv"
        result = _predict(str(data), "-m", str(model), "-o", str(out), "--json")
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary == {"rows": 6, "holdout": False, "ignored_files": 0}
        rows = list(csv.reader(out.open()))
        assert rows[0] == ["file", "prediction"] and rows[1][0] == first
        assert [r[1] for r in rows[1:]] == ["dark"] * 3 + ["light"] * 3


def test_labels_the_model_lacks_are_counted_not_scored(trained, tmp_path):
    _, model, _ = trained
    files = {**_images(2), "grey/g.png": _png(120, 1), "Dark/d.png": _png(50, 2)}
    folder = _folder(tmp_path / "mixed", files)
    result = _predict(str(folder), "-m", str(model), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stderr.strip().splitlines()[-1])
    assert summary["unknown_labels"] == 2 and summary["unknown_examples"] == ["Dark", "grey"]
    assert summary["rows"] == 6 and summary["scored"] == 4 and summary["accuracy"] == 1.0
    assert "2 of 6 labels are not among the model's classes" in result.stderr
    only_unknown = _folder(tmp_path / "other", {"a/x.png": _png(50, 3), "b/y.png": _png(9, 4)})
    result = _predict(str(only_unknown), "-m", str(model))
    assert result.exit_code == 0, result.output
    assert "no label is one of the model's classes (e.g. 'a', 'b'; the model's:" in result.stderr
    assert "accuracy" not in result.stderr.replace("no accuracy", "")


def test_an_unreadable_image_stops_it_named(trained, tmp_path):
    _, model, _ = trained
    folder = _folder(tmp_path / "bad", {**_images(2), "light/broken.png": b"not a png"})
    out = tmp_path / "p.csv"
    result = _predict(str(folder), "-m", str(model), "-o", str(out))
    assert result.exit_code == 1
    assert "'light/broken.png' is not a readable PNG or JPEG image" in result.output
    assert not out.exists()


def test_mixed_depths_and_non_image_data_are_refused_clearly(trained, tmp_path):
    _, model, _ = trained
    folder = _folder(tmp_path / "odd", {"a.png": _png(50, 1), "dark/b.png": _png(50, 2)})
    result = _predict(str(folder), "-m", str(model))
    assert result.exit_code == 1 and "one folder per class" in result.output
    text = tmp_path / "x.csv"
    text.write_text("a,b\n1,2\n")
    result = _predict(str(text), "-m", str(model))
    assert result.exit_code == 1 and "neither a folder nor a .zip of images" in result.output


def test_images_read_again_encode_as_the_dataset_service_encoded_them(tmp_path):
    """Any sizes, modes and formats: the holdout found again, pixel for pixel."""
    from peertrain.ml.export import Preprocessor
    from peertrain.sim.data import load_data

    rng = np.random.default_rng(5)
    data = tmp_path / "mixed.zip"
    with zipfile.ZipFile(data, "w") as archive:
        for i in range(24):
            size, mode = [((8, 8), "L"), ((10, 6), "RGB"), ((7, 9), "RGB")][i % 3]
            shape = (size[1], size[0]) + ((3,) if mode == "RGB" else ())
            picture = Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode=mode)
            out, kind = io.BytesIO(), "JPEG" if i % 4 == 0 else "PNG"
            picture.save(out, format=kind)
            archive.writestr(f"set/{'ab'[i % 2]}/{i:02}.{kind.lower()}", out.getvalue())
    prepared = load_data(data, holdout_fraction=0.25, dataset_id="ds-9")
    prep = Preprocessor(prepared.feature_spec.model_dump(mode="json"))
    files = prep.read_images(data)
    assert files.holdout_refusal is None and files.labels is not None
    mask = prep.holdout_mask(prep.labels(files.labels))
    for part, x in ((files.subset(mask), prepared.holdout_x), (files.subset(~mask), None)):
        got = np.concatenate([prep(p).numpy() for p in part.pixels(prep.image, batch=5)])
        pixels = prepared.train_x if x is None else x  # kept as pixels: encode them too
        assert np.array_equal(got, prep(pixels).numpy())
    assert np.array_equal(prep.labels(files.subset(mask).labels), prepared.holdout_y)
