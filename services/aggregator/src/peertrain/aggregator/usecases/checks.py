"""Checked work: compare a just-accepted update with the other accepted updates of its
check group (``aggregation.verify``), on their decoded dense deltas.

The verdicts (``update.checked``) are appended with the ``update.accepted`` that made
them possible, in one append, so the orchestrator sees both or neither.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import torch

from peertrain.aggregator.domain.checks import partners, verdict
from peertrain.common.events.models import UpdateAccepted, UpdateChecked
from peertrain.ml.weights.agreement import relative_distance

from .storage import accepted_delta, model_state

if TYPE_CHECKING:
    from ..application import AggregatorApp
    from ..domain import JobMemory

__all__ = ["compare"]


async def compare(
    app: AggregatorApp,
    state: JobMemory,
    accepted: UpdateAccepted,
    delta: dict[str, torch.Tensor],
    model_version: int,
) -> list[UpdateChecked]:
    """The verdicts on ``accepted`` (decoded: ``delta``) against each accepted update of
    its group; none when it is in no group or the first of it accepted."""
    others = partners(state, accepted)
    if not others:
        return []
    assert state.configured is not None
    agg = state.configured.aggregation
    base = await model_state(app, state, model_version)
    verdicts = []
    for other in others:  # validated when it was accepted
        theirs = await accepted_delta(app, state, other.key, other.sha256, base)
        distance = await asyncio.to_thread(relative_distance, delta, theirs)
        verdicts.append(verdict(state, accepted, other, distance, agg.verify.tolerance))
    return verdicts
