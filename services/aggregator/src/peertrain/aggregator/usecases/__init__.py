"""The aggregator's use cases (the shell around :mod:`peertrain.aggregator.domain`), each
given the application (:class:`~peertrain.aggregator.application.AggregatorApp`)."""

__all__: list[str] = []
