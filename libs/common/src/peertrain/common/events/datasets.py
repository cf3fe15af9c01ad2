"""Dataset events (appended by the dataset service), and the feature spec they carry.

Lifecycle of one dataset, on the stream ``dataset:<id>``::

    dataset.uploaded -> dataset.validated | dataset.rejected -> ... -> dataset.deleted

Sharding for one job, on the stream ``sharding:<job_id>`` (one event, exactly once)::

    job.created (orchestrator) -> dataset.sharded | dataset.sharding_failed

Training data format (``npz-v1``)
---------------------------------
Every shard (``jobs/<job>/shards/<k>.npz``) and the holdout (``jobs/<job>/holdout.npz``,
a copy of ``datasets/<id>/holdout.npz``) is an uncompressed NumPy ``.npz`` archive with
two arrays, loadable with ``numpy.load(path)`` (no pickles: ``allow_pickle=False``):

``X``
    shape ``(rows, *FeatureSpec.input_shape)``: ``float32`` values encoded and
    normalised as the :class:`FeatureSpec` describes; for images whose
    :class:`ImageEncoding` says ``stored="uint8"``, the ``uint8`` pixels, which the
    reader scales and standardises (4 times smaller to store and send).
``y``
    ``int64``, shape ``(rows,)``, the class index into ``FeatureSpec.classes``.

A model is built from the spec alone: ``input_shape`` (``(d,)`` for tables,
``(channels, height, width)`` for images), ``input_size`` (their product) and
``num_classes``. Each artifact's ``sha256`` is that of the ``.npz`` file's bytes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from peertrain.common.features.missing import (
    DEFAULT_MISSING_TOKENS,
    LEGACY_MISSING_TOKENS,
    MissingMatch,
)
from peertrain.common.specs.model import DataShape, parse_data_shape
from peertrain.common.specs.sharding import ShardingSpec

from .catalogue import event_type
from .envelope import EventData

__all__ = [
    "DATASET_DELETED",
    "DATASET_EVENT_TYPES",
    "DATASET_REJECTED",
    "DATASET_SHARDED",
    "DATASET_SHARDING_FAILED",
    "DATASET_UPLOADED",
    "DATASET_VALIDATED",
    "MISSING_TOKENS",
    "SHARD_FORMAT",
    "ArtifactRef",
    "ColumnEncoding",
    "ColumnSchema",
    "DatasetDeleted",
    "DatasetRejected",
    "DatasetSharded",
    "DatasetShardingFailed",
    "DatasetUploaded",
    "DatasetValidated",
    "FeatureSpec",
    "HoldoutRule",
    "ImageEncoding",
    "ShardRef",
    "dataset_stream",
    "sharding_stream",
]

DATASET_UPLOADED = "dataset.uploaded"
DATASET_VALIDATED = "dataset.validated"
DATASET_REJECTED = "dataset.rejected"
DATASET_SHARDED = "dataset.sharded"
DATASET_SHARDING_FAILED = "dataset.sharding_failed"
DATASET_DELETED = "dataset.deleted"

DATASET_EVENT_TYPES = (
    DATASET_UPLOADED,
    DATASET_VALIDATED,
    DATASET_REJECTED,
    DATASET_SHARDED,
    DATASET_SHARDING_FAILED,
    DATASET_DELETED,
)

SHARD_FORMAT = "npz-v1"
"""Version tag of the training data format described in this module's docstring."""

MISSING_TOKENS: tuple[str, ...] = DEFAULT_MISSING_TOKENS
"""Cell values (after trimming whitespace, ignoring case) that mean "missing", unless an
upload names its own (:mod:`peertrain.common.features.missing`)."""

_Frozen = ConfigDict(frozen=True, extra="forbid")


def dataset_stream(dataset_id: str) -> str:
    """The stream of one dataset's lifecycle events, ``dataset:<id>``."""
    return f"dataset:{dataset_id}"


