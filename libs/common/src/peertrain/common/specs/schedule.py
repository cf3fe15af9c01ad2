"""A job's learning-rate schedule over its rounds, and the rate a round trains at.

Torch-free: the orchestrator, the console and the peers compute the same value with
:func:`lr_for_round`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

if TYPE_CHECKING:
    from .training import TrainingParams

__all__ = [
    "ConstantSchedule",
    "CosineSchedule",
    "LrSchedule",
    "StepSchedule",
    "lr_for_round",
]


class _Schedule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    warmup_rounds: int = Field(default=0, ge=0, le=10_000)
    """Rounds ``1..warmup_rounds`` train at ``lr * round / warmup_rounds``; 0: none."""


class ConstantSchedule(_Schedule):
    """``lr`` in every round (after the warmup, if any): the default."""

    kind: Literal["constant"] = "constant"


class CosineSchedule(_Schedule):
    """After the warmup, ``lr`` decays along a half cosine to ``min_lr``, which it
    reaches at the end of the job's last round."""

    kind: Literal["cosine"] = "cosine"
    min_lr: float = Field(default=0.0, ge=0, le=10)


class StepSchedule(_Schedule):
    """After the warmup, ``lr`` is multiplied by ``gamma`` every ``step_rounds`` rounds."""

    kind: Literal["step"] = "step"
    step_rounds: int = Field(default=10, ge=1, le=10_000)
    gamma: float = Field(default=0.1, gt=0, le=1)


def _kind(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("kind", "constant")
    return getattr(value, "kind", None)


LrSchedule = Annotated[
    Annotated[ConstantSchedule, Tag("constant")]
    | Annotated[CosineSchedule, Tag("cosine")]
    | Annotated[StepSchedule, Tag("step")],
    Discriminator(
        _kind,
        custom_error_type="schedule_kind",
        custom_error_message="kind must be constant, cosine or step",
    ),
]
"""The ``training.lr_schedule`` block, told apart by its ``kind`` (default ``constant``)."""


def lr_for_round(params: TrainingParams, round_: int) -> float:
    """The learning rate round ``round_`` (1-based) of the job trains at.

    Rounds ``1..W`` (``W = warmup_rounds``) climb linearly from ``lr / W`` to ``lr``;
    then ``constant`` keeps ``lr``, ``step`` multiplies it by ``gamma`` every
    ``step_rounds`` rounds, and ``cosine`` follows ``min_lr + (lr - min_lr) * (1 +
    cos(pi * t)) / 2`` with ``t = (round - 1 - W) / (rounds - W)``: ``lr`` in round
    ``W + 1``, ``min_lr`` at the end of the last round (so the last round still learns).
    A round past ``rounds`` is given the last round's progress for ``cosine``.

    Raises
    ------
    ValueError
        ``round_`` below 1.
    """
    if round_ < 1:
        raise ValueError(f"rounds are numbered from 1, not {round_}")
    lr, schedule = params.lr, params.lr_schedule
    warmup = schedule.warmup_rounds
    if round_ < warmup:
        return lr * round_ / warmup
    after = round_ - 1 - warmup  # rounds done since the warmup, when >= 0
    if isinstance(schedule, StepSchedule) and after > 0:
        return lr * schedule.gamma ** (after // schedule.step_rounds)
    if isinstance(schedule, CosineSchedule) and after > 0:
        span = max(1, params.rounds - warmup)
        t = min(after, span - 1) / span
        return schedule.min_lr + (lr - schedule.min_lr) * (1 + math.cos(math.pi * t)) / 2
    return lr
