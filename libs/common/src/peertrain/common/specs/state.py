"""The tensors a model's state dict holds, computed from its spec before anything is
allocated (torch-free): what uploaded starting weights must match.

``libs/ml/tests/test_zoo.py`` holds this to ``build_model(...).state_dict()``.
"""

from __future__ import annotations

from .model import CNNSpec, FeatureSpec, LogRegSpec, MLPSpec
from .shapes import cnn_block_shapes, count_parameters

__all__ = ["F32", "TensorSpec", "state_shapes"]

F32 = "F32"
"""safetensors' code of float32, the dtype of every zoo tensor."""

TensorSpec = tuple[str, tuple[int, ...]]
"""A tensor's safetensors dtype code and shape."""


def _linear(out: dict[str, TensorSpec], name: str, n_in: int, n_out: int) -> None:
    out[f"{name}.weight"] = (F32, (n_out, n_in))
    out[f"{name}.bias"] = (F32, (n_out,))


def state_shapes(
    spec: LogRegSpec | MLPSpec | CNNSpec, features: FeatureSpec
) -> dict[str, TensorSpec]:
    """Name -> (dtype, shape) of every tensor of the model for ``spec`` on ``features``.

    Raises
    ------
    SpecInvalid
        For a cnn without images (as :func:`~.shapes.count_parameters`).
    """
    count_parameters(spec, features)  # the same refusals
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
    assert features.image_shape is not None  # count_parameters refused a cnn without it
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
