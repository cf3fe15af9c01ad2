"""Sizes of zoo models computed from their specs, before any allocation."""

from __future__ import annotations

from .errors import SpecInvalid
from .graph_check import check_graph
from .model import (
    MAX_ACTIVATIONS_PER_SAMPLE,
    MAX_PARAMETERS,
    AnyModelSpec,
    CNNSpec,
    FeatureSpec,
    GraphSpec,
    LogRegSpec,
    MLPSpec,
)

__all__ = ["check_budget", "cnn_block_shapes", "count_parameters"]


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


def _linear(n_in: int, n_out: int) -> int:
    return n_in * n_out + n_out


def count_parameters(spec: AnyModelSpec, features: FeatureSpec) -> int:
    """How many parameters the model for ``spec`` on ``features`` has (for a layer graph:
    the values in its state dict, buffers included, after checking it)."""
    if isinstance(spec, GraphSpec):
        return check_graph(spec, features).state_values
    classes = features.num_classes
    if isinstance(spec, LogRegSpec):
        return _linear(features.flat_size, classes)
    if isinstance(spec, MLPSpec):
        total, width = 0, features.flat_size
        for units in spec.hidden:
            total += _linear(width, units)
            width = units
        return total + _linear(width, classes)
    if features.image_shape is None:
        raise SpecInvalid(
            "a cnn needs images: the feature spec has no image_shape",
            detail=[{"loc": "arch", "msg": "cnn needs image_shape"}],
        )
    total, c_in = 0, features.image_shape[0]
    k = spec.kernel_size
    shapes = cnn_block_shapes(spec, features.image_shape)
    for c_out, _, _ in shapes:
        total += c_in * c_out * k * k + c_out
        c_in = c_out
    c, h, w = shapes[-1]
    width = c * h * w
    if spec.hidden:
        total += _linear(width, spec.hidden)
        width = spec.hidden
    return total + _linear(width, classes)


def check_budget(spec: AnyModelSpec, features: FeatureSpec) -> int:
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
