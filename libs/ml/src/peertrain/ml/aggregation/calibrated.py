"""Cached update calibration (CA2FL: Wang et al., ICLR 2024) around a FedAvg-family strategy.

In an asynchronous job each version is built from the ``K`` updates buffered since the
last, and on uneven peers the fast ones fill most buffers: on a skewed split the model
drifts toward their shards' data. With ``calibration: cached`` the server keeps the
latest update of every shard (the *cache*) and a version steps on::

    step = h + sum_i w_i * (delta_i - h[g_i]) / sum_i w_i

``h`` is the weighted mean of the cached updates (each with the weight it was folded
with), ``h[g_i]`` the cached update of ``delta_i``'s shard (``h`` itself for a shard not
cached yet); then the buffer's updates replace their shards' entries (a shard twice in
one buffer: their weighted mean). Every shard that has sent an update counts in every
version, and the buffer moves the step by what its updates changed since. With nothing
cached yet the step is the buffer's plain weighted mean. The inner strategy takes its
step on the calibrated mean as it would on the plain one (``server_lr``; FedAdam's
moments).

Only the floating-point weights are calibrated: the buffers (BatchNorm's statistics)
and integer counters keep the buffer's plain mean, as every strategy averages them.

Bits: the buffer's mean is the inner strategy's exact sum (independent of the arrival
order); the correction is computed in float64 from the updates sorted by key; the cache
is the server state stored with each version (the deltas as folded, float32, and their
weights, float64). A rebuild, a replay or another instance gives the same bits.
Memory and storage: one update per shard, besides the buffer's own updates until the
version is built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar, Self

import torch

from peertrain.common.specs import AggregationName, AggregationSpec

from ..errors import AggregationError
from .base import NO_SETUP, RoundAccumulator, Setup, Strategy
from .fedadam import FedAdam
from .fedavg import FedAvg, MeanAccumulator
from .fedprox import FedProx

__all__ = ["CALIBRATED", "Calibrated", "CalibratedAccumulator"]

CALIBRATED: dict[str, type[FedAvg]] = {cls.name: cls for cls in (FedAvg, FedProx, FedAdam)}
"""The strategies calibration wraps, by name (the spec's ``CALIBRATED_STRATEGIES``)."""

Tensors = dict[str, torch.Tensor]


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64)


def _weighted_mean(entries: list[tuple[float, Tensors]], names: list[str]) -> Tensors:
    """``sum_j w_j t_j / sum_j w_j`` of each of ``names``, in float64, summed in the order
    given (callers sort, so every path gives the same bits)."""
    total = math.fsum(w for w, _ in entries)
    out: Tensors = {}
    for name in names:
        acc = torch.zeros_like(_f64(entries[0][1][name]))
        for w, tensors in entries:
            acc += w * _f64(tensors[name])
        out[name] = acc / total
    return out


