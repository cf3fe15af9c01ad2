"""The rules of an image dataset's files: which files count, their classes, their limits.

One set of rules for the dataset service (which prepares an uploaded ZIP of
``<class>/<file>`` folders) and a downloaded model's ``predict`` (which reads a folder or
ZIP again): the same files are skipped, the same folder is the class, the same images
are refused, so ``predict --holdout`` finds the very images the job held out.
Standard library only; Pillow is imported by :func:`open_image` when it runs.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = [
    "IMAGE_FORMATS",
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_PIXELS",
    "NotClassFolders",
    "UnreadableImage",
    "class_folders",
    "is_image_name",
    "is_junk",
    "open_image",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
"""Names (lower-cased) that are images."""

IMAGE_FORMATS = ("JPEG", "PNG")
"""The formats Pillow may decode (the content decides, not the name)."""

MAX_IMAGE_BYTES = 64 * 1024 * 1024
"""Most bytes one image file may have."""

MAX_IMAGE_PIXELS = 16_000_000
"""Most pixels one image may have (the dataset service's default ``max_image_pixels``)."""


class NotClassFolders(ValueError):
    """The files are not in one folder per class; ``entry`` is the first that is not."""

    def __init__(self, message: str, entry: str) -> None:
        super().__init__(message)
        self.entry = entry


class UnreadableImage(ValueError):
    """An image that cannot be read, or is too large; ``entry`` names it."""

    def __init__(self, message: str, entry: str) -> None:
        super().__init__(message)
        self.entry = entry


def is_junk(name: str) -> bool:
    """Whether a ``/``-separated path is a hidden file or folder, or macOS's ``__MACOSX``."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return name.startswith("__MACOSX/") or base.startswith(".")


def is_image_name(name: str) -> bool:
    """Whether the name ends as a PNG or JPEG file's does (any case)."""
    return name.lower().endswith(IMAGE_SUFFIXES)


def class_folders(names: Sequence[str]) -> list[str]:
    """The class folder of every path: ``<class>/<file>`` or ``<root>/<class>/<file>``.

    Raises
    ------
    NotClassFolders
        Paths of other depths, mixed depths, or more than one root folder.
    """
    parts = [n.split("/") for n in names]
    depths = {len(p) for p in parts}
    if depths == {2}:
        return [p[0] for p in parts]
    if depths == {3} and len({p[0] for p in parts}) == 1:
        return [p[1] for p in parts]
    first = len(parts[0]) if parts else 2
    odd = next(
        (n for n, p in zip(names, parts, strict=True) if len(p) not in (2, 3) or len(p) != first),
        names[0] if names else "",  # two root folders
    )
    raise NotClassFolders(
        f"images must sit in one folder per class (<class>/<file>); {odd!r} does not", odd
    )


def open_image(data: bytes, name: str, max_pixels: int = MAX_IMAGE_PIXELS) -> Any:
    """A PNG or JPEG file's bytes as an opened (lazily decoded) PIL image.

    Pillow's decompression-bomb warning is an error here, and an image of more than
    ``max_pixels`` pixels is refused.

    Raises
    ------
    UnreadableImage
        Not a PNG or JPEG Pillow can open, or too large (the message names ``name``).
    """
    from PIL import Image

    if len(data) > MAX_IMAGE_BYTES:
        raise UnreadableImage(f"{name!r} is larger than {MAX_IMAGE_BYTES} bytes", name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=sorted(IMAGE_FORMATS))
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombWarning) as exc:
        raise UnreadableImage(
            f"{name!r} is not a readable PNG or JPEG image ({exc})", name
        ) from None
    except Image.DecompressionBombError:
        raise UnreadableImage(f"{name!r} is too large an image", name) from None
    width, height = image.size
    if width * height > max_pixels:
        image.close()
        raise UnreadableImage(f"{name!r} has {width}x{height} pixels, more than {max_pixels}", name)
    return image
