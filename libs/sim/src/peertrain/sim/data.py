"""A simulation's dataset: the dataset service's own preparation of a CSV or zip.

:func:`load_data` runs :func:`peertrain.dataset.prepare.prepare_upload` (the table scan
and encoding, the images path, the stratified holdout) on a local file, as validation
does on an upload; :func:`from_arrays` takes data that is ready (benchmarks, tests).
Sharding happens per job, in :mod:`peertrain.sim.engine`, with the job's strategy.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from peertrain.common.events.datasets import MISSING_TOKENS, ColumnEncoding, FeatureSpec
from peertrain.common.features import parse_missing_values
from peertrain.dataset.domain.holdout import holdout_seed as seed_of_holdout
from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.prepare import PrepareOptions, prepare_upload

__all__ = ["DEFAULT_HOLDOUT_FRACTION", "SimData", "from_arrays", "load_data"]

DEFAULT_HOLDOUT_FRACTION = 0.1
"""The dataset service's default (``default_holdout_fraction``)."""


@dataclass(frozen=True)
class SimData:
    """A prepared dataset: the training part, the holdout and the feature spec.

    Attributes
    ----------
    train_x, train_y
        Encoded training rows (float32, ``(rows, *input_shape)``) and class indices.
    holdout_x, holdout_y
        The holdout, as the aggregator evaluates on it.
    feature_spec
        What models are built from.
    shards
        A fixed split of the training rows (row indices per shard) instead of the job's
        sharding strategy; ``None`` lets the job's ``sharding`` block decide.
    notes
        What validation decided that the uploader should know (as the dataset API's
        ``notes``: a mostly numeric column kept numeric, ...).
    """

    train_x: NDArray[np.float32]
    train_y: NDArray[np.integer[Any]]
    holdout_x: NDArray[np.float32]
    holdout_y: NDArray[np.integer[Any]]
    feature_spec: FeatureSpec
    shards: tuple[NDArray[np.int64], ...] | None = None
    notes: tuple[str, ...] = ()

    @property
    def num_classes(self) -> int:
        """Classes of the label."""
        return self.feature_spec.num_classes


def load_data(
    path: str | Path,
    *,
    label_column: str | None = None,
    holdout_fraction: float = DEFAULT_HOLDOUT_FRACTION,
    dataset_id: str = "sim",
    image_size: tuple[int, int] | None = None,
    holdout_seed: int | None = None,
    image_fit: Literal["stretch", "crop"] = "crop",
    missing_values: str | Sequence[str] | None = None,
) -> SimData:
    """Prepare a ``.csv`` or ``.zip`` as the dataset service validates an upload.

    The holdout is seeded with ``holdout_seed``, else from ``dataset_id``, as the
    service seeds it (the uploader's seed, else one from the dataset's id).
    ``missing_values`` (a list, or comma-separated text, as the upload form takes it)
    replaces the cell values read as missing (default: ``MISSING_TOKENS``).

    Raises
    ------
    peertrain.dataset.domain.errors.InvalidDataset
        For anything the service would reject (with the same code and message).
    """
    raw = Path(path)
    options = PrepareOptions(
        label_column=label_column,
        holdout_fraction=holdout_fraction,
        holdout_seed=seed_of_holdout(dataset_id, holdout_seed),
        image_size=image_size,
        image_fit=image_fit,
        missing_values=_missing_values(missing_values),
    )
    with tempfile.TemporaryDirectory(prefix="peertrain-sim-") as scratch:
        prepared = prepare_upload(raw, raw.name, Path(scratch), options, Limits())
        train_x = np.load(prepared.train_x, allow_pickle=False)
        train_y = np.load(prepared.train_y, allow_pickle=False)
        with np.load(prepared.holdout, allow_pickle=False) as held:
            holdout_x, holdout_y = held["X"], held["y"]
    return SimData(
        train_x, train_y, holdout_x, holdout_y, prepared.feature_spec, notes=prepared.notes
    )


def _missing_values(chosen: str | Sequence[str] | None) -> tuple[str, ...]:
    if chosen is None:
        return MISSING_TOKENS
    return parse_missing_values(chosen if isinstance(chosen, str) else ",".join(chosen))


def from_arrays(
    train_x: NDArray[Any],
    train_y: NDArray[Any],
    holdout_x: NDArray[Any],
    holdout_y: NDArray[Any],
    *,
    classes: tuple[str, ...] | None = None,
    shards: list[NDArray[np.int64]] | tuple[NDArray[np.int64], ...] | None = None,
) -> SimData:
    """Data that is encoded already (features as they are, one numeric column each)."""
    x = np.ascontiguousarray(train_x, dtype=np.float32).reshape(len(train_x), -1)
    hx = np.ascontiguousarray(holdout_x, dtype=np.float32).reshape(len(holdout_x), -1)
    n_classes = int(max(np.max(train_y), np.max(holdout_y))) + 1
    names = classes or tuple(str(i) for i in range(n_classes))
    width = x.shape[1]
    spec = FeatureSpec(
        kind="table",
        input_shape=(width,),
        input_size=width,
        classes=names,
        columns=tuple(
            ColumnEncoding(name=f"x{i}", type="numeric", offset=i, width=1, mean=0.0, std=1.0)
            for i in range(width)
        ),
        label_column="y",
    )
    return SimData(
        x,
        np.asarray(train_y, dtype=np.int64),
        hx,
        np.asarray(holdout_y, dtype=np.int64),
        spec,
        None if shards is None else tuple(np.asarray(s, dtype=np.int64) for s in shards),
    )
