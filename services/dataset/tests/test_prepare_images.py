"""Image folders in a ZIP: classes, size, channels and normalisation."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image

from peertrain.common.features import encode_pixels
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
    assert spec.image.stored == "uint8" and spec.image.fit == "crop"
    x = np.load(result.train_x)
    assert x.shape == (18, 1, 6, 8) and x.dtype == np.uint8  # pixels: 4x smaller
    with np.load(result.holdout) as held:
        assert held["X"].dtype == np.uint8 and held["X"].shape == (2, 1, 6, 8)
    # standardised with the training part's statistics, as readers standardise them
    encoded = encode_pixels(x, spec.image.model_dump())
    assert abs(float(encoded.mean())) < 1e-4
    assert result.preview["rows"][0][0] == "digits/cat/0.png"


def _halves(size: tuple[int, int], left: int, right: int) -> bytes:
    """A grey image whose left third is ``left``, its middle ``128`` and right third ``right``."""
    w, h = size
    pixels = np.full((h, w), 128, dtype=np.uint8)
    pixels[:, : w // 3] = left
    pixels[:, w - w // 3 :] = right
    buffer = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("fit", ["crop", "stretch"])
def test_images_of_another_shape_are_cropped_to_keep_their_aspect_or_stretched(
    prepare: Callable, zip_of: Callable, fit: str
) -> None:
    entries = {f"a/{i}.png": _halves((30, 10), 0, 255) for i in range(5)}
    entries.update({f"b/{i}.png": _halves((30, 10), 255, 0) for i in range(5)})
    result = prepare(zip_of(entries), image_size=(10, 10), image_fit=fit)
    x = np.load(result.train_x)
    assert result.feature_spec.image is not None and result.feature_spec.image.fit == fit
    assert x.shape[1:] == (1, 10, 10)
    if fit == "crop":  # the centre square: the middle third, grey
        assert int(x[:, :, :, 1:-1].min()) == int(x[:, :, :, 1:-1].max()) == 128
    else:  # squeezed: both dark and light stripes remain
        assert int(x.min()) == 0 and int(x.max()) == 255


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


def test_a_csv_of_file_names_and_labels_labels_the_images(
    prepare: Callable, zip_of: Callable
) -> None:
    entries: dict[str, bytes] = {}
    lines = ["id;file;species;notes"]
    for i in range(12):
        entries[f"set/img/{i:02}.png"] = png((6, 6), value=20 * i)
        kind = "cat" if i % 2 else "dog"
        lines.append(f"{i};img/{i:02}.png;{kind};x")  # paths from the CSV's folder
    entries["set/img/extra.png"] = png((6, 6))  # not named: left out
    entries["set/labels.csv"] = ("\n".join(lines) + "\n").encode()
    zipped = zip_of(entries)
    with pytest.raises(errors.MissingLabelColumn, match="say which is the label"):
        prepare(zipped)
    result = prepare(zipped, label_column="species")
    assert result.kind == "images" and result.classes == ("cat", "dog")
    assert result.rows == 12 and result.class_counts == (6, 6)
    assert result.preview["unlisted_images"] == 1
    assert result.preview["rows"][0][:2] == ["set/img/00.png", "dog"]


@pytest.mark.parametrize(
    ("csv_text", "says"),
    [
        ("file,label\na/1.png,x\na/9.png,y\n", "not an image of the archive"),
        ("file,label\na/1.png,x\na/1.png,y\n", "again"),
        ("file,label\nnope.png,x\n", "no column"),
        ("file,label\na/1.png,\n", "no label"),
    ],
)
def test_a_labels_csv_that_does_not_fit_the_images_is_refused(
    prepare: Callable, zip_of: Callable, csv_text: str, says: str
) -> None:
    entries = {"a/1.png": png((4, 4)), "a/2.png": png((4, 4)), "labels.csv": csv_text.encode()}
    with pytest.raises(errors.InvalidDataset, match=says):
        prepare(zip_of(entries))


def test_images_with_two_csvs_are_refused(prepare: Callable, zip_of: Callable) -> None:
    entries = {"a/1.png": png((4, 4)), "x.csv": b"f,l\na/1.png,1\n", "y.csv": b"f,l\n"}
    with pytest.raises(errors.BadArchiveEntry, match="unsupported entry"):
        prepare(zip_of(entries))
