"""The dataset service's settings (``PEERTRAIN_DATASET_*``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from peertrain.common.features import MAX_IMAGE_PIXELS
from peertrain.common.settings import ServiceSettings

__all__ = ["DatasetSettings", "GiB", "MiB"]

MiB = 1024 * 1024
GiB = 1024 * MiB


class DatasetSettings(ServiceSettings):
    """Everything the dataset service reads from its environment.

    The limits are the service's defence against hostile uploads; each one, when hit,
    gives a clear refusal (HTTP 4xx at upload time, or a ``rejected`` dataset).
    """

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_DATASET_", extra="ignore")

    service_name: str = "dataset"
    port: int = 8003
    api_prefix: str = "/api/datasets"

    work_dir: Path = Path(tempfile.gettempdir()) / "peertrain-dataset"
    """Scratch space for validation and sharding (emptied after each run)."""

    max_upload_bytes: int = Field(default=2 * GiB, ge=1)
    """Cap on the uploaded file; passing it answers 413 at once."""
    max_datasets_per_user: int = Field(default=100, ge=1)
    """Datasets a user may keep (validating, validated or rejected; deleting frees one)."""
    max_bytes_per_user: int = Field(default=20 * GiB, ge=1)
    """Uploaded bytes a user may keep (rejected datasets' are removed, so not counted);
    passing either quota answers 403 ``quota_exceeded``."""
    max_uncompressed_bytes: int | None = Field(default=None, ge=1)
    """Cap on what a .zip or .gz expands to, in total (default: ``max_upload_bytes``)."""
    max_compression_ratio: float = Field(default=100.0, gt=1)
    min_ratio_check_bytes: int = Field(default=64 * 1024, ge=0)
    """The ratio limit applies once an entry has expanded to at least this much."""
    max_zip_entries: int = Field(default=100_000, ge=1)
    max_field_bytes: int = Field(default=1 * MiB, ge=1)
    max_columns: int = Field(default=4096, ge=2)
    max_features: int = Field(default=16_384, ge=1)
    max_rows: int = Field(default=20_000_000, ge=2)
    max_categories: int = Field(default=100, ge=1)
    """Cardinality cap of a categorical feature column (one-hot width)."""
    max_classes: int = Field(default=1000, ge=2)
    max_image_pixels: int = Field(default=MAX_IMAGE_PIXELS, ge=1)
    """Largest image accepted (width x height) before decoding."""
    max_image_features: int = Field(default=3 * 512 * 512, ge=1)
    """Largest channels x height x width after resizing."""
    csv_block_bytes: int = Field(default=2 * MiB, ge=64 * 1024)
    """CSV parse block; a row must fit in one block."""

    default_holdout_fraction: float = Field(default=0.1, gt=0, le=0.5)
    preview_rows: int = Field(default=20, ge=1, le=1000)
    shard_wait_s: float = Field(default=600.0, ge=0)
    """How long a job waits for its dataset to finish validating."""
    max_concurrent_work: int = Field(default=1, ge=1)
    """Validations and shardings run at once (each holds bounded memory)."""

    @property
    def inflate_cap(self) -> int:
        """What an archive may expand to, in total."""
        return self.max_uncompressed_bytes or self.max_upload_bytes
