"""The limits validation enforces, as a plain value (built from the settings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from peertrain.common.features import MAX_IMAGE_PIXELS

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    """Caps on what an upload may be or expand to (see ``DatasetSettings``)."""

    inflate_cap: int = 2 * 1024**3
    max_ratio: float = 100.0
    min_ratio_bytes: int = 64 * 1024
    max_entries: int = 100_000
    max_field_bytes: int = 1024 * 1024
    max_columns: int = 4096
    max_features: int = 16_384
    max_rows: int = 20_000_000
    max_categories: int = 100
    max_classes: int = 1000
    max_image_pixels: int = MAX_IMAGE_PIXELS
    max_image_features: int = 3 * 512 * 512
    block_bytes: int = 2 * 1024 * 1024
    preview_rows: int = 20

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        """The limits of a ``DatasetSettings``."""
        return cls(
            inflate_cap=settings.inflate_cap,
            max_ratio=settings.max_compression_ratio,
            min_ratio_bytes=settings.min_ratio_check_bytes,
            max_entries=settings.max_zip_entries,
            max_field_bytes=settings.max_field_bytes,
            max_columns=settings.max_columns,
            max_features=settings.max_features,
            max_rows=settings.max_rows,
            max_categories=settings.max_categories,
            max_classes=settings.max_classes,
            max_image_pixels=settings.max_image_pixels,
            max_image_features=settings.max_image_features,
            block_bytes=settings.csv_block_bytes,
            preview_rows=settings.preview_rows,
        )
