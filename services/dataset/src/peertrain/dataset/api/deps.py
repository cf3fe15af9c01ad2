"""Dependencies of the dataset routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import extra
from peertrain.dataset.usecases import DatasetContext

__all__ = ["DATASET_EXTRA", "DatasetDep", "get_dataset_context"]

DATASET_EXTRA = "dataset"


get_dataset_context = extra(DATASET_EXTRA, DatasetContext, "the dataset service is starting")

DatasetDep = Annotated[DatasetContext, Depends(get_dataset_context)]
