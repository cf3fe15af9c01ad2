"""final.pt (plain torch, weights_only) and final.safetensors."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import pytest
import torch

from peertrain.ml.errors import NotSafetensors
from peertrain.ml.export.write import (
    final_pt_bytes,
    load_final,
    load_final_safetensors,
    save_final,
)
from peertrain.ml.zoo import build_model

SPEC = {"arch": "cnn", "channels": [3], "hidden": 8, "dropout": 0.1}
FEATURES = {"image_shape": [1, 6, 6], "num_classes": 4}


def test_final_pt_loads_in_plain_torch_in_a_fresh_process(tmp_path):
    model = build_model(SPEC, FEATURES, seed=5).eval()
    pt, _ = save_final(tmp_path, SPEC, FEATURES, model.state_dict())
    x = torch.rand(3, 1, 6, 6, generator=torch.Generator().manual_seed(0))
    torch.save(x, tmp_path / "x.pt")
    code = textwrap.dedent(
        f"""
        import torch
        final = torch.load({str(pt)!r}, weights_only=True)
        assert set(final) == {{"format", "spec", "feature_spec", "architecture", "state_dict"}}
        assert final["spec"]["arch"] == "cnn" and final["feature_spec"]["num_classes"] == 4
        print(sorted(final["state_dict"]))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "features.0.weight" in out.stdout
    rebuilt = load_final(pt)
    assert torch.equal(rebuilt.model(x), model(x)) and not rebuilt.model.training


def test_final_safetensors_round_trip(tmp_path):
    spec, features = {"arch": "mlp", "hidden": [5]}, {"input_size": 3, "num_classes": 2}
    model = build_model(spec, features)
    _, st = save_final(tmp_path, spec, features, model.state_dict())
    rebuilt = load_final_safetensors(st.read_bytes())
    x = torch.randn(4, 3)
    assert torch.equal(rebuilt.model(x), model.eval()(x))
    assert rebuilt.spec.arch == "mlp" and rebuilt.data_shape.input_size == 3


def test_final_pt_bytes_equal_the_file(tmp_path):
    state = build_model({"arch": "logreg"}, {"input_size": 3, "num_classes": 2}).state_dict()
    data = final_pt_bytes({"arch": "logreg"}, {"input_size": 3, "num_classes": 2}, state)
    assert load_final(data).spec.arch == "logreg"


class _Canary:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_hostile_final_pt_runs_no_code(tmp_path):
    canary = tmp_path / "canary"
    hostile = pickle.dumps({"spec": _Canary(str(canary))}, protocol=2)
    with pytest.raises(pickle.UnpicklingError):
        load_final(hostile)
    with pytest.raises(NotSafetensors):
        load_final_safetensors(hostile)
    assert not canary.exists()
    assert os.path.exists(tmp_path)
