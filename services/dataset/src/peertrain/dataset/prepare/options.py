"""The user's options for one dataset, as validation sees them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from peertrain.common.events.datasets import MISSING_TOKENS

__all__ = ["PrepareOptions"]


@dataclass(frozen=True)
class PrepareOptions:
    """Label column, holdout fraction and seed, the cell values read as missing (tables:
    trimmed, ignoring case), and the image size and how images of another shape are
    brought to it (images only: ``crop`` keeps their aspect ratio)."""

    label_column: str | None = None
    holdout_fraction: float = 0.1
    holdout_seed: int = 0
    image_size: tuple[int, int] | None = None
    image_fit: Literal["stretch", "crop"] = "crop"
    missing_values: tuple[str, ...] = MISSING_TOKENS
