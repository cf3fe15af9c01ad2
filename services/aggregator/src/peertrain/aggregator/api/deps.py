"""Dependencies of the aggregator's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.aggregator.application import AggregatorApp
from peertrain.common.app import application_dep

__all__ = ["AggregatorDep", "get_aggregator"]


get_aggregator = application_dep(AggregatorApp, "the aggregator is starting")

AggregatorDep = Annotated[AggregatorApp, Depends(get_aggregator)]
