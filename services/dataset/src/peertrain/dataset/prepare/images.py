"""Image folders in a ZIP: ``<class>/<file>.png|jpg`` (optionally under one root folder).

Two read-throughs of the archive: the first reads only image headers (format, size,
mode) and decides the target size (the user's, else the most common one) and the
channels (grey when every image is grey, else RGB); the second decodes, converts and
resizes (or resizes and centre-crops, ``image_fit``) every image into a uint8 scratch
file. Per-channel statistics come from the training part; the training data keeps the
uint8 pixels (``ImageEncoding.stored``), which readers turn into
``(pixel / 255 - mean[c]) / std[c]`` batch by batch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from peertrain.common.events.datasets import (
    ColumnSchema,
    FeatureSpec,
    HoldoutRule,
    ImageEncoding,
)
from peertrain.common.features import (
    MAX_IMAGE_BYTES,
    NotClassFolders,
    UnreadableImage,
    class_folders,
    open_image,
    to_pixels,
)
from peertrain.dataset.domain.errors import (
    BadArchiveEntry,
    InvalidDataset,
    SingleClass,
    TooManyClasses,
    TooManyColumns,
)
from peertrain.dataset.domain.holdout import stratified_holdout
from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.ingest.archive import ArchiveEntry
from peertrain.dataset.ingest.limits import InflateBudget
from peertrain.dataset.ingest.upload import UploadedFile

from .columns import sort_categories
from .image_labels import labels_from_csv
from .options import PrepareOptions
from .result import PreparedDataset
from .split import write_split

__all__ = ["prepare_images"]

_GREY_MODES = frozenset({"1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "F"})
_MAX_ENTRY_BYTES = MAX_IMAGE_BYTES
_BLOCK_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class _Image:
    entry: ArchiveEntry
    label: str
    size: tuple[int, int]
    grey: bool


def _class_of(names: list[str]) -> list[str]:
    """The class folder of every entry (the rule predict applies again)."""
    try:
        return class_folders(names)
    except NotClassFolders as exc:
        raise InvalidDataset(str(exc), entry=exc.entry) from None


def _read_entry(upload: UploadedFile, entry: ArchiveEntry, budget: InflateBudget) -> bytes:
    with upload.open_entry(entry, budget) as stream:
        data = stream.read(_MAX_ENTRY_BYTES + 1)
    if len(data) > _MAX_ENTRY_BYTES:
        raise BadArchiveEntry(f"{entry.name!r} is larger than {_MAX_ENTRY_BYTES} bytes")
    return data


def _open_image(data: bytes, entry: ArchiveEntry, limits: Limits) -> Image.Image:
    try:
        image: Image.Image = open_image(data, entry.name, limits.max_image_pixels)
    except UnreadableImage as exc:
        raise BadArchiveEntry(str(exc), entry=entry.name) from None
    return image


def _scan(
    upload: UploadedFile, options: PrepareOptions, limits: Limits
) -> tuple[list[_Image], int]:
    """Every image's header and label; and how many images a labels CSV leaves out."""
    entries = upload.image_entries()
    labels_entry = upload.labels_entry()
    unlisted = 0
    if labels_entry is None:
        labels = _class_of([e.name for e in entries])
    else:
        entries, labels, unlisted = labels_from_csv(
            upload, entries, labels_entry, options.label_column
        )
    budget = upload.budget()
    images: list[_Image] = []
    for entry, label in zip(entries, labels, strict=True):
        image = _open_image(_read_entry(upload, entry, budget), entry, limits)
        images.append(_Image(entry, label, image.size, image.mode in _GREY_MODES))
        image.close()
    return images, unlisted


def _target(images: list[_Image], options: PrepareOptions) -> tuple[int, int]:
    if options.image_size is not None:
        return options.image_size
    sizes = Counter(i.size for i in images)
    return max(sizes, key=lambda s: (sizes[s], -s[0] * s[1], s))


def _decode_all(
    upload: UploadedFile,
    images: list[_Image],
    size: tuple[int, int],
    mode: Literal["L", "RGB"],
    fit: str,
    limits: Limits,
    out_path: Path,
) -> None:
    budget = upload.budget()
    target = {"mode": mode, "width": size[0], "height": size[1], "fit": fit}
    with out_path.open("wb") as out:
        for item in images:
            image = _open_image(_read_entry(upload, item.entry, budget), item.entry, limits)
            try:
                pixels = to_pixels(image, target)
            except (OSError, ValueError, SyntaxError) as exc:
                raise BadArchiveEntry(
                    f"{item.entry.name!r} cannot be decoded ({exc})", entry=item.entry.name
                ) from None
            finally:
                image.close()
            out.write(pixels.tobytes())


