"""Reading raw images for a downloaded model: a folder or a ZIP, a batch at a time.

The files count, are skipped and are refused by the dataset service's own rules
(:mod:`peertrain.common.features.images`): PNG and JPEG by name, hidden files and
``__MACOSX`` skipped, Pillow's decompression-bomb check and the same size limits. The
layout is ``<class>/<file>`` or ``<root>/<class>/<file>`` (the folder is the label), or
files with no class folder (``<file>``, or ``<folder>/<file>`` where the folder is not one
of the model's classes): no labels.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from peertrain.common.features import (
    MAX_IMAGE_BYTES,
    NotClassFolders,
    UnreadableImage,
    class_folders,
    is_image_name,
    is_junk,
    open_image,
    to_pixels,
)

__all__ = ["ImageFiles", "list_images"]

_BATCH = 256
_BLOCK_BYTES = 16 * 1024 * 1024  # uint8 pixels of one block: 64 MiB once encoded as floats


@dataclass(frozen=True)
class ImageFiles:
    """The images of a folder or ZIP, in name order (as the dataset service orders them).

    Attributes
    ----------
    source
        The folder or ZIP.
    names
        Each image's ``/``-separated path inside ``source``, sorted.
    labels
        Each image's class folder; ``None`` when the files sit in no class folders.
    ignored
        Other files (not ``.png``/``.jpg``/``.jpeg``; hidden files not counted).
    is_zip
        Whether ``source`` is a ZIP (else a folder).
    """

    source: Path
    names: tuple[str, ...]
    labels: tuple[str, ...] | None
    ignored: tuple[str, ...]
    is_zip: bool

    def __len__(self) -> int:
        return len(self.names)

    @property
    def holdout_refusal(self) -> str | None:
        """Why the job's holdout cannot be found exactly in these files (``None``: it can).

        Only the uploaded ZIP itself lists the same entries in the same order as the
        dataset service did; a folder's names cannot be checked against the upload.
        """
        if not self.is_zip:
            return "the holdout is found only in the very .zip that was uploaded, not a folder"
        if self.labels is None:
            return "the images are in no class folders, so this is not the uploaded .zip"
        if self.ignored:
            return (
                f"{len(self.ignored)} files are not images (e.g. {self.ignored[0]!r}), "
                "so this is not the uploaded .zip"
            )
        return None

    def subset(self, mask: NDArray[np.bool_]) -> ImageFiles:
        """Only the images where ``mask`` is true."""
        keep = np.flatnonzero(mask)
        labels = None if self.labels is None else tuple(self.labels[i] for i in keep)
        return replace(self, names=tuple(self.names[i] for i in keep), labels=labels)

    def pixels(
        self, image: Mapping[str, Any], batch: int | None = None
    ) -> Iterator[NDArray[np.uint8]]:
        """The images decoded, converted and resized as the model's ``image`` encoding says:
        ``uint8 (n, channels, height, width)`` blocks of at most ``batch`` (default: up to
        256, 16 MiB of pixels), in name order; one image is decoded at a time.

        Raises
        ------
        peertrain.common.features.UnreadableImage
            An image that is not a readable PNG or JPEG, or too large (named).
        """
        if batch is None:
            size = int(image["channels"]) * int(image["height"]) * int(image["width"])
            batch = max(1, min(_BATCH, _BLOCK_BYTES // size))
        with _reader(self.source, self.is_zip) as read:
            block: list[NDArray[np.uint8]] = []
            for name in self.names:
                picture = open_image(read(name), name)
                try:
                    block.append(to_pixels(picture, image))
                except (OSError, ValueError, SyntaxError) as exc:
                    raise UnreadableImage(f"{name!r} cannot be decoded ({exc})", name) from None
                finally:
                    picture.close()
                if len(block) == batch:
                    yield np.stack(block)
                    block = []
            if block:
                yield np.stack(block)


class _reader:
    """``with _reader(source, is_zip) as read: read(name) -> bytes`` (bounded)."""

    def __init__(self, source: Path, is_zip: bool) -> None:
        self.source = source
        self.archive = zipfile.ZipFile(source) if is_zip else None

    def __enter__(self) -> Callable[[str], bytes]:
        return self.read

    def __exit__(self, *exc: object) -> None:
        if self.archive is not None:
            self.archive.close()

    def read(self, name: str) -> bytes:
        if self.archive is not None:
            with self.archive.open(name) as stream:
                data = stream.read(MAX_IMAGE_BYTES + 1)
        else:
            with (self.source / name).open("rb") as stream:
                data = stream.read(MAX_IMAGE_BYTES + 1)
        return data  # open_image refuses more than MAX_IMAGE_BYTES, naming the file


def _zip_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return [i.filename for i in archive.infolist() if not i.is_dir()]


def _folder_names(path: Path) -> list[str]:
    names = []
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__MACOSX"]
        prefix = Path(folder).relative_to(path).as_posix()
        names += [f if prefix == "." else f"{prefix}/{f}" for f in files]
    return names


def list_images(path: str | Path, classes: Sequence[str] = ()) -> ImageFiles:
    """The images of the folder or ZIP at ``path``, listed (nothing is decoded yet).

    ``classes`` are the model's classes: a single top folder that is not one of them
    holds unlabelled images, not a class.

    Raises
    ------
    ValueError
        Not a folder or ZIP, no images, or images in mixed or unknown folder depths.
    """
    source = Path(path)
    is_zip = source.is_file() and zipfile.is_zipfile(source)
    if source.is_dir():
        found = _folder_names(source)
    elif is_zip:
        try:
            found = _zip_names(source)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ValueError(f"{source} is not a readable ZIP archive ({exc})") from None
    else:
        raise ValueError(f"{source} is neither a folder nor a .zip of images")
    files = [n for n in found if not is_junk(n)]
    names = tuple(sorted(n for n in files if is_image_name(n)))
    ignored = tuple(sorted(n for n in files if not is_image_name(n)))
    if not names:
        raise ValueError(f"{source} holds no .png or .jpg images")
    return ImageFiles(source, names, _labels(names, classes), ignored, is_zip)


def _labels(names: Sequence[str], classes: Sequence[str]) -> tuple[str, ...] | None:
    parts = [n.split("/") for n in names]
    depths = {len(p) for p in parts}
    if depths == {1}:
        return None
    tops = {p[0] for p in parts}
    if depths == {2} and len(tops) == 1 and next(iter(tops)) not in classes:
        return None
    try:
        return tuple(class_folders(names))
    except NotClassFolders as exc:
        raise ValueError(
            f"{exc}: put the images in one folder per class, or all in one folder"
        ) from None
