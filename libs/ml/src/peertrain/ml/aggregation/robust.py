"""Coordinate-wise robust aggregation over spilled updates (median, trimmed mean).

Every coordinate's values are sorted, then reduced in sorted order: the result depends
only on the multiset of updates, never on their arrival order. Weights are ignored, as in
the usual definitions (Yin et al., 2018): a robust strategy must not let one peer's
claimed, or even the server's, sample count outweigh the others.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Self

import numpy as np
import torch

from peertrain.common.specs import AggregationSpec

from ..errors import AggregationError
from .base import NO_SETUP, RoundAccumulator, Setup, Strategy, into_dtype
from .spill import SpillStore

__all__ = ["RobustStrategy", "SpillAccumulator"]

_NUMPY = {
    torch.float32: np.float32,
    torch.float64: np.float64,
    torch.float16: np.float16,
    torch.int64: np.int64,  # counters (BatchNorm's num_batches_tracked)
}


class SpillAccumulator(RoundAccumulator):
    """Spills each update to disk; at the end reduces chunk by chunk.

    Memory: the model, plus ``chunk_bytes`` of values read back, plus the sorted copy.
    """

    def __init__(
        self,
        strategy: RobustStrategy,
        global_state: Mapping[str, torch.Tensor],
        *,
        directory: str | Path | None,
        chunk_bytes: int,
    ) -> None:
        super().__init__(global_state)
        self._strategy = strategy
        self._chunk_bytes = chunk_bytes
        self._store = SpillStore(directory)

    def _add(
        self,
        update: Mapping[str, torch.Tensor],
        weight: float,
        key: str | None,
        group: str | None,
    ) -> None:
        if set(update) != set(self.global_state):
            raise AggregationError("the update's tensors differ from the model's")
        for name, g in self.global_state.items():
            u = update[name]
            if u.shape != g.shape or u.dtype != g.dtype or u.dtype not in _NUMPY:
                raise AggregationError(f"{name}: {u.dtype}{list(u.shape)} does not fit the model")
        self._store.put(update)

    def _finish(self) -> dict[str, torch.Tensor]:
        k = len(self._store)
        out = {}
        for name in sorted(self.global_state):
            g = self.global_state[name]
            dtype = _NUMPY[g.dtype]
            n = g.numel()
            chunk = max(1024, self._chunk_bytes // (k * np.dtype(dtype).itemsize))
            buf = np.empty((k, min(chunk, max(n, 1))), dtype=dtype)
            reduced = torch.empty(n, dtype=torch.float64)
            for start in range(0, n, chunk):
                stop = min(n, start + chunk)
                rows = torch.from_numpy(self._store.rows(name, start, stop, buf))
                ordered = torch.sort(rows.to(torch.float64), dim=0).values
                reduced[start:stop] = self._strategy.reduce(ordered)
            step = reduced.view(g.shape)
            if self._strategy.server_lr != 1.0 and name not in self._strategy.buffers:
                step = step * self._strategy.server_lr
            out[name] = into_dtype(g, g.detach().to(torch.float64) + step.to(g.device))
        return out

    def close(self) -> None:
        self._store.close()


class RobustStrategy(Strategy):
    """Base of coordinate-wise robust strategies: subclasses implement :meth:`reduce`.

    Parameters
    ----------
    server_lr
        Step applied to the robust aggregate of the deltas.
    spill_dir
        Where temporary files go (the system's temp dir by default).
    chunk_bytes
        Bytes of update values read back at once (all updates together).
    buffers
        State names that are buffers: reduced as the parameters are, never scaled by
        ``server_lr``.
    """

    def __init__(
        self,
        *,
        server_lr: float = 1.0,
        spill_dir: str | Path | None = None,
        chunk_bytes: int = 4 * 1024 * 1024,
        buffers: Iterable[str] = (),
    ) -> None:
        if not server_lr > 0:
            raise ValueError(f"server_lr must be positive, not {server_lr}")
        self.server_lr = float(server_lr)
        self.buffers = frozenset(buffers)
        self.spill_dir = spill_dir
        self.chunk_bytes = int(chunk_bytes)

    @classmethod
    def from_spec(cls, spec: AggregationSpec, setup: Setup = NO_SETUP) -> Self:
        return cls(
            server_lr=cls.server_lr_of(spec), spill_dir=setup.spill_dir, buffers=setup.buffers
        )

    def begin_round(
        self, global_state: Mapping[str, torch.Tensor], *, reference_weight: float = 1.0
    ) -> SpillAccumulator:
        return SpillAccumulator(
            self, global_state, directory=self.spill_dir, chunk_bytes=self.chunk_bytes
        )

    @abstractmethod
    def reduce(self, ordered: torch.Tensor) -> torch.Tensor:
        """Reduce ``(K, n)`` float64 values, sorted along dim 0, to ``n`` values."""
