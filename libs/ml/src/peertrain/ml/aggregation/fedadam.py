"""FedAdam: the mean delta is a pseudo-gradient for an Adam optimiser on the server."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Self

import torch

from peertrain.common.specs import AggregationSpec

from ..errors import AggregationError
from .base import NO_SETUP, Setup, into_dtype
from .fedavg import FedAvg

__all__ = ["FedAdam"]


class FedAdam(FedAvg):
    """FedAdam (Reddi et al., 2021, "Adaptive Federated Optimization").

    With ``d`` the sample-weighted mean delta of a round::

        m = beta1 * m + (1 - beta1) * d
        v = beta2 * v + (1 - beta2) * d**2
        w = w + server_lr * m / (sqrt(v) + tau)

    ``m`` and ``v`` (float64) and the step count are the server state, carried across
    rounds: persist :meth:`state_bytes` with each version so a restart resumes exactly.
    Buffers (``buffers``: BatchNorm's running statistics and counts) take no Adam step
    and have no moments: their new value is the global one plus the plain weighted mean
    of their deltas, as under FedAvg.
    """

    name = "fedadam"
    stateful = True
    default_server_lr = 0.1

    def __init__(
        self,
        *,
        server_lr: float = 0.1,
        beta1: float = 0.9,
        beta2: float = 0.99,
        tau: float = 1e-3,
        update_bound: float = 100.0,
        device: torch.device | str | None = None,
        buffers: Iterable[str] = (),
    ) -> None:
        super().__init__(
            server_lr=server_lr, update_bound=update_bound, device=device, buffers=buffers
        )
        if not (0 <= beta1 < 1 and 0 <= beta2 < 1 and tau > 0):
            raise ValueError("need 0 <= beta1, beta2 < 1 and tau > 0")
        self.beta1, self.beta2, self.tau = float(beta1), float(beta2), float(tau)
        self.step = 0
        self._m: dict[str, torch.Tensor] = {}
        self._v: dict[str, torch.Tensor] = {}

    @classmethod
    def from_spec(cls, spec: AggregationSpec, setup: Setup = NO_SETUP) -> Self:
        return cls(
            server_lr=cls.server_lr_of(spec),
            beta1=spec.beta1,
            beta2=spec.beta2,
            tau=spec.tau,
            update_bound=spec.update_bound,
            device=setup.device,
            buffers=setup.buffers,
        )

    def apply_mean(
        self, global_state: Mapping[str, torch.Tensor], mean: Mapping[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """One Adam step on the mean delta; updates ``m``, ``v`` and ``step``. Buffers
        take the plain mean delta."""
        out, new_m, new_v = {}, {}, {}
        for name, g in global_state.items():
            d = mean[name].to(g.device, torch.float64)
            if name in self.buffers:
                out[name] = into_dtype(g, g.detach().to(torch.float64) + d)
                continue
            m = self._m.get(name, torch.zeros_like(d)).to(d.device)
            v = self._v.get(name, torch.zeros_like(d)).to(d.device)
            m = self.beta1 * m + (1.0 - self.beta1) * d
            v = self.beta2 * v + (1.0 - self.beta2) * (d * d)
            step = self.server_lr * m / (torch.sqrt(v) + self.tau)
            out[name] = into_dtype(g, g.detach().to(torch.float64) + step)
            new_m[name], new_v[name] = m, v
        self._m, self._v = new_m, new_v
        self.step += 1
        return out

    def state_dict(self) -> dict[str, torch.Tensor]:
        """``m.<name>``, ``v.<name>`` (float64) and ``step``."""
        state = {"step": torch.tensor([self.step], dtype=torch.int64)}
        for name in self._m:
            state[f"m.{name}"] = self._m[name].detach().cpu()
            state[f"v.{name}"] = self._v[name].detach().cpu()
        return state

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s output."""
        if "step" not in state:
            raise AggregationError("FedAdam state has no step")
        m = {k[2:]: v.to(torch.float64) for k, v in state.items() if k.startswith("m.")}
        v = {k[2:]: t.to(torch.float64) for k, t in state.items() if k.startswith("v.")}
        if set(m) != set(v) or len(state) != 1 + len(m) + len(v):
            raise AggregationError("FedAdam state is malformed")
        self._m, self._v, self.step = m, v, int(state["step"].reshape(-1)[0])
