"""What the registry's routes take (HTTP request bodies)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from peertrain.common.events.peers import Device

from ..domain.selection import Prefer

__all__ = [
    "PeerSettingsUpdate",
    "SelectionFilters",
    "SelectionRequest",
]


class PeerSettingsUpdate(BaseModel):
    """``PATCH /peers/{id}``: share the peer with every user, or disable it."""

    model_config = ConfigDict(extra="forbid")

    shared: bool | None = None
    disabled: bool | None = None

    @model_validator(mode="after")
    def _something(self) -> PeerSettingsUpdate:
        if self.shared is None and self.disabled is None:
            raise ValueError("give shared, disabled or both")
        return self


class SelectionFilters(BaseModel):
    """Which peers may be selected (they must be active and usable in any case)."""

    model_config = ConfigDict(extra="forbid")

    device: Device | None = None
    min_memory_gb: float | None = Field(
        default=None,
        ge=0,
        description="Training-device memory: the largest GPU's on cuda peers, else RAM",
    )
    owner: Literal["me", "any"] = "any"


class SelectionRequest(BaseModel):
    """``POST /selections``."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(ge=1, le=10_000)
    filters: SelectionFilters = SelectionFilters()
    prefer: Prefer = "memory"
    seed: int | None = Field(default=None, description="Makes prefer=random repeatable")
