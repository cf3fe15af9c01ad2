"""A job's ``training`` block, validated, and seeds derived from it."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import SpecInvalid
from .model import spec_errors

__all__ = ["TrainingParams", "derive_seed", "parse_training_params"]


class TrainingParams(BaseModel):
    """How peers train locally (the job's ``training`` block).

    Attributes
    ----------
    rounds
        Federated rounds of the job (the orchestrator's; ignored by local training).
    local_epochs
        Passes over the local shard per round.
    batch_size, lr, optimizer, momentum, weight_decay
        The local optimiser: ``sgd`` (with ``momentum``) or ``adam``.
    seed
        The job's seed; peers derive per-round seeds from it with :func:`derive_seed`.
    proximal_mu
        FedProx's proximal coefficient; 0 disables the term.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int = Field(default=10, ge=1, le=10_000)
    local_epochs: int = Field(default=1, ge=1, le=1_000)
    batch_size: int = Field(default=32, ge=1, le=65_536)
    lr: float = Field(default=0.01, gt=0, le=10)
    optimizer: Literal["sgd", "adam"] = "sgd"
    momentum: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0, le=1)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    proximal_mu: float = Field(default=0.0, ge=0, le=1_000)


def parse_training_params(value: Any) -> TrainingParams:
    """Validate a ``training`` block.

    Raises
    ------
    SpecInvalid
        With one ``{"loc", "msg"}`` item per problem in ``detail``.
    """
    if isinstance(value, TrainingParams):
        return value
    try:
        return TrainingParams.model_validate(value or {})
    except ValidationError as exc:
        raise SpecInvalid("the training spec is not valid", detail=spec_errors(exc)) from None


def derive_seed(*parts: object) -> int:
    """A seed in ``[0, 2**63)`` that is a stable function of ``parts``.

    E.g. ``derive_seed(job_seed, round_index, shard_index)``: the same on every machine
    and Python version (SHA-256, not ``hash``).
    """
    digest = hashlib.sha256("\x1f".join(repr(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)
