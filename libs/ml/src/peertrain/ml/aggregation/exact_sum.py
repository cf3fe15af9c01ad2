"""An exact, order-independent weighted sum of state dicts.

Why: the platform promises bit-identical model versions for two runs with the same seed,
for duplicate deliveries and across restarts, while updates arrive in any order. A
floating-point running sum depends on the order of its additions; an exact sum does not.

How: every weighted term ``u * (w / reference_weight)`` is computed in float64 and rounded
to an integer multiple of a fixed grid ``2**g`` (one rounding per term, independent of the
others). Integers below ``2**53`` add exactly in float64, so the accumulator is the exact
sum of the rounded terms: the same bits for any order, any split across restarts, on the
CPU or on CUDA. The grid is fixed before the first update, from ``bound`` (every update
value is at most ``bound`` in magnitude: an update's L2 norm bounds each of its values)
and :data:`MAX_WEIGHT_RATIO` (the round's total weight is at most that many times the
reference weight), so ``|sum| <= 2**52`` grid units. With ``bound = 100`` the grid is
``2**-35`` (3e-11) of the reference-weighted mean, far below float32's resolution of any
parameter bigger than 1e-4.

Memory is one float64 accumulator per parameter: O(model), whatever the number of peers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import torch

from ..errors import AggregationError
from ..weights.codec import read_header, state_from_bytes, state_to_bytes
from .kernels import fold_exact

__all__ = ["MAX_WEIGHT_RATIO", "ExactSum"]

MAX_WEIGHT_RATIO = 1024.0
"""Most a round's total weight may exceed its reference weight by (a fixed headroom)."""


def _grid_exponent(bound: float) -> int:
    return math.ceil(math.log2(bound * MAX_WEIGHT_RATIO)) - 52


class ExactSum:
    """``sum_i (w_i / reference_weight) * update_i``, exactly, for named tensors.

    Parameters
    ----------
    like
        The tensors' names and shapes: the global model state, or name to shape.
    bound
        Upper bound on ``|value|`` of every update value (an L2-norm bound will do).
    reference_weight
        The weight the round expects in total (for FedAvg, the sum of the assigned
        shards' sizes). It fixes the grid, never the result's meaning; it must be the same
        for every replay of a round.
    device
        Where the accumulators live (CPU by default).
    """

    def __init__(
        self,
        like: Mapping[str, torch.Tensor] | Mapping[str, tuple[int, ...]],
        *,
        bound: float,
        reference_weight: float = 1.0,
        device: torch.device | str | None = None,
    ) -> None:
        if not (math.isfinite(bound) and bound > 0):
            raise ValueError(f"bound must be positive and finite, not {bound}")
        if not (math.isfinite(reference_weight) and reference_weight > 0):
            raise ValueError(f"reference_weight must be positive, not {reference_weight}")
        self.bound = float(bound)
        self.reference_weight = float(reference_weight)
        self.exponent = _grid_exponent(self.bound)
        self.shapes = {
            name: tuple(t.shape) if isinstance(t, torch.Tensor) else tuple(t)
            for name, t in like.items()
        }
        dev = torch.device(device) if device is not None else torch.device("cpu")
        self._acc = {
            name: torch.zeros(math.prod(shape), dtype=torch.float64, device=dev)
            for name, shape in self.shapes.items()
        }
        self._weights: list[float] = []

    @property
    def total_weight(self) -> float:
        """The weights added so far, summed exactly rounded (independent of order)."""
        return math.fsum(self._weights)

    def add(self, update: Mapping[str, torch.Tensor], weight: float) -> None:
        """Fold ``weight * update`` in.

        Raises
        ------
        AggregationError
            When names or shapes differ from ``like``, the weight is negative or not
            finite, or the total weight would exceed ``MAX_WEIGHT_RATIO`` times the
            reference weight.
        """
        if not (math.isfinite(weight) and weight >= 0):
            raise AggregationError(f"weight must be finite and non-negative, not {weight}")
        if set(update) != set(self.shapes):
            raise AggregationError("the update's tensors differ from the model's")
        for name, shape in self.shapes.items():
            if tuple(update[name].shape) != shape:
                raise AggregationError(f"{name}: shape {list(update[name].shape)} != {list(shape)}")
        if (self.total_weight + weight) > MAX_WEIGHT_RATIO * self.reference_weight:
            raise AggregationError(
                f"total weight {self.total_weight + weight:g} exceeds {MAX_WEIGHT_RATIO:g}x the "
                f"reference weight {self.reference_weight:g}: pass the round's expected total"
            )
        scale = math.ldexp(weight / self.reference_weight, -self.exponent)
        for name in sorted(self.shapes):
            fold_exact(self._acc[name], update[name].detach(), scale)
        self._weights.append(float(weight))

    def weighted_sum(self, multiplier: float = 1.0) -> dict[str, torch.Tensor]:
        """``multiplier * sum_i (w_i / reference_weight) * update_i`` as float64 tensors.

        Raises
        ------
        AggregationError
            When the accumulator left the exact range (an update broke ``bound``).
        """
        factor = math.ldexp(multiplier, self.exponent)
        out = {}
        for name, acc in self._acc.items():
            if acc.numel() and not float(acc.abs().max()) < 2.0**53:
                raise AggregationError(f"{name}: an update exceeded the bound {self.bound:g}")
            out[name] = (acc * factor).view(self.shapes[name])
        return out

    def mean(self, multiplier: float = 1.0) -> dict[str, torch.Tensor]:
        """``multiplier * sum_i w_i * update_i / sum_i w_i`` as float64 tensors."""
        total = self.total_weight
        if total <= 0:
            raise AggregationError("no weight was added: there is no mean")
        return self.weighted_sum(multiplier * self.reference_weight / total)

    def to_bytes(self, metadata: Mapping[str, str] | None = None) -> bytes:
        """A checkpoint (safetensors) from which :meth:`from_bytes` resumes exactly.

        ``metadata`` adds the caller's own string entries to the file's metadata.
        """
        meta = dict(metadata or {})
        meta |= {
            "bound": repr(self.bound),
            "reference_weight": repr(self.reference_weight),
            "weights": json.dumps([repr(w) for w in self._weights]),
            "shapes": json.dumps({k: list(v) for k, v in self.shapes.items()}),
        }
        return state_to_bytes(self._acc, metadata=meta)

    @classmethod
    def from_bytes(cls, data: bytes, *, device: torch.device | str | None = None) -> ExactSum:
        """Resume from :meth:`to_bytes`; later additions give the same bits as unbroken ones."""
        meta = read_header(data, len(data)).metadata
        try:
            shapes = {k: tuple(v) for k, v in json.loads(meta["shapes"]).items()}
            weights = [float(w) for w in json.loads(meta["weights"])]
            bound, reference = float(meta["bound"]), float(meta["reference_weight"])
        except (KeyError, ValueError, TypeError) as exc:
            raise AggregationError(f"not an ExactSum checkpoint: {exc}") from None
        out = cls(shapes, bound=bound, reference_weight=reference, device=device)
        acc = state_from_bytes(data)
        if set(acc) != set(shapes):
            raise AggregationError("checkpoint tensors differ from its shapes")
        for name, tensor in acc.items():
            out._acc[name].copy_(tensor.to(torch.float64))
        out._weights = weights
        return out
