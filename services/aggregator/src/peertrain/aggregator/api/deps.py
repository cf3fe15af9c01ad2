"""Dependencies of the aggregator's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.aggregator.usecases import AggregatorContext
from peertrain.common.app import extra

__all__ = ["AGGREGATOR_EXTRA", "AggregatorDep", "get_aggregator_context"]

AGGREGATOR_EXTRA = "aggregator"


get_aggregator_context = extra(AGGREGATOR_EXTRA, AggregatorContext, "the aggregator is starting")

AggregatorDep = Annotated[AggregatorContext, Depends(get_aggregator_context)]
