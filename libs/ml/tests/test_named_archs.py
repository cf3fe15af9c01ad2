"""Named architectures: each stored graph builds for the data's channels and classes,
trains, and has the state dict the platform computes torch-free; the parameter counts
are the architectures' published ones (torchvision's, He et al.'s for ResNet-20/56)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from peertrain.common.specs import (
    SpecInvalid,
    count_parameters,
    parse_data_shape,
    parse_model_spec,
    state_shapes,
)
from peertrain.ml.weights import dtype_code
from peertrain.ml.zoo import build_model

CIFAR = {"image_shape": [3, 32, 32], "num_classes": 10}
GREY = {"image_shape": [1, 40, 36], "num_classes": 7}

# parameters (not buffers) with 1,000 classes on RGB: torchvision's documented counts
PUBLISHED = {
    "resnet18": 11_689_512,
    "resnet34": 21_797_672,
    "resnet50": 25_557_032,
    "mobilenet_v3_small": 2_542_856,
    "efficientnet_b0": 5_288_548,
}


@pytest.mark.parametrize("name", [*PUBLISHED, "vgg11_bn", "resnet20", "resnet56"])
@pytest.mark.parametrize("features", [CIFAR, GREY], ids=["cifar", "grey"])
def test_each_named_architecture_builds_for_the_data_and_trains(name, features):
    spec = {"arch": "torchvision", "name": name}
    model = build_model(spec, features, seed=1)
    c, h, w = features["image_shape"]
    x = torch.randn(2, c, h, w)
    model.train()
    loss = F.cross_entropy(model(x), torch.tensor([0, 1]))
    loss.backward()
    assert model(x).shape == (2, features["num_classes"])
    state = model.state_dict()
    parsed, shaped = parse_model_spec(spec), parse_data_shape(features)
    want = {k: (dtype_code(v), tuple(v.shape)) for k, v in state.items()}
    assert state_shapes(parsed, shaped) == want
    assert count_parameters(parsed, shaped) == sum(v.numel() for v in state.values())


@pytest.mark.parametrize("name", PUBLISHED)
def test_parameter_counts_are_the_published_ones(name):
    model = build_model(
        {"arch": "torchvision", "name": name}, {"image_shape": [3, 64, 64], "num_classes": 1000}
    )
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[name]


def test_the_cifar_resnets_are_he_et_als():
    counts = {}
    for name in ("resnet20", "resnet56"):
        model = build_model({"arch": "torchvision", "name": name}, CIFAR)
        counts[name] = sum(p.numel() for p in model.parameters())
    assert counts == {"resnet20": 269_722, "resnet56": 853_018}  # 0.27 M and 0.85 M, option A


def test_the_cifar_stem_keeps_32x32_images_at_full_resolution():
    plain = build_model({"arch": "torchvision", "name": "resnet18"}, CIFAR)
    cifar = build_model({"arch": "torchvision", "name": "resnet18", "cifar_stem": True}, CIFAR)
    assert plain.state_dict()["conv1.weight"].shape == (64, 3, 7, 7)
    assert cifar.state_dict()["conv1.weight"].shape == (64, 3, 3, 3)


@pytest.mark.parametrize(
    ("spec", "features", "says"),
    [
        ({"name": "resnet18"}, {"input_size": 10, "num_classes": 2}, "takes images"),
        ({"name": "mobilenet_v3_small", "cifar_stem": True}, CIFAR, "cifar_stem is offered"),
        ({"name": "resnet1000"}, CIFAR, "name"),
        (  # five 2x2 max-pools: 28 -> 14 -> 7 -> 3 -> 1 -> nothing
            {"name": "vgg11_bn"},
            {"image_shape": [1, 28, 28], "num_classes": 10},
            "(op 'max_pool2d'): the kernel is larger than the input [N, 512, 1, 1]",
        ),
    ],
)
def test_what_cannot_be_built_is_refused_clearly(spec, features, says):
    with pytest.raises(SpecInvalid) as info:
        build_model({"arch": "torchvision", **spec}, features)
    assert says in f"{info.value.message} {info.value.detail}"
