"""The strategy contract: a round's accumulator folds updates one at a time.

Usage, for every strategy::

    acc = strategy.begin_round(global_state, reference_weight=expected_total)
    acc.add(delta, weight, key=peer_id)   # as updates arrive, in any order
    new_state = acc.finish()               # when the round closes

Every strategy here gives the same bits for the same set of updates whatever their
arrival order, and a second ``add`` with a key already folded is ignored (``False``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Self

import torch

from peertrain.common.specs import AggregationName, AggregationSpec, TrainingParams

from ..errors import AggregationError
from ..weights.codec import state_from_bytes, state_to_bytes

__all__ = ["RoundAccumulator", "Setup", "Strategy", "into_dtype"]


class RoundAccumulator(ABC):
    """One round of one strategy: ``add`` updates, then ``finish`` once.

    Parameters
    ----------
    global_state
        The model version the updates are deltas of.
    """

    def __init__(self, global_state: Mapping[str, torch.Tensor]) -> None:
        self.global_state = dict(global_state)
        self._keys: set[str] = set()
        self._weights: list[float] = []
        self._done = False

    @property
    def count(self) -> int:
        """Updates folded so far."""
        return len(self._weights)

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of the updates folded so far, sorted."""
        return tuple(sorted(self._keys))

    @property
    def total_weight(self) -> float:
        """Sum of the weights folded so far (exactly rounded, independent of order)."""
        return math.fsum(self._weights)

    def add(
        self,
        update: Mapping[str, torch.Tensor],
        weight: float = 1.0,
        *,
        key: str | None = None,
        group: str | None = None,
    ) -> bool:
        """Fold one validated update (a delta of ``global_state``) with its weight.

        Parameters
        ----------
        update
            The delta, already checked by :func:`peertrain.ml.weights.validate_update`
            (a norm bound at most the strategy's ``update_bound``).
        weight
            For FedAvg-like strategies, the sample count the *server* knows for this
            peer's shard. Robust strategies (median, trimmed mean) ignore it.
        key
            Identifies the sender (the peer id): a key already folded is ignored.
        group
            What the update is of (its shard): the strategies that keep one update per
            group (``calibration: cached``) need it; the others ignore it.

        Returns
        -------
        bool
            ``False`` when ``key`` was already folded (a duplicate delivery).
        """
        if self._done:
            raise AggregationError("this round was already finished")
        if key is not None and key in self._keys:
            return False
        self._add(update, float(weight), key, group)
        if key is not None:
            self._keys.add(key)
        self._weights.append(float(weight))
        return True

    def finish(self) -> dict[str, torch.Tensor]:
        """The new global state (same names, dtypes and devices as ``global_state``).

        Raises
        ------
        AggregationError
            When nothing was folded, or the round was already finished.
        """
        if self._done:
            raise AggregationError("this round was already finished")
        if not self._weights:
            raise AggregationError("no update was folded in this round")
        try:
            return self._finish()
        finally:
            self._done = True
            self.close()

    def close(self) -> None:  # noqa: B027 - a no-op unless the round holds resources
        """Release what the round holds (temporary files); idempotent."""

    def __enter__(self) -> RoundAccumulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def _add(
        self,
        update: Mapping[str, torch.Tensor],
        weight: float,
        key: str | None,
        group: str | None,
    ) -> None:
        """Fold one update (after the duplicate check)."""

    @abstractmethod
    def _finish(self) -> dict[str, torch.Tensor]:
        """Compute the new state from what was folded."""


@dataclass(frozen=True)
class Setup:
    """What a strategy is built with besides its ``aggregation`` block.

    Attributes
    ----------
    training
        The job's ``training`` block (FedProx records its ``proximal_mu``).
    device
        Accumulation device (the FedAvg family).
    spill_dir
        Temporary folder (the robust strategies).
    buffers
        The state dict's buffers (BatchNorm's running statistics and batch counts:
        :func:`peertrain.ml.weights.buffer_names` of the built model). Every strategy
        averages them plainly (FedAvg's weighted mean; the robust strategies' own
        reduction), never scaled by ``server_lr`` nor moved by a server optimiser: they
        are statistics of the data, not weights a step is taken on.
    """

    training: TrainingParams = field(default_factory=TrainingParams)
    device: torch.device | str | None = None
    spill_dir: str | Path | None = None
    buffers: frozenset[str] = frozenset()


def into_dtype(g: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``value`` (float64, the new value of ``g``) in ``g``'s dtype and device.

    Integer tensors are counters (BatchNorm's ``num_batches_tracked``): rounded to the
    nearest integer (half to even) and never below zero, so an int64 counter stays a
    sane int64; floating-point tensors are rounded once into their dtype.
    """
    value = value.to(g.device)
    if g.is_floating_point():
        return value.to(g.dtype)
    return torch.round(value).clamp_(min=0).to(g.dtype)


NO_SETUP = Setup()
"""Nothing besides the spec (the default of :meth:`Strategy.from_spec`)."""


class Strategy(ABC):
    """An aggregation algorithm: makes round accumulators, may carry server state.

    Subclasses set ``name``, implement :meth:`from_spec` and :meth:`begin_round`;
    stateful ones (FedAdam) set ``stateful`` and override :meth:`state_dict` and
    :meth:`load_state_dict`, so a restarted aggregator resumes with the same state
    (persist :meth:`state_bytes` with each model version).
    """

    name: ClassVar[AggregationName]
    """The name a job's ``aggregation.strategy`` gives (the registry's key)."""

    stateful: ClassVar[bool] = False
    """Whether the strategy keeps server state between rounds (:meth:`state_bytes`)."""

    default_server_lr: ClassVar[float] = 1.0
    """The server step when the spec's ``server_lr`` is ``None``."""

    buffers: frozenset[str] = frozenset()
    """The state names averaged plainly (:attr:`Setup.buffers`); set by subclasses."""

    @classmethod
    @abstractmethod
    def from_spec(cls, spec: AggregationSpec, setup: Setup = NO_SETUP) -> Self:
        """The strategy as a job's ``aggregation`` block configures it, with what
        ``setup`` holds besides (see :class:`Setup`)."""

    @classmethod
    def server_lr_of(cls, spec: AggregationSpec) -> float:
        """The spec's ``server_lr``, or this strategy's default."""
        return spec.server_lr if spec.server_lr is not None else cls.default_server_lr

    @abstractmethod
    def begin_round(
        self, global_state: Mapping[str, torch.Tensor], *, reference_weight: float = 1.0
    ) -> RoundAccumulator:
        """Start folding the updates of one round.

        Parameters
        ----------
        global_state
            The model version the round's updates are deltas of.
        reference_weight
            The total weight the round expects (sum of the assigned shards' sizes); it
            sizes the exact accumulator's grid and must be the same on every replay.
        """

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Server-side state as tensors (empty for stateless strategies)."""
        return {}

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s output."""
        if state:
            raise AggregationError(f"{self.name} keeps no state, got {sorted(state)[:5]}")

    def state_bytes(self) -> bytes:
        """:meth:`state_dict` as safetensors bytes."""
        return state_to_bytes(self.state_dict(), metadata={"strategy": self.name})

    def load_state_bytes(self, data: bytes) -> None:
        """Restore from :meth:`state_bytes`."""
        self.load_state_dict(state_from_bytes(data))
