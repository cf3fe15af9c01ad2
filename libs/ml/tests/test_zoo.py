"""The model zoo: specs validated with bounds, deterministic builds, right shapes."""

from __future__ import annotations

import pytest
import torch

from peertrain.common.specs import (
    MAX_PARAMETERS,
    MLPSpec,
    SpecInvalid,
    count_parameters,
    parse_data_shape,
    parse_model_spec,
)
from peertrain.common.specs.shapes import state_shapes
from peertrain.ml.zoo import build_model

TABLE = {"input_size": 20, "num_classes": 4}
IMAGES = {"image_shape": [1, 12, 12], "num_classes": 3}


@pytest.mark.parametrize(
    ("spec", "features", "x_shape"),
    [
        ({"arch": "logreg"}, TABLE, (5, 20)),
        ({"arch": "mlp", "hidden": [16, 8], "dropout": 0.2}, TABLE, (5, 20)),
        ({"arch": "mlp", "activation": "gelu"}, IMAGES, (5, 1, 12, 12)),
        ({"arch": "cnn", "channels": [4, 8], "hidden": 16}, IMAGES, (5, 1, 12, 12)),
        ({"arch": "cnn", "channels": [4], "hidden": 0}, IMAGES, (5, 144)),
        ({"arch": "cnn", "channels": [2, 2, 2, 2], "kernel_size": 5}, IMAGES, (2, 1, 12, 12)),
        ({"arch": "cnn", "channels": [3, 5], "hidden": 16, "dropout": 0.3}, IMAGES, (2, 144)),
        ({"arch": "cnn", "channels": [3], "hidden": 0, "dropout": 0.3}, IMAGES, (2, 144)),
        (
            {"arch": "cnn", "channels": [2, 2, 2, 2]},
            {"image_shape": [3, 5, 3], "num_classes": 2},
            (2, 3, 5, 3),
        ),
    ],
)
def test_builds_each_arch_with_the_right_output_and_parameter_count(spec, features, x_shape):
    model = build_model(spec, features, seed=3)
    out = model(torch.zeros(x_shape))
    assert out.shape == (x_shape[0], features["num_classes"])
    actual = sum(p.numel() for p in model.parameters())
    assert actual == count_parameters(parse_model_spec(spec), parse_data_shape(features))
    parsed, shaped = parse_model_spec(spec), parse_data_shape(features)
    expected = state_shapes(parsed, shaped)  # torch-free, what starting weights must match
    assert {k: ("F32", tuple(v.shape)) for k, v in model.state_dict().items()} == expected
    assert all(v.dtype == torch.float32 for v in model.state_dict().values())


def test_initial_weights_are_a_function_of_the_seed_and_leave_global_rng_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = build_model({"arch": "mlp", "hidden": [8]}, TABLE, seed=7).state_dict()
    assert torch.equal(torch.random.get_rng_state(), before)
    b = build_model({"arch": "mlp", "hidden": [8]}, TABLE, seed=7).state_dict()
    c = build_model({"arch": "mlp", "hidden": [8]}, TABLE, seed=8).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["layers.0.weight"], c["layers.0.weight"])


@pytest.mark.parametrize(
    ("spec", "loc"),
    [
        ({"arch": "transformer"}, "arch"),
        ({"arch": "mlp", "hidden": [0]}, "hidden.0"),
        ({"arch": "mlp", "hidden": [64] * 9}, "hidden"),
        ({"arch": "mlp", "dropout": 1.5}, "dropout"),
        ({"arch": "mlp", "hiden": [64]}, "hiden"),
        ({"arch": "cnn", "kernel_size": 4}, "kernel_size"),
        ({"arch": "cnn", "channels": [100_000]}, "channels.0"),
        ({}, "arch"),
        ("__import__('os')", ""),
    ],
)
def test_invalid_model_specs_are_refused_with_the_location(spec, loc):
    with pytest.raises(SpecInvalid) as info:
        parse_model_spec(spec)
    assert info.value.status_code == 422
    assert any(item["loc"] == loc for item in info.value.detail), info.value.detail


def test_a_spec_too_large_to_allocate_is_refused_before_allocating():
    spec = {"arch": "mlp", "hidden": [16_384] * 8}
    with pytest.raises(SpecInvalid, match="parameters"):
        build_model(spec, {"input_size": 1_000_000, "num_classes": 10_000})
    features = parse_data_shape({"input_size": 1_000_000, "num_classes": 10_000})
    huge = MLPSpec(arch="mlp", hidden=(16_384,) * 8)
    assert count_parameters(huge, features) > MAX_PARAMETERS


def test_cnn_needs_images_and_bounded_activations():
    with pytest.raises(SpecInvalid, match="image"):
        build_model({"arch": "cnn"}, TABLE)
    with pytest.raises(SpecInvalid, match="per sample"):
        build_model(
            {"arch": "cnn", "channels": [256], "hidden": 0, "kernel_size": 1},
            {"image_shape": [1, 1000, 1000], "num_classes": 2},
        )


def test_feature_specs_one_shape_and_the_dataset_service_form():
    with pytest.raises(SpecInvalid):
        parse_data_shape({"num_classes": 3})
    with pytest.raises(SpecInvalid):
        parse_data_shape({"input_size": 4, "image_shape": [1, 2, 2], "num_classes": 3})
    with pytest.raises(SpecInvalid):
        parse_data_shape({"input_size": 4, "num_classes": 1})
    table = parse_data_shape(
        {"kind": "table", "input_shape": [6], "input_size": 6, "classes": ["a", "b", "c"]}
    )
    assert (table.input_size, table.image_shape, table.num_classes) == (6, None, 3)
    images = parse_data_shape(
        {"kind": "images", "input_shape": [3, 8, 8], "input_size": 192, "classes": ["x", "y"]}
    )
    assert (images.image_shape, images.flat_size, images.num_classes) == ((3, 8, 8), 192, 2)
