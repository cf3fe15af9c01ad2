"""Asynchronous rounds (FedBuff) as the aggregator sees them: staleness, pure.

In an asynchronous job (``aggregation.mode: async``) an update is a candidate even when
its task's round has closed: it goes into the buffer of the round open now, which builds
on the newest version. Its staleness is how many versions that is past the version its
task trained from; more than ``max_staleness`` and it is refused (``too_stale``, not a
strike). A closed round's version folds each included update with weight
``samples * factor(s)``, ``s = round - 1 - base_version`` (logged facts only, so a
rebuild, a replay or another instance gives the same bits).
"""

from __future__ import annotations

from peertrain.common.events.training import IncludedUpdate, RoundClosed, RoundOpened
from peertrain.common.specs import AggregationSpec
from peertrain.ml.aggregation.staleness import Staleness

from . import codes
from .state import JobMemory

__all__ = ["fold_target", "newest_base", "staleness_factor", "staleness_of", "too_stale"]


def staleness_of(spec: AggregationSpec) -> Staleness:
    """The job's staleness rule (``max_staleness``, ``staleness_exponent``)."""
    return Staleness(max_staleness=spec.max_staleness, exponent=spec.staleness_exponent)


def newest_base(state: JobMemory) -> int | None:
    """The version the next update is folded onto: the open round's base, or (between a
    round's close and the next opening) the version the closed round builds."""
    if not state.opened:
        return None
    round_, attempt = max(state.opened)
    if state.is_open(round_, attempt):
        return state.opened[(round_, attempt)].model_version
    return round_


def too_stale(state: JobMemory, opened: RoundOpened) -> tuple[str, str] | None:
    """``(code, reason)`` when an update of a task given in ``opened`` is too stale."""
    assert state.configured is not None
    newest = newest_base(state)
    bound = state.configured.aggregation.max_staleness
    if newest is None or newest - opened.model_version <= bound:
        return None
    return (
        codes.TOO_STALE,
        f"its task trained from version {opened.model_version}, {newest - opened.model_version} "
        f"versions before the newest ({newest}); aggregation.max_staleness is {bound}",
    )


def fold_target(state: JobMemory, opened: RoundOpened) -> tuple[RoundOpened, float] | None:
    """Where an accepted update of a task given in ``opened`` is summed as it arrives, and
    the factor of its weight there: its own round in a synchronous job; the round open
    now in an asynchronous one (``None`` when none is, or it would be too stale)."""
    assert state.configured is not None
    spec = state.configured.aggregation
    if not spec.is_async:
        return opened, 1.0
    if not state.opened:
        return None
    key = max(state.opened)
    if not state.is_open(*key):
        return None
    current = state.opened[key]
    s = current.model_version - opened.model_version
    rule = staleness_of(spec)
    return (current, rule.factor(s)) if rule.admits(s) else None


def staleness_factor(spec: AggregationSpec, closed: RoundClosed, inc: IncludedUpdate) -> float:
    """The factor of an included update's weight in ``closed``'s version (1.0 in a
    synchronous job, or for an update of the round's own base)."""
    if not spec.is_async or inc.base_version is None:
        return 1.0
    rule = staleness_of(spec)
    s = max(0, closed.round - 1 - inc.base_version)
    return float(rule.factor(min(s, rule.max_staleness)))
