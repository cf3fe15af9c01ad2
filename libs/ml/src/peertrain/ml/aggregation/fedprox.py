"""FedProx: FedAvg on the server; the proximal term lives in the peers' training."""

from __future__ import annotations

import torch

from .fedavg import FedAvg

__all__ = ["FedProx"]


class FedProx(FedAvg):
    """FedProx (Li et al., 2020).

    The server side is FedAvg; each peer adds ``proximal_mu / 2 * ||w - w_global||^2`` to
    its loss (:func:`peertrain.ml.training.train_local` does when ``proximal_mu > 0``).
    ``proximal_mu`` is kept here so the job's config names it in one place.
    """

    name = "fedprox"

    def __init__(
        self,
        *,
        proximal_mu: float = 0.01,
        server_lr: float = 1.0,
        update_bound: float = 100.0,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(server_lr=server_lr, update_bound=update_bound, device=device)
        if proximal_mu < 0:
            raise ValueError(f"proximal_mu must be non-negative, not {proximal_mu}")
        self.proximal_mu = float(proximal_mu)
