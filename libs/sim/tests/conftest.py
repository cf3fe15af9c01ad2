"""Small, quick data for simulations."""

from __future__ import annotations

import numpy as np
import pytest

from peertrain.sim import SimData, from_arrays


def blobs(rows: int = 240, features: int = 6, classes: int = 3, seed: int = 0) -> SimData:
    """Gaussian blobs, one per class, 20% held out."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, size=(classes, features))
    y = rng.integers(0, classes, size=rows)
    x = centres[y] + rng.normal(0, 1, size=(rows, features))
    cut = rows * 4 // 5
    return from_arrays(x[:cut], y[:cut], x[cut:], y[cut:])


@pytest.fixture(scope="session")
def small_data() -> SimData:
    return blobs()


SPEC = {
    "model": {"arch": "mlp", "hidden": [16]},
    "training": {"rounds": 3, "lr": 0.1, "batch_size": 16, "local_epochs": 1, "seed": 7},
}