def sharding_stream(job_id: str) -> str:
    """The stream of one job's sharding outcome, ``sharding:<job_id>``."""
    return f"sharding:{job_id}"


class ArtifactRef(BaseModel):
    """One object in the bucket, with what a reader needs to trust it.

    Attributes
    ----------
    key
        The S3 key (the bucket is the platform's one bucket).
    sha256
        Lowercase hex SHA-256 of the object's bytes.
    size
        Bytes.
    rows
        Rows (samples) it holds, where it holds training data.
    class_counts
        Rows per class, indexed like ``FeatureSpec.classes`` (training data only).
    """

    model_config = _Frozen

    key: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    rows: int | None = Field(default=None, ge=0)
    class_counts: tuple[int, ...] | None = None


class ShardRef(ArtifactRef):
    """One peer's shard: ``jobs/<job>/shards/<index>.npz``, for ``peers[index]``."""

    index: int = Field(ge=0)
    peer_id: str


class ColumnSchema(BaseModel):
    """One column of an uploaded table as inferred by validation.

    ``type`` is ``numeric``, ``boolean`` (true/false, yes/no), ``categorical`` (strings),
    ``empty`` (only missing values: not used as a feature), ``label`` (the label
    column) or ``image`` (an image dataset's pixels).
    """

    model_config = _Frozen

    name: str
    type: Literal["numeric", "boolean", "categorical", "empty", "label", "image"]
    missing: int = Field(default=0, ge=0)
    distinct: int | None = Field(default=None, ge=0)
    reason: str | None = None
    """Why validation chose ``type``, in words (absent before it was recorded)."""
    non_numbers: int = Field(default=0, ge=0)
    """Numeric columns: cells that were not numbers, read as missing (in ``missing``)."""
    non_number_examples: tuple[str, ...] = ()
    """A few of those cells' values."""


class ColumnEncoding(BaseModel):
    """How one table column became features ``X[:, offset:offset + width]``.

    Numeric and boolean (``true``/``yes`` = 1, ``false``/``no`` = 0) columns give one
    feature: a missing value is replaced by ``fill`` (the median of the training part),
    then ``(value - mean) / std`` with ``mean`` and ``std`` from the training part
    (``std`` is 1 where the training part is constant; booleans keep mean 0, std 1).

    A numeric column with ``non_numbers_missing`` set was kept numeric although a few of
    its cells were not numbers: such cells are missing there (elsewhere, an error).

    Categorical columns are one-hot encoded over ``categories`` (sorted), plus a last
    column for "missing" when ``missing_category`` is set.
    """

    model_config = _Frozen

    name: str
    type: Literal["numeric", "boolean", "categorical"]
    offset: int = Field(ge=0)
    width: int = Field(ge=1)
    fill: float | None = None
    mean: float | None = None
    std: float | None = None
    categories: tuple[str, ...] | None = None
    missing_category: bool = False
    non_numbers_missing: bool = False


class ImageEncoding(BaseModel):
    """How images became ``X[i]`` of shape ``(channels, height, width)``.

    Each image was converted to grey (``L``, 1 channel) or ``RGB`` (3) and brought to
    ``width`` x ``height`` with ``resample`` as ``fit`` says: ``stretch`` resizes it
    to that size (its aspect ratio changes when it differs); ``crop`` resizes it to
    the smallest size covering ``width`` x ``height`` with its aspect ratio kept, then
    cuts out the centre (torchvision's ``Resize`` + ``CenterCrop``). Its pixels are
    then scaled to [0, 1] by ``1/255`` and standardised per channel with ``mean`` and
    ``std`` from the training part.

    ``stored`` is what the training data's ``X`` holds: ``uint8`` pixels, standardised
    batch by batch by whoever reads them (peers augment them first), or ``float32``
    values already standardised (datasets validated before pixels were kept).
    """

    model_config = _Frozen

    mode: Literal["L", "RGB"]
    channels: int = Field(ge=1)
    height: int = Field(ge=1)
    width: int = Field(ge=1)
    resample: Literal["bilinear"] = "bilinear"
    fit: Literal["stretch", "crop"] = "stretch"
    stored: Literal["float32", "uint8"] = "float32"
    scale: float = 1 / 255
    mean: tuple[float, ...]
    std: tuple[float, ...]


