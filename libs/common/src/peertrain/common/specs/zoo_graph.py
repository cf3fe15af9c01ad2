"""The zoo's models (``logreg``, ``mlp``, ``cnn``) written as layer graphs, torch-free.

Each node's ``module`` is the layer's path in the zoo's own ``nn.Module``
(``layers.0``, ``features.0``, ``classifier.2``), so the graph's state dict is the zoo
model's (``libs/common/tests`` hold :func:`zoo_graph`'s to :func:`~.shapes.state_shapes`).
Peers build the zoo's modules, not this graph: it is how the zoo's layers are *described*
(an architecture summary), with the graphs' own shape inference.
"""

from __future__ import annotations

from typing import Any

from .errors import SpecInvalid
from .graph import INPUT, GraphNode, GraphSpec
from .model import CNNSpec, DataShape, LogRegSpec, MLPSpec

__all__ = ["zoo_graph"]


class _Nodes:
    """Appends nodes, each reading the one before."""

    def __init__(self) -> None:
        self.nodes: list[GraphNode] = []
        self.last = INPUT

    def add(self, path: str, op: str, *, layer: bool = False, **args: Any) -> None:
        name = path.replace(".", "_")
        module = path if layer else None
        self.nodes.append(
            GraphNode(name=name, op=op, module=module, inputs=(self.last,), args=args)
        )
        self.last = name


def zoo_graph(spec: LogRegSpec | MLPSpec | CNNSpec, features: DataShape) -> GraphSpec:
    """The graph of the zoo model ``spec`` describes for ``features``' data.

    Raises
    ------
    SpecInvalid
        For a cnn without images.
    """
    g = _Nodes()
    classes = features.num_classes
    flat = features.image_shape is not None  # the zoo's flattening models flatten images
    if isinstance(spec, LogRegSpec):
        if flat:
            g.nodes.append(GraphNode(name="flatten", op="flatten", inputs=(INPUT, 1)))
            g.last = "flatten"
        g.add("linear", "linear", layer=True, in_features=features.flat_size, out_features=classes)
    elif isinstance(spec, MLPSpec):
        if flat:
            g.nodes.append(GraphNode(name="flatten", op="flatten", inputs=(INPUT, 1)))
            g.last = "flatten"
        index, width = 0, features.flat_size
        for units in spec.hidden:
            g.add(f"layers.{index}", "linear", layer=True, in_features=width, out_features=units)
            g.add(f"layers.{index + 1}", spec.activation)
            index += 2
            if spec.dropout > 0:
                g.add(f"layers.{index}", "dropout", p=spec.dropout)
                index += 1
            width = units
        g.add(f"layers.{index}", "linear", layer=True, in_features=width, out_features=classes)
    else:
        _cnn(g, spec, features)
    shape = features.image_shape or (features.flat_size,)
    return GraphSpec(arch="graph", input_shape=shape, nodes=tuple(g.nodes), output=g.last)


def _cnn(g: _Nodes, spec: CNNSpec, features: DataShape) -> None:
    if features.image_shape is None:
        raise SpecInvalid(
            "a cnn needs images: the feature spec has no image_shape",
            detail=[{"loc": "arch", "msg": "cnn needs image_shape"}],
        )
    (c_in, h, w), k, index = features.image_shape, spec.kernel_size, 0
    for c_out in spec.channels:
        g.add(
            f"features.{index}",
            "conv2d",
            layer=True,
            in_channels=c_in,
            out_channels=c_out,
            kernel_size=k,
            padding=k // 2,
        )
        g.add(f"features.{index + 1}", "relu")
        index += 2
        if h >= 2 and w >= 2:
            g.add(f"features.{index}", "max_pool2d", kernel_size=2)
            index += 1
            h, w = h // 2, w // 2
        c_in = c_out
    g.nodes.append(GraphNode(name="classifier_0", op="flatten", inputs=(g.last, 1)))
    g.last, index, width = "classifier_0", 1, c_in * h * w
    if spec.hidden:
        if spec.dropout > 0:
            g.add(f"classifier.{index}", "dropout", p=spec.dropout)
            index += 1
        g.add(
            f"classifier.{index}", "linear", layer=True, in_features=width, out_features=spec.hidden
        )
        g.add(f"classifier.{index + 1}", "relu")
        index, width = index + 2, spec.hidden
    if spec.dropout > 0:
        g.add(f"classifier.{index}", "dropout", p=spec.dropout)
        index += 1
    g.add(
        f"classifier.{index}",
        "linear",
        layer=True,
        in_features=width,
        out_features=features.num_classes,
    )
