"""FedProx: FedAvg on the server; the proximal term lives in the peers' training."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

import torch

from peertrain.common.specs import AggregationSpec

from .base import NO_SETUP, Setup
from .fedavg import FedAvg

__all__ = ["FedProx"]


class FedProx(FedAvg):
    """FedProx (Li et al., 2020).

    The server side is FedAvg; each peer adds ``proximal_mu / 2 * ||w - w_global||^2`` to
    its loss (:func:`peertrain.ml.training.train_local` does when ``proximal_mu > 0``).
    Peers learn ``proximal_mu`` from their task's ``training`` block (the job's own, where
    it is a field defaulting to 0); :meth:`from_spec` records the same value.
    """

    name = "fedprox"

    def __init__(
        self,
        *,
        proximal_mu: float = 0.01,
        server_lr: float = 1.0,
        update_bound: float = 100.0,
        device: torch.device | str | None = None,
        buffers: Iterable[str] = (),
    ) -> None:
        super().__init__(
            server_lr=server_lr, update_bound=update_bound, device=device, buffers=buffers
        )
        if proximal_mu < 0:
            raise ValueError(f"proximal_mu must be non-negative, not {proximal_mu}")
        self.proximal_mu = float(proximal_mu)

    @classmethod
    def from_spec(cls, spec: AggregationSpec, setup: Setup = NO_SETUP) -> Self:
        """With the ``proximal_mu`` the job's tasks carry (0 when it names none)."""
        mu = setup.training.proximal_mu
        return cls(
            proximal_mu=mu,
            server_lr=cls.server_lr_of(spec),
            update_bound=spec.update_bound,
            device=setup.device,
            buffers=setup.buffers,
        )
