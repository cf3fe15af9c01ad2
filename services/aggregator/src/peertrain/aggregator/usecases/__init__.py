"""The aggregator's use cases (the shell around :mod:`peertrain.aggregator.domain`)."""

from .context import AggregatorContext

__all__ = ["AggregatorContext"]
