"""Dependencies of the dataset routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import ContextDep
from peertrain.common.app.deps import ServiceUnavailable
from peertrain.dataset.usecases import DatasetContext

__all__ = ["DATASET_EXTRA", "DatasetDep", "get_dataset_context"]

DATASET_EXTRA = "dataset"


def get_dataset_context(ctx: ContextDep) -> DatasetContext:
    """The dataset service's use-case context."""
    dctx = ctx.extras.get(DATASET_EXTRA)
    if not isinstance(dctx, DatasetContext):
        raise ServiceUnavailable("the dataset service is starting")
    return dctx


DatasetDep = Annotated[DatasetContext, Depends(get_dataset_context)]
