"""Listing and decoding a folder or ZIP of raw images for a downloaded model."""

from __future__ import annotations

import io
import zipfile

import pytest

from peertrain.ml.export import list_images

Image = pytest.importorskip("PIL.Image")

GREY_4x4 = {"mode": "L", "channels": 1, "height": 4, "width": 4}


def _png(level: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (6, 3), color=level).save(out, format="PNG")
    return out.getvalue()


def _zip(path, entries):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def test_a_zip_skips_junk_counts_other_files_and_decodes_in_name_order_by_batches(tmp_path):
    entries = {
        f"r/{c}/{i}.png": _png(10 * i + (100 if c == "b" else 0)) for c in "ba" for i in range(3)
    }
    junk = {"__MACOSX/r/a/._0.png": b"x", "r/a/.x.png": b"x", "r/readme.md": b"x"}
    files = list_images(_zip(tmp_path / "d.zip", {**entries, **junk}), classes=("a", "b"))
    assert files.names == tuple(sorted(entries)) and files.ignored == ("r/readme.md",)
    assert files.labels == ("a",) * 3 + ("b",) * 3 and files.is_zip
    assert "not images" in (files.holdout_refusal or "")
    blocks = list(files.pixels(GREY_4x4, batch=4))
    assert [b.shape for b in blocks] == [(4, 1, 4, 4), (2, 1, 4, 4)]
    assert [int(p[0, 0, 0]) for b in blocks for p in b] == [0, 10, 20, 100, 110, 120]


def test_one_folder_that_is_no_class_holds_unlabelled_images(tmp_path):
    entries = {"shots/x.png": _png(1), "shots/y.png": _png(2)}
    unlabelled = list_images(_zip(tmp_path / "u.zip", entries), classes=("a", "b"))
    assert unlabelled.labels is None and "no class folders" in (unlabelled.holdout_refusal or "")
    one_class = list_images(tmp_path / "u.zip", classes=("shots", "b"))
    assert one_class.labels == ("shots", "shots") and one_class.holdout_refusal is None
    with pytest.raises(ValueError, match=r"holds no \.png or \.jpg images"):
        list_images(_zip(tmp_path / "e.zip", {"a.txt": b"x"}))
