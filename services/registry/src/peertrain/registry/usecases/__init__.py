"""The registry's use cases (the shell around :mod:`peertrain.registry.domain`); they
take the application (:class:`~peertrain.registry.application.RegistryApp`)."""

__all__: list[str] = []
