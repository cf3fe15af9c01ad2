"""Bounds on an update's size relative to its round (pure).

An absolute bound (``max_update_norm``) cannot tell a hostile update from an honest one:
honest norms depend on the model, the data and the round, and shrink as training
converges. Two bounds follow the round instead, both from norms already on record, so
the running sum and a rebuild from the bucket decide the same:

* **outliers are rejected**: an update over ``norm_outlier`` times the median norm of
  the previous round's accepted updates is refused (and counts against its peer);
* **every update is clipped** when its round closes, to ``norm_clip`` times the median
  norm of the round's accepted updates (as DP-FedAvg clips, with an adaptive bound), so
  one update can move the model at most that much whatever its weight.
"""

from __future__ import annotations

from statistics import median

from peertrain.common.events.training import RoundClosed
from peertrain.common.specs import AggregationSpec

from .state import JobState

__all__ = ["clip_factors", "outlier_bound"]


def outlier_bound(state: JobState, round_: int, spec: AggregationSpec) -> float | None:
    """The largest norm an update of ``round_`` may have relative to the round before
    (``None``: no relative bound, in round 1 or when turned off)."""
    if spec.norm_outlier is None:
        return None
    previous = state.previous_round(round_)
    norms = list(state.accepted_norms(previous).values()) if previous else []
    return spec.norm_outlier * median(norms) if norms else None


def clip_factors(state: JobState, closed: RoundClosed, spec: AggregationSpec) -> dict[int, float]:
    """The scale (< 1) for each included update over the round's clipping bound, by
    shard; empty when nothing is clipped."""
    if spec.norm_clip is None:
        return {}
    norms = state.accepted_norms(closed)
    if not norms:
        return {}
    bound = spec.norm_clip * median(norms.values())
    return {shard: bound / norm for shard, norm in norms.items() if norm > bound > 0}
