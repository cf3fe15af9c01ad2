"""The dataset API's answers (HTTP response bodies); it takes no request model: an
upload is a multipart body streamed to storage as it arrives (``usecases.upload``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from peertrain.common.events.datasets import ColumnSchema, ImageEncoding

__all__ = [
    "DatasetAccepted",
    "DatasetErrorView",
    "DatasetPublic",
    "Preview",
]


class DatasetAccepted(BaseModel):
    """An upload was stored; validation runs next."""

    dataset_id: str
    status: Literal["validating"] = "validating"


# The view of a ``dataset.rejected`` event's error (``DatasetError`` is the exception root).
class DatasetErrorView(BaseModel):
    """Why a dataset was rejected."""

    code: str
    message: str
    detail: dict[str, Any] | None = None


class DatasetPublic(BaseModel):
    """A dataset as its owner sees it."""

    id: str
    name: str
    filename: str
    status: Literal["validating", "validated", "rejected"]
    error: DatasetErrorView | None = None
    size: int
    sha256: str
    kind: Literal["table", "images"] | None = None
    rows: int | None = None
    columns: int | None = None
    schema_: list[ColumnSchema] | None = Field(default=None, alias="schema")
    label_column: str | None = None
    holdout_seed: int | None = None
    """The holdout's seed when the uploader chose one."""
    missing_values: list[str] | None = None
    """Tables: the cell values read as missing (trimmed, ignoring case): the uploader's
    choice, or once validated, those validation used."""
    notes: list[str] | None = None
    """What validation decided that the uploader should know (e.g. a mostly numeric
    column kept numeric, its few other cells read as missing)."""
    classes: list[str] | None = None
    class_counts: list[int] | None = None
    train_rows: int | None = None
    holdout_rows: int | None = None
    input_shape: list[int] | None = None
    image: ImageEncoding | None = None
    """Image datasets: how the images became the model's input (size, channels, fit,
    per-channel statistics, and that the training data keeps pixels)."""
    created_at: datetime | None = None
    updated_at: datetime | None = None

    model_config = ConfigDict(populate_by_name=True)

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> DatasetPublic:
        """From the read model's document."""
        fields = {k: v for k, v in doc.items() if k in cls.model_fields and k != "schema_"}
        return cls(id=doc["_id"], schema_=doc.get("schema"), **fields)


class Preview(BaseModel):
    """The first rows of a dataset, as uploaded (cells are data, never evaluated)."""

    kind: Literal["table", "images"]
    columns: list[str]
    rows: list[list[Any]]
