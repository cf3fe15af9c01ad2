"""Checked work: honest repeats agree, lazy updates do not, the choice is stable."""

from __future__ import annotations

import math

import torch

from peertrain.ml.weights.agreement import agree, relative_distance


def _update(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(50, 20, generator=g), "n": torch.tensor(3)}


def test_the_same_work_agrees_and_lazy_work_does_not() -> None:
    honest = _update(0)
    repeat = {k: v + 1e-7 * v if v.is_floating_point() else v for k, v in honest.items()}
    assert agree(honest, repeat)
    assert not agree(honest, {k: torch.zeros_like(v) for k, v in honest.items()})
    assert not agree(honest, _update(1))  # another round's update, replayed
    assert relative_distance(honest, {"w": honest["w"]}) == math.inf
    assert relative_distance({"w": torch.zeros(3)}, {"w": torch.zeros(3)}) == 0.0
