"""A model's architecture in plain form: a list of layers, rebuilt with torch alone.

``{"format": "peertrain-arch/1", "input_shape": [...], "layers": [...]}`` where each layer
is ``{"op": ...}`` with its sizes, and ``name`` (its prefix in the state dict) for layers
with weights. Ops: ``reshape`` (``shape``: one sample's shape), ``flatten``, ``linear``
(``in``, ``out``), ``conv2d`` (``in``, ``out``, ``kernel``, ``padding``), ``maxpool2d``
(``kernel``), ``relu``, ``tanh``, ``gelu``, ``dropout`` (``p``). The layers run in order
on a batch; :func:`build_plain` gives an ``nn.Sequential`` and the state dict renamed
to its indices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

__all__ = ["ARCH_FORMAT", "ArchitectureInvalid", "build_plain", "describe"]

ARCH_FORMAT = "peertrain-arch/1"


class ArchitectureInvalid(ValueError):
    """The plain architecture is not one :func:`build_plain` knows."""


class _Reshape(nn.Module):
    def __init__(self, shape: Sequence[int]) -> None:
        super().__init__()
        self.shape = tuple(int(d) for d in shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], *self.shape)


_SIMPLE: dict[type[nn.Module], str] = {
    nn.ReLU: "relu",
    nn.Tanh: "tanh",
    nn.GELU: "gelu",
    nn.Flatten: "flatten",
}


def describe(
    model: nn.Module, input_shape: Sequence[int], *, flatten_first: bool
) -> dict[str, Any]:
    """The plain form of a model whose leaf modules run in their registration order.

    ``flatten_first`` adds a ``flatten`` after the input reshape (models that flatten
    their input in ``forward``, before their first layer).
    """
    layers: list[dict[str, Any]] = [{"op": "reshape", "shape": [int(d) for d in input_shape]}]
    if flatten_first:
        layers.append({"op": "flatten"})
    for name, module in model.named_modules():
        if list(module.children()):
            continue
        if isinstance(module, nn.Linear):
            layers.append(
                {"op": "linear", "name": name, "in": module.in_features, "out": module.out_features}
            )
        elif isinstance(module, nn.Conv2d):
            layers.append(
                {
                    "op": "conv2d",
                    "name": name,
                    "in": module.in_channels,
                    "out": module.out_channels,
                    "kernel": _one(module.kernel_size),
                    "padding": _one(module.padding),
                }
            )
        elif isinstance(module, nn.MaxPool2d):
            layers.append({"op": "maxpool2d", "kernel": _one(module.kernel_size)})
        elif isinstance(module, nn.Dropout):
            layers.append({"op": "dropout", "p": float(module.p)})
        elif type(module) in _SIMPLE:
            layers.append({"op": _SIMPLE[type(module)]})
        else:
            raise ArchitectureInvalid(f"no plain form for {type(module).__name__} ({name})")
    return {"format": ARCH_FORMAT, "input_shape": [int(d) for d in input_shape], "layers": layers}


def _one(value: Any) -> int:
    if isinstance(value, tuple | list):
        if len(set(value)) != 1:
            raise ArchitectureInvalid(f"non-square {value}")
        return int(value[0])
    return int(value)


def _layer(spec: Mapping[str, Any]) -> nn.Module:
    op = spec.get("op")
    if op == "reshape":
        return _Reshape(spec["shape"])
    if op == "flatten":
        return nn.Flatten()
    if op == "linear":
        return nn.Linear(int(spec["in"]), int(spec["out"]))
    if op == "conv2d":
        return nn.Conv2d(
            int(spec["in"]), int(spec["out"]), int(spec["kernel"]), padding=int(spec["padding"])
        )
    if op == "maxpool2d":
        return nn.MaxPool2d(int(spec["kernel"]))
    if op == "relu":
        return nn.ReLU()
    if op == "tanh":
        return nn.Tanh()
    if op == "gelu":
        return nn.GELU()
    if op == "dropout":
        return nn.Dropout(float(spec["p"]))
    raise ArchitectureInvalid(f"unknown layer op {op!r}")


def build_plain(
    architecture: Mapping[str, Any], state: Mapping[str, torch.Tensor]
) -> nn.Sequential:
    """The model of a plain architecture with ``state`` loaded, in eval mode.

    Raises
    ------
    ArchitectureInvalid
        An unknown format or op, or a state dict that does not fit it.
    """
    if architecture.get("format") != ARCH_FORMAT:
        raise ArchitectureInvalid(f"unknown architecture format {architecture.get('format')!r}")
    layers = [_layer(spec) for spec in architecture["layers"]]
    model = nn.Sequential(*layers)
    renamed: dict[str, torch.Tensor] = {}
    for i, spec in enumerate(architecture["layers"]):
        name = spec.get("name")
        if name is None:
            continue
        for key in ("weight", "bias"):
            if f"{name}.{key}" in state:
                renamed[f"{i}.{key}"] = state[f"{name}.{key}"]
    if len(renamed) != len(state):
        extra = sorted(
            set(state)
            - {f"{s.get('name')}.{k}" for s in architecture["layers"] for k in ("weight", "bias")}
        )
        raise ArchitectureInvalid(f"state dict entries the architecture does not use: {extra[:5]}")
    try:
        model.load_state_dict(renamed, strict=True)
    except RuntimeError as exc:
        raise ArchitectureInvalid(f"the weights do not fit the architecture: {exc}") from None
    model.eval()
    return model
