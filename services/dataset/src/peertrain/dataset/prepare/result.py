"""What preparing an upload produces: local files and the facts about them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from peertrain.common.events.datasets import ColumnSchema, FeatureSpec

__all__ = ["PreparedDataset"]


@dataclass(frozen=True)
class PreparedDataset:
    """A validated, encoded and split dataset, as files in the scratch folder.

    Attributes
    ----------
    train_x, train_y
        ``.npy`` files: float32 ``(train_rows, *input_shape)``, int32 ``(train_rows,)``.
    holdout
        The holdout as an ``npz-v1`` file.
    preview
        The first rows, as the user wrote them (JSON-able).
    notes
        What validation decided that the uploader should know.
    """

    kind: Literal["table", "images"]
    rows: int
    train_rows: int
    holdout_rows: int
    columns: tuple[ColumnSchema, ...]
    label_column: str
    classes: tuple[str, ...]
    class_counts: tuple[int, ...]
    holdout_class_counts: tuple[int, ...]
    feature_spec: FeatureSpec
    train_x: Path
    train_y: Path
    holdout: Path
    preview: dict[str, Any]
    holdout_seed: int
    notes: tuple[str, ...] = ()
