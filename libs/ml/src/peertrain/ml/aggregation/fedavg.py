"""FedAvg: the new model is the global one plus the sample-weighted mean of the deltas."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import ClassVar, Self

import torch

from peertrain.common.specs import AggregationName, AggregationSpec

from ..errors import AggregationError
from ..weights.codec import read_header
from .base import NO_SETUP, RoundAccumulator, Setup, Strategy, into_dtype
from .exact_sum import ExactSum

__all__ = ["FedAvg", "MeanAccumulator", "counters_capped"]


def counters_capped(update: Mapping[str, torch.Tensor], bound: float) -> Mapping[str, torch.Tensor]:
    """``update`` with its integer tensors (counters: ``num_batches_tracked``) clamped
    to ``[0, bound]``.

    Counters only grow, and the L2 norm check leaves them out, so nothing else bounds
    them: the cap keeps the exact sum in its range whatever a peer sends (a counter
    then advances at most ``bound`` a round, which only BatchNorm with
    ``momentum=None`` reads).
    """
    if all(t.is_floating_point() for t in update.values()):
        return update
    return {
        name: t if t.is_floating_point() else t.clamp(0, int(bound)) for name, t in update.items()
    }


class MeanAccumulator(RoundAccumulator):
    """Folds updates into an :class:`ExactSum`; the strategy turns the mean into weights.

    Memory is one float64 value per parameter, whatever the number of updates.
    """

    def __init__(
        self,
        strategy: FedAvg,
        global_state: Mapping[str, torch.Tensor],
        total: ExactSum,
    ) -> None:
        super().__init__(global_state)
        self._strategy = strategy
        self._sum = total

    def _add(
        self,
        update: Mapping[str, torch.Tensor],
        weight: float,
        key: str | None,
        group: str | None,
    ) -> None:
        self._sum.add(counters_capped(update, self._strategy.update_bound), weight)

    def mean(self) -> dict[str, torch.Tensor]:
        """The weighted mean of the deltas folded so far (float64), what :meth:`finish`
        steps on."""
        return self._sum.mean()

    def _finish(self) -> dict[str, torch.Tensor]:
        return self._strategy.apply_mean(self.global_state, self.mean())

    def checkpoint(self) -> bytes:
        """The round so far (safetensors); :meth:`FedAvg.resume_round` continues it exactly."""
        return self._sum.to_bytes(metadata={"keys": json.dumps(sorted(self._keys))})


class FedAvg(Strategy):
    """Federated averaging (McMahan et al., 2017), weighted by the server's sample counts.

    Parameters
    ----------
    server_lr
        Step applied to the mean delta (1.0 is plain FedAvg).
    update_bound
        Bound on every update's L2 norm (the ``max_update_norm`` updates were validated
        against); it sizes the exact accumulator.
    device
        Where to accumulate (CPU by default; results are identical on CUDA).
    buffers
        State names that are buffers: their new value is the global one plus the plain
        weighted mean of their deltas, never scaled by ``server_lr``.
    """

    name: ClassVar[AggregationName] = "fedavg"

    def __init__(
        self,
        *,
        server_lr: float = 1.0,
        update_bound: float = 100.0,
        device: torch.device | str | None = None,
        buffers: Iterable[str] = (),
    ) -> None:
        if not server_lr > 0:
            raise ValueError(f"server_lr must be positive, not {server_lr}")
        self.server_lr = float(server_lr)
        self.update_bound = float(update_bound)
        self.device = device
        self.buffers = frozenset(buffers)

    @classmethod
    def from_spec(cls, spec: AggregationSpec, setup: Setup = NO_SETUP) -> Self:
        return cls(
            server_lr=cls.server_lr_of(spec),
            update_bound=spec.update_bound,
            device=setup.device,
            buffers=setup.buffers,
        )

    def begin_round(
        self, global_state: Mapping[str, torch.Tensor], *, reference_weight: float = 1.0
    ) -> MeanAccumulator:
        total = ExactSum(
            global_state,
            bound=self.update_bound,
            reference_weight=reference_weight,
            device=self.device,
        )
        return MeanAccumulator(self, global_state, total)

    def resume_round(
        self, global_state: Mapping[str, torch.Tensor], checkpoint: bytes
    ) -> MeanAccumulator:
        """Continue a round from :meth:`MeanAccumulator.checkpoint`."""
        total = ExactSum.from_bytes(checkpoint, device=self.device)
        if total.shapes != {k: tuple(v.shape) for k, v in global_state.items()}:
            raise AggregationError("the checkpoint is of another model")
        acc = MeanAccumulator(self, global_state, total)
        acc._keys = set(json.loads(read_header(checkpoint, len(checkpoint)).metadata["keys"]))
        acc._weights = list(total._weights)
        return acc

    def apply_mean(
        self, global_state: Mapping[str, torch.Tensor], mean: Mapping[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """``global + server_lr * mean`` (``global + mean`` for buffers), rounded once
        into each tensor's dtype (:func:`~.base.into_dtype`)."""
        out = {}
        for name, g in global_state.items():
            step = mean[name].to(g.device)
            if self.server_lr != 1.0 and name not in self.buffers:
                step = step * self.server_lr
            out[name] = into_dtype(g, g.detach().to(torch.float64) + step)
        return out
