"""A model as a declarative layer graph: JSON that names only allow-listed ops.

A researcher's own ``nn.Module`` is turned into a :class:`GraphSpec` on the researcher's
machine (``peertrain.ml.graph.to_graph``); the platform checks it without torch
(:func:`peertrain.common.specs.graph_shapes.check_graph`: every node's shape, the
parameter count, the activation sizes) and peers rebuild it from a fixed table of torch
layers and functions. Nothing in the file is imported, evaluated or unpickled: an op is a
key of that table, and any other string is refused.

A node reads earlier nodes (or the input ``"x"``) by name in ``inputs`` and takes
constant keyword ``args``. A node with weights (``linear``, ``conv2d``, ...) names in
``module`` the dotted path of the layer in the researcher's model (``layer1.0.conv1``), so
the rebuilt model's ``state_dict`` keys are the researcher's; two nodes naming the same
module share it (a layer called twice) and must agree on its ``op`` and ``args``. A
``parameter`` node names a free-standing parameter or buffer the same way.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

__all__ = [
    "INPUT",
    "MAX_GRAPH_BYTES",
    "MAX_GRAPH_NODES",
    "Arg",
    "Atom",
    "EllipsisArg",
    "GraphNode",
    "GraphSpec",
    "KwValue",
    "SliceArg",
]

MAX_GRAPH_NODES = 4000
"""Most nodes a graph may have."""

MAX_GRAPH_BYTES = 1 << 20
"""Most bytes a graph may take as JSON (the gateway's request bodies are as bounded;
torchvision's EfficientNet-B0 takes 48 kB)."""

INPUT = "x"
"""The name by which nodes read the model's input."""

_Spec = ConfigDict(frozen=True, extra="forbid")

_BOUND = 2**31 - 1
Int = Annotated[StrictInt, Field(ge=-_BOUND, le=_BOUND)]
Float = Annotated[float, Field(allow_inf_nan=False, ge=-1e9, le=1e9, strict=True)]
NodeName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
ModulePath = Annotated[str, Field(max_length=256, pattern=r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$")]
OpName = Annotated[str, Field(min_length=1, max_length=64)]
KwName = Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]{0,31}$")]
Word = Annotated[str, Field(max_length=32, pattern=r"^[A-Za-z0-9_]*$")]


class SliceArg(BaseModel):
    """``start:stop:step`` in an index (``out[:, -1]``)."""

    model_config = _Spec

    slice: tuple[Int | None, Int | None, Int | None]


class EllipsisArg(BaseModel):
    """``...`` in an index."""

    model_config = _Spec

    ellipsis: Literal[True]


Atom = StrictBool | Int | Float | None | SliceArg | EllipsisArg | NodeName
"""One input: a constant, or a string naming an earlier node (or ``"x"``)."""

Arg = Atom | Annotated[tuple[Atom, ...], Field(max_length=16)]
"""A positional input: an atom or a list of atoms (``torch.cat([a, b], 1)``)."""

KwValue = (
    StrictBool
    | Int
    | Float
    | None
    | Word
    | Annotated[tuple[StrictBool | Int | Float | None, ...], Field(max_length=8)]
)
"""A keyword argument: a constant (strings here are words, never node names)."""


class GraphNode(BaseModel):
    """One step of the graph.

    Attributes
    ----------
    name
        Unique name other nodes use to read this node's output (not ``"x"``).
    op
        A key of the allow-list (``linear``, ``relu``, ``add``, ...).
    module
        For ops with state: the dotted path of the layer (or of the parameter, for
        ``parameter``) in the researcher's model.
    inputs
        Positional inputs: node names and constants, bound to the op's parameters in
        order.
    args
        Constant keyword arguments: the layer's constructor arguments for ops with
        state, the op's own keyword arguments otherwise.
    """

    model_config = _Spec

    name: NodeName
    op: OpName
    module: ModulePath | None = None
    inputs: tuple[Arg, ...] = Field(default=(), max_length=16)
    args: dict[KwName, KwValue] = Field(default_factory=dict, max_length=16)

    @field_validator("name")
    @classmethod
    def _not_input(cls, value: str) -> str:
        if value == INPUT:
            raise ValueError(f"{INPUT!r} names the model's input")
        return value


class GraphSpec(BaseModel):
    """A model as a graph of allow-listed ops (``{"arch": "graph", ...}``).

    Attributes
    ----------
    input_shape
        One sample's shape (the dataset's ``image_shape``, or ``[flat_size]``).
    nodes
        The steps in order; each reads only earlier nodes and ``"x"``.
    output
        The node whose value is the model's output (logits, ``[num_classes]`` per sample).
    """

    model_config = _Spec

    arch: Literal["graph"]
    version: Literal[1] = 1
    input_shape: tuple[Annotated[StrictInt, Field(ge=1, le=1_000_000)], ...] = Field(
        min_length=1, max_length=4
    )
    nodes: tuple[GraphNode, ...] = Field(min_length=1, max_length=MAX_GRAPH_NODES)
    output: NodeName

    @model_validator(mode="after")
    def _bounded(self) -> GraphSpec:
        size = len(self.model_dump_json())
        if size > MAX_GRAPH_BYTES:
            raise ValueError(
                f"the graph takes {size:,} bytes as JSON, more than {MAX_GRAPH_BYTES:,}"
            )
        return self
