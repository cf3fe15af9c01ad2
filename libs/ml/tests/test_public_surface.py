"""Every name in each package's ``__all__`` exists (httpx's habit)."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "peertrain.ml",
    "peertrain.ml.aggregation",
    "peertrain.ml.device",
    "peertrain.ml.errors",
    "peertrain.ml.export",
    "peertrain.ml.graph",
    "peertrain.ml.graph.ops",
    "peertrain.ml.graph.trace",
    "peertrain.ml.problems",
    "peertrain.ml.training",
    "peertrain.ml.weights",
    "peertrain.ml.zoo",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name):
    module = importlib.import_module(name)
    for item in module.__all__:
        if name == "peertrain.ml":
            importlib.import_module(f"peertrain.ml.{item}")
        else:
            assert hasattr(module, item), item


def test_errors_mix_in_builtins():
    from peertrain.common.errors import PeerTrainError
    from peertrain.ml import errors

    assert issubclass(errors.NotSafetensors, errors.UpdateInvalid)
    assert issubclass(errors.AggregationError, RuntimeError)
    assert all(issubclass(getattr(errors, n), PeerTrainError) for n in errors.__all__)
