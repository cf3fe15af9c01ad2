"""The registry's use cases (the shell around :mod:`peertrain.registry.domain`)."""

from .context import RegistryContext

__all__ = ["RegistryContext"]
