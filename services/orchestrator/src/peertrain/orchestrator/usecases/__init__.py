"""The orchestrator's use cases (the shell around :mod:`peertrain.orchestrator.domain`);
each takes the :class:`~peertrain.orchestrator.application.OrchestratorApp`."""

__all__: list[str] = []