class Calibrated(Strategy):
    """A FedAvg-family strategy whose buffered versions are calibrated by a cache of
    every shard's latest update (see the module's text).

    Parameters
    ----------
    inner
        The strategy that takes the step (FedAvg, FedProx or FedAdam).
    """

    stateful: ClassVar[bool] = True

    def __init__(self, inner: FedAvg) -> None:
        self.inner = inner
        self.name: AggregationName = inner.name  # type: ignore[misc]
        self.buffers = inner.buffers
        self.cache: dict[str, tuple[float, Tensors]] = {}
        """Each shard's latest update (as folded) and its weight."""

    @classmethod
    def from_spec(cls, spec: AggregationSpec, setup: Setup = NO_SETUP) -> Self:
        inner = CALIBRATED.get(spec.strategy)
        if inner is None:
            raise AggregationError(f"calibration does not work with {spec.strategy}")
        return cls(inner.from_spec(spec, setup))

    def calibrated(self, name: str, tensor: torch.Tensor) -> bool:
        """Whether tensor ``name`` (of the model state) is calibrated: floating-point
        weights, not buffers."""
        return tensor.is_floating_point() and name not in self.buffers

    def begin_round(
        self, global_state: Mapping[str, torch.Tensor], *, reference_weight: float = 1.0
    ) -> CalibratedAccumulator:
        inner = self.inner.begin_round(global_state, reference_weight=reference_weight)
        return CalibratedAccumulator(self, inner)

    def cached_mean(self, names: list[str]) -> Tensors | None:
        """The weighted mean of the cached updates (float64), ``None`` when none is."""
        if not math.fsum(w for w, _ in self.cache.values()) > 0:
            return None
        return _weighted_mean([self.cache[g] for g in sorted(self.cache)], names)

    def state_dict(self) -> dict[str, torch.Tensor]:
        state = {f"inner/{k}": v for k, v in self.inner.state_dict().items()}
        for group, (w, tensors) in self.cache.items():
            state[f"weight/{group}"] = torch.tensor([w], dtype=torch.float64)
            for name, t in tensors.items():
                state[f"cache/{group}/{name}"] = t.detach().cpu()
        return state

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        inner: Tensors = {}
        weights: dict[str, float] = {}
        cache: dict[str, Tensors] = {}
        for key, value in state.items():
            kind, _, rest = key.partition("/")
            if kind == "inner":
                inner[rest] = value
            elif kind == "weight":
                weights[rest] = float(value.reshape(-1)[0])
            elif kind == "cache" and "/" in rest:
                group, _, name = rest.partition("/")
                cache.setdefault(group, {})[name] = value
            else:
                raise AggregationError(f"calibration state has an unknown entry {key!r}")
        if set(weights) != set(cache):
            raise AggregationError("calibration state: cached updates and weights differ")
        self.inner.load_state_dict(inner)
        self.cache = {g: (weights[g], cache[g]) for g in weights}


class CalibratedAccumulator(RoundAccumulator):
    """One buffered version of :class:`Calibrated`: the inner strategy's exact sum, and
    the buffer's calibrated updates kept until :meth:`finish`."""

    def __init__(self, strategy: Calibrated, inner: MeanAccumulator) -> None:
        super().__init__(inner.global_state)
        self._strategy = strategy
        self._inner = inner
        self._names = [n for n, t in inner.global_state.items() if strategy.calibrated(n, t)]
        self._pending: list[tuple[str, str, Tensors, float]] = []

    def _add(
        self,
        update: Mapping[str, torch.Tensor],
        weight: float,
        key: str | None,
        group: str | None,
    ) -> None:
        if group is None:
            raise AggregationError("a calibrated round needs each update's group (its shard)")
        self._inner.add(update, weight, key=key)
        kept = {name: update[name].detach().cpu() for name in self._names}
        self._pending.append((key or "", group, kept, weight))

    def _finish(self) -> dict[str, torch.Tensor]:
        strategy = self._strategy
        mean = dict(self._inner.mean())
        pending = sorted(self._pending, key=lambda p: (p[0], p[1]))
        cached = strategy.cached_mean(self._names)
        total = math.fsum(w for *_, w in pending)
        if cached is not None and total > 0:
            for name in self._names:
                refs = torch.zeros_like(cached[name])
                for _, group, _, w in pending:
                    entry = strategy.cache.get(group)
                    refs += w * (_f64(entry[1][name]) if entry is not None else cached[name])
                mean[name] = _f64(mean[name]) + cached[name] - refs / total
        new_state = strategy.inner.apply_mean(self.global_state, mean)
        strategy.cache.update(self._latest(pending))
        return new_state

    def _latest(
        self, pending: list[tuple[str, str, Tensors, float]]
    ) -> dict[str, tuple[float, Tensors]]:
        """Each buffered shard's new cache entry: its update, or the weighted mean of its
        updates (in key order) when the buffer holds several."""
        by_group: dict[str, list[tuple[float, Tensors]]] = {}
        for _, group, tensors, w in pending:
            by_group.setdefault(group, []).append((w, tensors))
        out: dict[str, tuple[float, Tensors]] = {}
        for group, items in by_group.items():
            weight = math.fsum(w for w, _ in items)
            if len(items) == 1 or not weight > 0:
                out[group] = (weight, items[-1][1])
                continue
            mean = _weighted_mean(items, self._names)
            out[group] = (weight, {n: t.to(items[0][1][n].dtype) for n, t in mean.items()})
        return out

    def close(self) -> None:
        self._inner.close()
        self._pending.clear()
