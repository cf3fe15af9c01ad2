"""Dependencies of the dataset routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import application_dep
from peertrain.dataset.application import DatasetApp

__all__ = ["DatasetDep", "get_dataset_app"]


get_dataset_app = application_dep(DatasetApp, "the dataset service is starting")

DatasetDep = Annotated[DatasetApp, Depends(get_dataset_app)]
