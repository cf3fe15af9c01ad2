"""Bounds on an update's size relative to its round (pure).

An absolute bound (``max_update_norm``) cannot tell a hostile update from an honest one:
honest norms depend on the model, the data and the round, and shrink as training
converges. Two bounds follow the round instead, both measured within the closed round
from norms on record, so the running sum and a rebuild from the bucket decide the same:

* **outliers are left out**: the orchestrator's close leaves out an update over
  ``norm_outlier`` times the round's median norm (``round.closed`` ``dropped``, a strike
  for its peer; ``peertrain.orchestrator.domain.rounds.outliers``);
* **every update is clipped** when its round closes, to ``norm_clip`` times the median
  norm of the round's included updates (as DP-FedAvg clips, with an adaptive bound), so
  one update can move the model at most that much whatever its weight.
"""

from __future__ import annotations

from statistics import median

from peertrain.common.events.training import RoundClosed
from peertrain.common.specs import AggregationSpec

from .state import JobMemory

__all__ = ["clip_factors", "clip_scale"]


def clip_factors(state: JobMemory, closed: RoundClosed, spec: AggregationSpec) -> dict[int, float]:
    """The scale (< 1) for each included update over the round's clipping bound, by
    shard; empty when nothing is clipped."""
    return clip_scale(state.accepted_norms(closed), spec)


def clip_scale(norms: dict[int, float], spec: AggregationSpec) -> dict[int, float]:
    """The scale (< 1) for each of a round's updates (their norms by shard) over its
    clipping bound; empty when nothing is clipped."""
    if spec.norm_clip is None or not norms:
        return {}
    bound = spec.norm_clip * median(norms.values())
    return {shard: bound / norm for shard, norm in norms.items() if norm > bound > 0}
