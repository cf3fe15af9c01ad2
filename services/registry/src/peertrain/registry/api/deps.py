"""Dependencies of the registry's routes, as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import extra
from peertrain.registry.usecases import RegistryContext

__all__ = ["REGISTRY_EXTRA", "RegistryDep", "get_registry"]

REGISTRY_EXTRA = "registry"


get_registry = extra(REGISTRY_EXTRA, RegistryContext, "the registry is not ready")

RegistryDep = Annotated[RegistryContext, Depends(get_registry)]
