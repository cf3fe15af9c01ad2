"""Dependencies of the registry's routes, as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import ContextDep
from peertrain.common.app.deps import ServiceUnavailable
from peertrain.registry.usecases import RegistryContext

__all__ = ["REGISTRY_EXTRA", "RegistryDep", "get_registry"]

REGISTRY_EXTRA = "registry"


def get_registry(ctx: ContextDep) -> RegistryContext:
    """The registry's use-case context."""
    registry = ctx.extras.get(REGISTRY_EXTRA)
    if not isinstance(registry, RegistryContext):
        raise ServiceUnavailable("the registry is not ready")
    return registry


RegistryDep = Annotated[RegistryContext, Depends(get_registry)]
