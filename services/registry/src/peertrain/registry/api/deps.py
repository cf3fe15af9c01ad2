"""Dependencies of the registry's routes, as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from peertrain.common.app import application_dep
from peertrain.registry.application import RegistryApp

__all__ = ["RegistryDep", "get_registry"]


get_registry = application_dep(RegistryApp, "the registry is not ready")

RegistryDep = Annotated[RegistryApp, Depends(get_registry)]
