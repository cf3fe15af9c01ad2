"""The user's options for one dataset, as validation sees them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PrepareOptions"]


@dataclass(frozen=True)
class PrepareOptions:
    """Label column, holdout fraction and seed, and the image size (images only)."""

    label_column: str | None = None
    holdout_fraction: float = 0.1
    holdout_seed: int = 0
    image_size: tuple[int, int] | None = None
