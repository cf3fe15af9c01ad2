"""Fixtures for the dataset service's unit tests (no stack needed)."""

from __future__ import annotations

import gzip
import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from peertrain.common.app import Ports
from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import MemoryEventLog
from peertrain.dataset.application import DatasetApp
from peertrain.dataset.config import DatasetSettings
from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.prepare import PreparedDataset, PrepareOptions, prepare_upload
from peertrain.dataset.readmodel import MemoryReadModel

Prepare = Callable[..., PreparedDataset]


@pytest.fixture
def prepare(tmp_path: Path) -> Prepare:
    """``prepare(data, name="x.csv", **options)``: run validation on bytes in memory."""
    counter = [0]

    def run(
        data: bytes, name: str = "data.csv", limits: Limits | None = None, **options: Any
    ) -> PreparedDataset:
        counter[0] += 1
        base = tmp_path / f"run{counter[0]}"
        work = base / "work"
        work.mkdir(parents=True)
        raw = base / "raw"
        raw.write_bytes(data)
        options.setdefault("holdout_seed", 7)
        return prepare_upload(raw, name, work, PrepareOptions(**options), limits or Limits())

    return run


def make_zip(entries: dict[str, bytes], **kwargs: Any) -> bytes:
    """A ZIP archive of ``entries`` (deflated)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, **kwargs) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def make_gzip(data: bytes) -> bytes:
    """``data`` gzip-compressed."""
    return gzip.compress(data)


@pytest.fixture
def zip_of() -> Callable[..., bytes]:
    """``zip_of({"a.csv": b"..."})``."""
    return make_zip


@pytest.fixture
def gzip_of() -> Callable[[bytes], bytes]:
    """``gzip_of(b"...")``."""
    return make_gzip


def iris_like(rows: int = 60, *, seed: int = 0) -> bytes:
    """A small clean CSV: numeric, boolean and categorical features, 3 classes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = ["length,width,flag,colour,species"]
    for i in range(rows):
        species = ("setosa", "versicolor", "virginica")[i % 3]
        lines.append(
            f"{rng.normal(5, 1):.3f},{rng.normal(3, 0.5):.3f},"
            f"{'true' if i % 2 else 'false'},{('red', 'blue')[i % 2]},{species}"
        )
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def clean_csv() -> bytes:
    """A small clean CSV (60 rows, 3 balanced classes)."""
    return iris_like()


@pytest.fixture
def make_dataset_app(tmp_path: Path) -> Callable[..., DatasetApp]:
    """``make_dataset_app(**settings)``: the dataset service's application on in-memory
    ports (log, bucket, clock) and an in-memory read model; its scratch space under
    ``tmp_path``."""

    def make(**settings: Any) -> DatasetApp:
        ports = Ports(log=MemoryEventLog(), blobs=MemoryBlobStore(), clock=ManualClock())
        config = DatasetSettings(work_dir=tmp_path / "work", **settings)
        return DatasetApp.of(ports, config, MemoryReadModel())

    return make


@pytest.fixture
def dataset_app(make_dataset_app: Callable[..., DatasetApp]) -> DatasetApp:
    """The application as :func:`make_dataset_app` makes it, with the default settings."""
    return make_dataset_app()
