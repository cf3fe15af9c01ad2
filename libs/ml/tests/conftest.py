"""Shared fixtures of peertrain.ml's unit tests (CPU only, small tensors)."""

from __future__ import annotations

import pytest
import torch


def random_state(seed: int, shapes: dict[str, tuple[int, ...]], scale: float = 1.0):
    gen = torch.Generator().manual_seed(seed)
    return {k: torch.randn(*s, generator=gen) * scale for k, s in shapes.items()}


SHAPES = {"a.weight": (7, 5), "a.bias": (7,), "b.weight": (3, 7), "b.bias": (3,)}


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """``train_local(threads=...)`` sets a process-wide value: leave it as it was."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def global_state():
    return random_state(0, SHAPES)


@pytest.fixture
def updates():
    """Six deltas with values spanning many magnitudes (ordering effects show up)."""
    out = []
    for i in range(6):
        state = random_state(100 + i, SHAPES, scale=0.1)
        for t in state.values():
            t.view(-1)[::3] *= 1e-6
            t.view(-1)[1::5] *= 30.0
        out.append(state)
    return out
