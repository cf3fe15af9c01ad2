"""Dependencies of the aggregator's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.aggregator.usecases import AggregatorContext
from peertrain.common.app import ContextDep
from peertrain.common.app.deps import ServiceUnavailable

__all__ = ["AGGREGATOR_EXTRA", "AggregatorDep", "get_aggregator_context"]

AGGREGATOR_EXTRA = "aggregator"


def get_aggregator_context(ctx: ContextDep) -> AggregatorContext:
    """The aggregator's use-case context."""
    actx = ctx.extras.get(AGGREGATOR_EXTRA)
    if not isinstance(actx, AggregatorContext):
        raise ServiceUnavailable("the aggregator is starting")
    return actx


AggregatorDep = Annotated[AggregatorContext, Depends(get_aggregator_context)]