def _pixel_blocks(
    path: Path, shape: tuple[int, int, int], rows: int
) -> Iterator[NDArray[np.uint8]]:
    sample = shape[0] * shape[1] * shape[2]
    block_rows = max(1, _BLOCK_BYTES // sample)
    with path.open("rb") as f:
        for start in range(0, rows, block_rows):
            n = min(block_rows, rows - start)
            yield np.fromfile(f, dtype=np.uint8, count=n * sample).reshape((n, *shape))


def _channel_stats(
    path: Path, shape: tuple[int, int, int], train: NDArray[np.bool_]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    sums = np.zeros(shape[0])
    squares = np.zeros(shape[0])
    start = 0
    count = 0
    for block in _pixel_blocks(path, shape, len(train)):
        chosen = block[train[start : start + len(block)]].astype(np.float64) / 255.0
        start += len(block)
        sums += chosen.sum(axis=(0, 2, 3))
        squares += (chosen**2).sum(axis=(0, 2, 3))
        count += len(chosen) * shape[1] * shape[2]
    mean = sums / max(count, 1)
    std = np.sqrt(np.maximum(squares / max(count, 1) - mean**2, 0.0))
    std = np.where(std > 1e-6, std, 1.0)
    return tuple(float(m) for m in mean), tuple(float(s) for s in std)


def prepare_images(
    upload: UploadedFile, scratch: Path, options: PrepareOptions, limits: Limits
) -> PreparedDataset:
    """Validate, decode, split and encode an image archive."""
    images, unlisted = _scan(upload, options, limits)
    classes = sort_categories(sorted({i.label for i in images}))
    if len(classes) > limits.max_classes:
        raise TooManyClasses(
            f"{len(classes)} class folders, more than the limit of {limits.max_classes}",
            max_classes=limits.max_classes,
        )
    if len(classes) < 2:
        raise SingleClass(
            f"all images are in one class folder ({classes[0]!r}): there is nothing to classify",
            column="class",
        )
    width, height = _target(images, options)
    mode: Literal["L", "RGB"] = "L" if all(i.grey for i in images) else "RGB"
    channels = 1 if mode == "L" else 3
    shape = (channels, height, width)
    if channels * height * width > limits.max_image_features:
        raise TooManyColumns(
            f"images of {channels}x{height}x{width} values are over the limit of "
            f"{limits.max_image_features}; pass a smaller image_size",
            features=channels * height * width,
        )
    index = {c: i for i, c in enumerate(classes)}
    labels = np.array([index[i.label] for i in images], dtype=np.int32)
    holdout = stratified_holdout(
        labels, len(classes), options.holdout_fraction, options.holdout_seed
    )
    pixels_path = scratch / "pixels.u8"
    _decode_all(upload, images, (width, height), mode, options.image_fit, limits, pixels_path)
    mean, std = _channel_stats(pixels_path, shape, ~holdout)
    blocks = _pixel_blocks(pixels_path, shape, len(images))
    train_x, train_y, holdout_path = write_split(blocks, labels, holdout, shape, scratch, np.uint8)
    pixels_path.unlink(missing_ok=True)
    spec = FeatureSpec(
        kind="images",
        input_shape=shape,
        input_size=channels * height * width,
        classes=tuple(classes),
        image=ImageEncoding(
            mode=mode,
            channels=channels,
            height=height,
            width=width,
            fit=options.image_fit,
            stored="uint8",
            mean=mean,
            std=std,
        ),
        label_column="class",
        holdout=HoldoutRule(
            fraction=options.holdout_fraction, seed=options.holdout_seed, rows=len(images)
        ),
    )
    counts = np.bincount(labels, minlength=len(classes))
    held = np.bincount(labels[holdout], minlength=len(classes))
    preview = {
        "kind": "images",
        "columns": ["path", "class", "width", "height", "mode"],
        "rows": [
            [i.entry.name, i.label, i.size[0], i.size[1], "L" if i.grey else "RGB"]
            for i in images[: limits.preview_rows]
        ],
        **({"unlisted_images": unlisted} if unlisted else {}),
    }
    return PreparedDataset(
        kind="images",
        rows=len(images),
        train_rows=int((~holdout).sum()),
        holdout_rows=int(holdout.sum()),
        columns=(
            ColumnSchema(name="image", type="image"),
            ColumnSchema(name="class", type="label", distinct=len(classes)),
        ),
        label_column="class",
        classes=tuple(classes),
        class_counts=tuple(int(c) for c in counts),
        holdout_class_counts=tuple(int(c) for c in held),
        feature_spec=spec,
        train_x=train_x,
        train_y=train_y,
        holdout=holdout_path,
        preview=preview,
        holdout_seed=options.holdout_seed,
    )