class HoldoutRule(BaseModel):
    """How the holdout was chosen, so a downloaded model can find the same rows again.

    The rows are those of :func:`peertrain.common.features.stratified_holdout` applied
    to the class index of every row of the upload (``rows`` of them, in file order),
    with ``fraction`` and ``seed``.
    """

    model_config = _Frozen

    method: Literal["stratified"] = "stratified"
    fraction: float = Field(gt=0, le=0.5)
    seed: int = Field(ge=0)
    rows: int = Field(ge=1)


class FeatureSpec(BaseModel):
    """What a model needs to consume a dataset's shards: shape, classes, encoding.

    Attributes
    ----------
    kind
        ``table`` (CSV) or ``images``.
    format
        The data format of shards and holdout (see the module docstring).
    input_shape
        Shape of one sample: ``(d,)`` for tables, ``(channels, height, width)`` for
        images.
    input_size
        Product of ``input_shape`` (the width of an MLP's first layer).
    classes
        Class names in label-index order: ``y == i`` means ``classes[i]``.
    columns
        Tables: each feature column's encoding, in feature order (none in the copy a
        task carries: :meth:`for_peers`).
    image
        Images: the image encoding.
    label_column
        The column (tables) or folder level (images) the labels came from.
    missing_tokens
        Cell values read as missing (trimmed); older specs: ``""``, ``"?"``, ``"NA"``.
    missing_match
        How cells are compared with ``missing_tokens``: ``casefold`` (ignoring case), or
        ``exact`` (specs from before the tokens could be chosen).
    holdout
        How the holdout was chosen (absent in specs from before it was recorded).
    """

    model_config = _Frozen

    kind: Literal["table", "images"]
    format: Literal["npz-v1"] = "npz-v1"
    x_dtype: Literal["float32"] = "float32"
    y_dtype: Literal["int64"] = "int64"
    input_shape: tuple[int, ...] = Field(min_length=1)
    input_size: int = Field(ge=1)
    classes: tuple[str, ...] = Field(min_length=2)
    columns: tuple[ColumnEncoding, ...] = ()
    image: ImageEncoding | None = None
    label_column: str
    missing_tokens: tuple[str, ...] = LEGACY_MISSING_TOKENS
    missing_match: MissingMatch = "exact"
    holdout: HoldoutRule | None = None

    @property
    def num_classes(self) -> int:
        """How many classes (the width of a classifier's last layer)."""
        return len(self.classes)

    @property
    def data_shape(self) -> DataShape:
        """What sizes a model for this data: one sample's shape and the classes.

        Raises
        ------
        SpecInvalid
            When the shape is beyond what a model may consume (the model budgets).
        """
        return parse_data_shape(self)

    def for_peers(self) -> FeatureSpec:
        """The spec a task carries: this one without its columns' encodings.

        A peer trains on shards already encoded, and sizes its model from the shape and
        the classes; the columns (names, fills, means, categories) only turn raw rows
        into features, which the dataset service and an exported model do. Sent with
        every task they made its message grow with the table's width (140 kB for a
        784-column table, where the rest is under 2 kB).
        """
        return self.model_copy(update={"columns": ()})

    @model_validator(mode="after")
    def _consistent(self) -> FeatureSpec:
        size = 1
        for dim in self.input_shape:
            size *= dim
        if size != self.input_size:
            raise ValueError(f"input_size {self.input_size} != product of {self.input_shape}")
        if self.kind == "images" and self.image is None:
            raise ValueError("an images spec needs its image encoding")
        if self.kind == "table" and self.columns:  # none: a task's copy (for_peers)
            width = sum(c.width for c in self.columns)
            if width != self.input_size:
                raise ValueError(f"columns give {width} features, input_size is {self.input_size}")
        return self


