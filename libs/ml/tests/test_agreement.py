"""Checked work: honest repeats agree, lazy updates do not, the choice is stable."""

from __future__ import annotations

import math

import torch

from peertrain.ml.weights.agreement import agree, checked, relative_distance


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


def test_which_tasks_are_checked_is_stable_and_near_the_share() -> None:
    picks = [checked(7, r, s, 0.1) for r in range(1, 101) for s in range(20)]
    assert picks == [checked(7, r, s, 0.1) for r in range(1, 101) for s in range(20)]
    assert 0.07 < sum(picks) / len(picks) < 0.13
    assert not any(checked(7, 1, s, 0.0) for s in range(20))
    assert all(checked(7, 1, s, 1.0) for s in range(20))
