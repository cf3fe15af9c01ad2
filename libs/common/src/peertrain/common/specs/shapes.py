"""Sizes and state dicts of models computed from their specs, before any allocation."""

from __future__ import annotations

import math

from .errors import SpecInvalid
from .graph_check import check_graph
from .graph_ops import TensorSpec
from .model import (
    MAX_ACTIVATIONS_PER_SAMPLE,
    MAX_PARAMETERS,
    AnyModelSpec,
    CNNSpec,
    DataShape,
    GraphSpec,
    LogRegSpec,
    MLPSpec,
    NamedArchSpec,
)
from .named import named_graph

__all__ = [
    "F32",
    "check_budget",
    "cnn_block_shapes",
    "count_parameters",
    "resolve_model",
    "state_shapes",
]


def cnn_block_shapes(
    spec: CNNSpec, image_shape: tuple[int, int, int]
) -> list[tuple[int, int, int]]:
    """``(channels, height, width)`` after each convolution block (pooling included)."""
    _, h, w = image_shape
    shapes = []
    for c in spec.channels:
        if h >= 2 and w >= 2:
            h, w = h // 2, w // 2
        shapes.append((c, h, w))
    return shapes


def resolve_model(
    spec: AnyModelSpec, features: DataShape
) -> LogRegSpec | MLPSpec | CNNSpec | GraphSpec:
    """``spec`` as built: a named architecture expanded into its graph for the data
    (:func:`~.named.named_graph`), any other spec as it is."""
    if isinstance(spec, NamedArchSpec):
        return named_graph(spec, features.image_shape, features.num_classes)
    return spec


F32 = "F32"
"""safetensors' code of float32, the dtype of every zoo tensor."""


def _linear(out: dict[str, TensorSpec], name: str, n_in: int, n_out: int) -> None:
    out[f"{name}.weight"] = (F32, (n_out, n_in))
    out[f"{name}.bias"] = (F32, (n_out,))


def state_shapes(spec: AnyModelSpec, features: DataShape) -> dict[str, TensorSpec]:
    """Name -> (safetensors dtype, shape) of every tensor in the state dict of the model
    for ``spec`` on ``features``, computed torch-free (what starting weights must be;
    ``libs/ml/tests`` hold it to ``build_model(...).state_dict()``).

    Raises
    ------
    SpecInvalid
        For a cnn without images; for a graph, as :func:`check_graph`.
    """
    spec = resolve_model(spec, features)
    if isinstance(spec, GraphSpec):
        return check_graph(spec, features).state()
    out: dict[str, TensorSpec] = {}
    classes = features.num_classes
    if isinstance(spec, LogRegSpec):
        _linear(out, "linear", features.flat_size, classes)
        return out
    if isinstance(spec, MLPSpec):
        index, width = 0, features.flat_size
        for units in spec.hidden:
            _linear(out, f"layers.{index}", width, units)
            index += 2 + (spec.dropout > 0)  # Linear, activation [, Dropout]
            width = units
        _linear(out, f"layers.{index}", width, classes)
        return out
    if features.image_shape is None:
        raise SpecInvalid(
            "a cnn needs images: the feature spec has no image_shape",
            detail=[{"loc": "arch", "msg": "cnn needs image_shape"}],
        )
    c_in, (_, h, w) = features.image_shape[0], features.image_shape
    k, index = spec.kernel_size, 0
    for c_out in spec.channels:
        out[f"features.{index}.weight"] = (F32, (c_out, c_in, k, k))
        out[f"features.{index}.bias"] = (F32, (c_out,))
        index += 2  # Conv2d, ReLU
        if h >= 2 and w >= 2:
            index += 1  # MaxPool2d
            h, w = h // 2, w // 2
        c_in = c_out
    c, h, w = cnn_block_shapes(spec, features.image_shape)[-1]
    index, width = 1, c * h * w  # after Flatten
    if spec.hidden:
        index += spec.dropout > 0
        _linear(out, f"classifier.{index}", width, spec.hidden)
        index += 2  # Linear, ReLU
        width = spec.hidden
    index += spec.dropout > 0
    _linear(out, f"classifier.{index}", width, classes)
    return out


def count_parameters(spec: AnyModelSpec, features: DataShape) -> int:
    """How many values the state dict of the model for ``spec`` on ``features`` holds
    (parameters, and a layer graph's buffers), after checking a graph."""
    spec = resolve_model(spec, features)
    if isinstance(spec, GraphSpec):
        return check_graph(spec, features).state_values
    return sum(math.prod(shape) for _, shape in state_shapes(spec, features).values())


def check_budget(spec: AnyModelSpec, features: DataShape) -> int:
    """The parameter count, after checking it and the activation sizes against the bounds.

    A layer graph is checked node by node, torch-free
    (:func:`~peertrain.common.specs.graph_check.check_graph`).

    Raises
    ------
    SpecInvalid
        When the model would exceed :data:`MAX_PARAMETERS` parameters, or a convolution
        would produce more than :data:`MAX_ACTIVATIONS_PER_SAMPLE` values per sample; for
        a graph, also naming the node and op at fault (see ``check_graph``).
    """
    spec = resolve_model(spec, features)
    if isinstance(spec, GraphSpec):
        return check_graph(spec, features).state_values
    if isinstance(spec, CNNSpec) and features.image_shape is not None:
        _, h, w = features.image_shape
        widest = max(c * h * w for c in spec.channels)
        if widest > MAX_ACTIVATIONS_PER_SAMPLE:
            raise SpecInvalid(
                f"a convolution would produce {widest:,} values per sample, more than "
                f"{MAX_ACTIVATIONS_PER_SAMPLE:,}",
                detail=[{"loc": "channels", "msg": f"{widest} activations per sample"}],
            )
    params = count_parameters(spec, features)
    if params > MAX_PARAMETERS:
        raise SpecInvalid(
            f"the model would have {params:,} parameters, more than {MAX_PARAMETERS:,}",
            detail=[{"loc": "model", "msg": f"{params} parameters"}],
        )
    return params
