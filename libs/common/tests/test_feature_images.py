"""The rules of an image dataset's files, shared by the dataset service and ``predict``."""

from __future__ import annotations

import io

import pytest

from peertrain.common.features import (
    NotClassFolders,
    UnreadableImage,
    class_folders,
    is_image_name,
    is_junk,
    open_image,
)

Image = pytest.importorskip("PIL.Image")


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (width, height)).save(out, format="PNG")
    return out.getvalue()


def test_class_folders_with_or_without_one_root_folder():
    assert class_folders(["a/1.png", "b/2.png"]) == ["a", "b"]
    assert class_folders(["r/a/1.png", "r/b/2.png"]) == ["a", "b"]
    with pytest.raises(NotClassFolders, match=r"'1\.png' does not") as caught:
        class_folders(["a/2.png", "1.png"])
    assert caught.value.entry == "1.png"
    with pytest.raises(NotClassFolders, match=r"'r/a/1\.png'"):
        class_folders(["r/a/1.png", "s/b/2.png"])


def test_junk_and_image_names():
    assert is_junk("__MACOSX/a/._x.png") and is_junk("a/.DS_Store") and is_junk(".hidden")
    assert not is_junk("a/x.png")
    assert is_image_name("a/X.JPEG") and is_image_name("x.png") and not is_image_name("x.gif")


def test_open_image_refuses_too_many_pixels_and_bombs_naming_the_file(monkeypatch):
    assert open_image(_png(4, 3), "a/x.png").size == (4, 3)
    with pytest.raises(UnreadableImage, match=r"'a/x\.png' has 4x3 pixels, more than 11"):
        open_image(_png(4, 3), "a/x.png", max_pixels=11)
    with pytest.raises(UnreadableImage, match=r"'y\.png' is not a readable PNG or JPEG") as e:
        open_image(b"GIF89a", "y.png")
    assert e.value.entry == "y.png"
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 5)
    with pytest.raises(UnreadableImage, match=r"'z\.png' is not a readable"):  # Pillow's warning
        open_image(_png(3, 3), "z.png")
    with pytest.raises(UnreadableImage, match=r"'z\.png' is too large an image"):
        open_image(_png(4, 3), "z.png")
