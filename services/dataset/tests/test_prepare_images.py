"""Image folders in a ZIP: classes, size, channels and normalisation."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image

from peertrain.dataset.domain import errors


def png(size: tuple[int, int], mode: str = "L", value: int = 128, fmt: str = "PNG") -> bytes:
    colour: int | tuple[int, int, int] = value if mode == "L" else (value, 0, 255 - value)
    buffer = io.BytesIO()
    Image.new(mode, size, colour).save(buffer, format=fmt)
    return buffer.getvalue()


def test_image_folders_become_a_dataset(prepare: Callable, zip_of: Callable) -> None:
    entries = {}
    for i in range(10):
        entries[f"digits/cat/{i}.png"] = png((8, 6), value=20 * i)
        entries[f"digits/dog/{i}.jpg"] = png((8, 6) if i else (16, 12), value=10 * i, fmt="JPEG")
    result = prepare(zip_of(entries), name="pets.zip")
    assert result.kind == "images"
    assert result.classes == ("cat", "dog")
    assert result.class_counts == (10, 10)
    spec = result.feature_spec
    assert spec.input_shape == (1, 6, 8)  # grey, most common size (w=8, h=6)
    assert spec.image is not None and spec.image.mode == "L"
    x = np.load(result.train_x)
    assert x.shape == (18, 1, 6, 8) and x.dtype == np.float32
    assert abs(float(x.mean())) < 1e-4  # standardised with training statistics
    assert result.preview["rows"][0][0] == "digits/cat/0.png"


def test_any_colour_image_makes_rgb(prepare: Callable, zip_of: Callable) -> None:
    entries = {f"a/{i}.png": png((4, 4)) for i in range(5)}
    entries.update({f"b/{i}.png": png((4, 4), mode="RGB") for i in range(5)})
    result = prepare(zip_of(entries), image_size=(3, 5))
    assert result.feature_spec.input_shape == (3, 5, 3)
    assert np.load(result.train_x).shape[1:] == (3, 5, 3)


def test_image_errors(prepare: Callable, zip_of: Callable) -> None:
    with pytest.raises(errors.SingleClass):
        prepare(zip_of({f"only/{i}.png": png((4, 4)) for i in range(4)}))
    with pytest.raises(errors.BadArchiveEntry, match="not a readable"):
        prepare(zip_of({"a/1.png": b"not an image", "b/1.png": png((4, 4))}))
    with pytest.raises(errors.InvalidDataset, match="folder per class"):
        prepare(zip_of({"1.png": png((4, 4)), "b/1.png": png((4, 4))}))