@event_type(DATASET_UPLOADED)
class DatasetUploaded(EventData):
    """A user's file is in the bucket (``raw``); validation starts from this event.

    The options are the user's, checked for form only; the file itself is not trusted
    yet (validation decides).
    """

    dataset_id: str
    owner_id: str
    name: str = Field(min_length=1, max_length=200)
    filename: str
    raw: ArtifactRef
    label_column: str | None = None
    holdout_fraction: float = Field(gt=0, le=0.5)
    image_size: tuple[int, int] | None = None
    image_fit: Literal["stretch", "crop"] = "stretch"
    """Target (width, height) for image datasets; default: the most common size."""
    holdout_seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    """The holdout's seed, when the uploader chose one (else one from the dataset id)."""
    missing_values: tuple[str, ...] | None = None
    """Tables: the cell values to read as missing, when the uploader chose them (else
    :data:`MISSING_TOKENS`); compared ignoring case."""


@event_type(DATASET_VALIDATED)
class DatasetValidated(EventData):
    """The dataset is valid, encoded, and split into a training part and a holdout.

    ``train_x`` / ``train_y`` are the encoded training rows (``.npy``: float32
    ``(train_rows, *input_shape)`` and int32 ``(train_rows,)``) that jobs shard from;
    ``holdout`` is the stratified holdout (``.npz``, format of the module docstring).
    ``notes`` are what validation decided that the uploader should know (a mostly
    numeric column kept numeric with a few other cells read as missing, ...).
    """

    dataset_id: str
    kind: Literal["table", "images"]
    rows: int = Field(ge=1)
    train_rows: int = Field(ge=1)
    holdout_rows: int = Field(ge=1)
    columns: tuple[ColumnSchema, ...]
    label_column: str
    classes: tuple[str, ...] = Field(min_length=2)
    class_counts: tuple[int, ...]
    feature_spec: FeatureSpec
    train_x: ArtifactRef
    train_y: ArtifactRef
    holdout: ArtifactRef
    preview: ArtifactRef
    holdout_seed: int
    notes: tuple[str, ...] = ()


@event_type(DATASET_REJECTED)
class DatasetRejected(EventData):
    """The upload is not a usable dataset; nothing of it is left in the bucket.

    ``code`` is machine-readable (``ragged_row``, ``single_class``, ``zip_bomb``, ...),
    ``message`` says why in one sentence, ``detail`` locates it (line, column, entry).
    """

    dataset_id: str
    code: str
    message: str
    detail: dict[str, str | int | float | None] | None = None


@event_type(DATASET_SHARDED)
class DatasetSharded(EventData):
    """One job's shards and holdout are written, one shard per peer, in peer order.

    Consumers weight a peer's update by ``shards[k].rows`` (not by what the peer
    claims) and build the model's input from ``feature_spec``.
    """

    dataset_id: str
    job_id: str
    sharding: ShardingSpec
    shards: tuple[ShardRef, ...] = Field(min_length=1)
    holdout: ArtifactRef
    feature_spec: FeatureSpec
    format: Literal["npz-v1"] = "npz-v1"


@event_type(DATASET_SHARDING_FAILED)
class DatasetShardingFailed(EventData):
    """A job's data could not be sharded (unknown or unusable dataset, too few rows)."""

    dataset_id: str
    job_id: str
    code: str
    message: str


@event_type(DATASET_DELETED)
class DatasetDeleted(EventData):
    """The owner deleted the dataset; its objects under ``datasets/<id>/`` are gone.

    Shards already written for jobs (``jobs/<job>/...``) belong to those jobs and stay.
    """

    dataset_id: str
    owner_id: str
