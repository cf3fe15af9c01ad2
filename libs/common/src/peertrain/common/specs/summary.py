"""A model's architecture summary: its layers, their output shapes and sizes, torch-free.

Every kind of model is summarised the same way: as the graph it is built from (a named
architecture's resolved graph, :func:`~.zoo_graph.zoo_graph` for the zoo's), through the
graphs' own shape inference (:func:`~.graph_check.check_graph`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .graph import GraphSpec
from .graph_check import check_graph
from .graph_ops import BATCH, OPS, Tensor
from .model import AnyModelSpec, DataShape, NamedArchSpec
from .shapes import resolve_model
from .zoo_graph import zoo_graph

__all__ = ["LayerSummary", "ModelSummary", "model_summary"]

_Frozen = ConfigDict(frozen=True, extra="forbid")


class LayerSummary(BaseModel):
    """One node of the model's graph."""

    model_config = _Frozen

    name: str = Field(description="The node's name (for the zoo's models: its path, dots as _)")
    op: str = Field(description="The op (linear, conv2d, relu, add, ...)")
    module: str | None = Field(
        description="For a layer with state: its path in the model's state dict"
    )
    output: str = Field(description="The output shape, N for the batch: [N, 64, 56, 56]")
    shape: tuple[int, ...] | None = Field(
        description="The output shape with -1 for the batch, when the output is a tensor"
    )
    parameters: int = Field(
        description="Values the layer adds to the state dict (buffers included); 0 for a "
        "layer used again (counted at its first node)"
    )


class ModelSummary(BaseModel):
    """A model's architecture: ``GET /api/jobs/{id}/model``."""

    model_config = _Frozen

    arch: str = Field(description="logreg, mlp, cnn, graph or torchvision")
    name: str | None = Field(description="A named architecture's name (resnet18, ...)")
    input_shape: tuple[int, ...] = Field(description="One sample's shape")
    parameters: int = Field(
        description="Values in the model's state dict, buffers included (count_parameters)"
    )
    activations: int = Field(description="Values all nodes produce for one sample")
    layers: tuple[LayerSummary, ...] = Field(description="Every node, in order")


def _shown(value: Any) -> str:
    if isinstance(value, Tensor):
        return "[" + ", ".join("N" if d == BATCH else str(d) for d in value.shape) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_shown(v) for v in value) + ")"
    return "N" if value is None else str(value)


def model_summary(spec: AnyModelSpec, features: DataShape) -> ModelSummary:
    """The architecture of the model ``spec`` describes for ``features``' data.

    Raises
    ------
    SpecInvalid
        For a spec that does not fit the data (as :func:`~.shapes.check_budget`).
    """
    resolved = resolve_model(spec, features)
    graph = resolved if isinstance(resolved, GraphSpec) else zoo_graph(resolved, features)
    found = check_graph(graph, features)
    counted: set[str] = set()
    rows = []
    for node in graph.nodes:
        params = 0
        if node.module is not None and node.module not in counted:
            counted.add(node.module)
            op, margs = found.layers[node.module]
            params = OPS[op].count(margs)
        value = found.values.get(node.name)  # none for x.size(0): the batch size, N
        rows.append(
            LayerSummary(
                name=node.name,
                op=node.op,
                module=node.module,
                output=_shown(value),
                shape=value.shape if isinstance(value, Tensor) else None,
                parameters=params,
            )
        )
    return ModelSummary(
        arch=spec.arch,
        name=spec.name if isinstance(spec, NamedArchSpec) else None,
        input_shape=graph.input_shape,
        parameters=found.state_values,
        activations=found.activations,
        layers=tuple(rows),
    )
