"""Write the named architectures' layer graphs (``libs/common/.../specs/archs/*.json``).

A job may name an architecture (``{"arch": "torchvision", "name": "resnet18"}``) instead
of sending a graph: the platform expands the name, torch-free, into the graph stored
here, adapted to the dataset (its channels at the stem convolution, its classes at the
head). The graphs are traced once, here, from torchvision's own definitions and from
He et al.'s CIFAR ResNets written out below, so neither peers nor services need
torchvision. torchvision is not in the lock: install it beside the venv, e.g.
``uv pip install --target /tmp/tv --no-deps torchvision==0.29.2``, then run
``PYTHONPATH=/tmp/tv:$PYTHONPATH python deploy/archs.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
import torchvision.models as tvm
from torch import nn

from peertrain.common.specs.named import ARCHS, ArchTemplate
from peertrain.ml.graph import to_graph

OUT = Path(__file__).resolve().parents[1] / "libs/common/src/peertrain/common/specs/archs"


class _CifarBlock(nn.Module):
    """He et al. (2016), section 4.2: two 3x3 convolutions and an identity shortcut; where
    the stage halves the size and doubles the channels, the shortcut subsamples and pads
    the new channels with zeros (option A: no parameters)."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()
        self.widen = c_out != c_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        short = x
        if self.widen:
            short = x[:, :, ::2, ::2]
            short = torch.cat([short, short * 0.0], dim=1)
        return self.relu(out + short)


class CifarResNet(nn.Module):
    """ResNet-(6n+2) for 32x32 images: 16-32-64 channels, n blocks per stage."""

    def __init__(self, n: int, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()
        blocks: list[nn.Module] = []
        c_in = 16
        for stage, c in enumerate((16, 32, 64)):
            for i in range(n):
                blocks.append(_CifarBlock(c_in, c, 2 if stage and i == 0 else 1))
                c_in = c
        self.layers = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def _cifar_stem(model: nn.Module) -> nn.Module:
    """A torchvision ResNet with the CIFAR stem: a 3x3 stride-1 first convolution, no
    max-pool (32x32 inputs keep their resolution into the first stage)."""
    model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)  # type: ignore[assignment]
    model.maxpool = nn.Identity()  # type: ignore[assignment]
    return model


def _vgg_small(model: nn.Module) -> nn.Module:
    """VGG with the classifier CIFAR-sized VGGs use (global pooling, one linear layer):
    torchvision's 4096-wide head alone holds 120 M parameters, over the platform's bound."""
    model.avgpool = nn.AdaptiveAvgPool2d(1)  # type: ignore[assignment]
    model.classifier = nn.Linear(512, 1000)  # type: ignore[assignment]
    return model


BUILD: dict[str, Callable[[], nn.Module]] = {
    "resnet18": lambda: tvm.resnet18(weights=None),
    "resnet34": lambda: tvm.resnet34(weights=None),
    "resnet50": lambda: tvm.resnet50(weights=None),
    "resnet18-cifar": lambda: _cifar_stem(tvm.resnet18(weights=None)),
    "resnet34-cifar": lambda: _cifar_stem(tvm.resnet34(weights=None)),
    "resnet50-cifar": lambda: _cifar_stem(tvm.resnet50(weights=None)),
    "mobilenet_v3_small": lambda: tvm.mobilenet_v3_small(weights=None),
    "efficientnet_b0": lambda: tvm.efficientnet_b0(weights=None),
    "vgg11_bn": lambda: _vgg_small(tvm.vgg11_bn(weights=None)),
    "resnet20": lambda: CifarResNet(3, 1000),
    "resnet56": lambda: CifarResNet(9, 1000),
}


def main() -> None:
    assert set(BUILD) == set(ARCHS), "every template the platform names is built here"
    for name, build in BUILD.items():
        torch.manual_seed(0)
        model = build()
        size = 32 if "cifar" in name or name in ("resnet20", "resnet56") else 64
        graph = to_graph(model, torch.randn(2, 3, size, size))
        stem = next(n for n in graph.nodes if n.op == "conv2d")
        head = next(n for n in graph.nodes if n.name == graph.output)
        assert head.op == "linear", f"{name}: the output is not a linear layer"
        template = ArchTemplate(name=name, stem=stem.name, head=head.name, graph=graph)
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(template.model_dump(mode="json"), separators=(",", ":")))
        print(f"{name}: {len(graph.nodes)} nodes, {path.stat().st_size:,} bytes -> {path.name}")


if __name__ == "__main__":
    main()
