"""Turning a researcher's ``nn.Module`` into a :class:`GraphSpec`, on their machine.

``torch.fx.symbolic_trace`` records the forward with the allow-listed layers as leaves;
each recorded step becomes a node of an allow-listed op, or the conversion stops with
:class:`~peertrain.ml.errors.GraphUnsupported` naming the step. The graph is then checked
(:func:`~peertrain.common.specs.graph_check.check_graph`) and rebuilt, and the rebuilt
module must give the module's outputs on the example input.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from peertrain.common.specs import DataShape, check_graph, parse_model_spec
from peertrain.common.specs.graph import INPUT, GraphSpec

from ..errors import GraphUnsupported
from .net import GraphNet

__all__ = ["features_of", "to_graph", "verify_graph"]


def _conv(m: Any) -> dict[str, Any]:
    return {
        "in_channels": m.in_channels,
        "out_channels": m.out_channels,
        "kernel_size": m.kernel_size,
        "stride": m.stride,
        "padding": m.padding,
        "dilation": m.dilation,
        "groups": m.groups,
        "bias": m.bias is not None,
        "padding_mode": m.padding_mode,
    }


def _bn(m: Any) -> dict[str, Any]:
    keys = ("num_features", "eps", "momentum", "affine", "track_running_stats")
    return {k: getattr(m, k) for k in keys}


def _rnn(m: Any) -> dict[str, Any]:
    if getattr(m, "proj_size", 0):
        raise ValueError("proj_size is not supported")
    keys = ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout")
    return {**{k: getattr(m, k) for k in keys}, "bidirectional": m.bidirectional}


def _mha(m: Any) -> dict[str, Any]:
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise ValueError("kdim/vdim, add_bias_kv and add_zero_attn are not supported")
    return {
        "embed_dim": m.embed_dim,
        "num_heads": m.num_heads,
        "dropout": m.dropout,
        "bias": m.in_proj_bias is not None,
        "batch_first": m.batch_first,
    }


def _embedding(m: Any) -> dict[str, Any]:
    if m.max_norm is not None or m.sparse or m.scale_grad_by_freq:
        raise ValueError("max_norm, sparse and scale_grad_by_freq are not supported")
    keys = ("num_embeddings", "embedding_dim", "padding_idx")
    return {k: getattr(m, k) for k in keys}


def _pool(m: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if getattr(m, "return_indices", False):
        raise ValueError("return_indices is not supported")
    return {k: getattr(m, k) for k in keys}


_MAXPOOL = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
_AVGPOOL = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")

LayerArgs = Callable[[Any], dict[str, Any]]
_STATEFUL: dict[type, tuple[str, LayerArgs]] = {
    nn.Linear: (
        "linear",
        lambda m: {
            "in_features": m.in_features,
            "out_features": m.out_features,
            "bias": m.bias is not None,
        },
    ),
    nn.Conv1d: ("conv1d", _conv),
    nn.Conv2d: ("conv2d", _conv),
    nn.BatchNorm1d: ("batch_norm1d", _bn),
    nn.BatchNorm2d: ("batch_norm2d", _bn),
    nn.LayerNorm: (
        "layer_norm",
        lambda m: {
            "normalized_shape": m.normalized_shape,
            "eps": m.eps,
            "elementwise_affine": m.elementwise_affine,
            "bias": m.bias is not None or not m.elementwise_affine,
        },
    ),
    nn.GroupNorm: (
        "group_norm",
        lambda m: {
            "num_groups": m.num_groups,
            "num_channels": m.num_channels,
            "eps": m.eps,
            "affine": m.affine,
        },
    ),
    nn.Embedding: ("embedding", _embedding),
    nn.LSTM: ("lstm", _rnn),
    nn.GRU: ("gru", _rnn),
    nn.MultiheadAttention: ("multihead_attention", _mha),
}
"""Layers with state: op and constructor args (exact types: a subclass may differ)."""

_STATELESS: dict[type, tuple[str, LayerArgs]] = {
    nn.ReLU: ("relu", lambda m: {}),
    nn.ReLU6: ("relu6", lambda m: {}),
    nn.GELU: ("gelu", lambda m: {"approximate": m.approximate}),
    nn.SiLU: ("silu", lambda m: {}),
    nn.Sigmoid: ("sigmoid", lambda m: {}),
    nn.Tanh: ("tanh", lambda m: {}),
    nn.Hardswish: ("hardswish", lambda m: {}),
    nn.Hardsigmoid: ("hardsigmoid", lambda m: {}),
    nn.ELU: ("elu", lambda m: {"alpha": m.alpha}),
    nn.LeakyReLU: ("leaky_relu", lambda m: {"negative_slope": m.negative_slope}),
    nn.Softmax: ("softmax", lambda m: {"dim": m.dim}),
    nn.LogSoftmax: ("log_softmax", lambda m: {"dim": m.dim}),
    nn.Identity: ("identity", lambda m: {}),
    nn.Dropout: ("dropout", lambda m: {"p": m.p}),
    nn.Flatten: ("flatten", lambda m: {"start_dim": m.start_dim, "end_dim": m.end_dim}),
    nn.MaxPool1d: ("max_pool1d", lambda m: _pool(m, _MAXPOOL)),
    nn.MaxPool2d: ("max_pool2d", lambda m: _pool(m, _MAXPOOL)),
    nn.AvgPool1d: ("avg_pool1d", lambda m: _pool(m, _AVGPOOL)),
    nn.AvgPool2d: ("avg_pool2d", lambda m: _pool(m, (*_AVGPOOL, "divisor_override"))),
    nn.AdaptiveAvgPool1d: ("adaptive_avg_pool1d", lambda m: {"output_size": m.output_size}),
    nn.AdaptiveAvgPool2d: ("adaptive_avg_pool2d", lambda m: {"output_size": m.output_size}),
}
"""Layers without state: the op and its args."""

_FUNCTIONS: dict[Any, str] = {
    operator.add: "add", operator.iadd: "add", torch.add: "add",
    operator.sub: "sub", operator.isub: "sub", torch.sub: "sub",
    operator.mul: "mul", operator.imul: "mul", torch.mul: "mul",
    operator.truediv: "div", operator.itruediv: "div", torch.div: "div",
    operator.neg: "neg", torch.neg: "neg",
    operator.getitem: "getitem", operator.matmul: "matmul", torch.matmul: "matmul",
    torch.cat: "cat", torch.flatten: "flatten", torch.reshape: "reshape",
    torch.permute: "permute", torch.transpose: "transpose", torch.squeeze: "squeeze",
    torch.unsqueeze: "unsqueeze", torch.mean: "mean", torch.sum: "sum",
    torch.relu: "relu", torch.sigmoid: "sigmoid", torch.tanh: "tanh",
    torch.softmax: "softmax", torch.log_softmax: "log_softmax",
    F.relu: "relu", F.relu6: "relu6", F.gelu: "gelu", F.silu: "silu", F.sigmoid: "sigmoid",
    F.tanh: "tanh", F.hardswish: "hardswish", F.hardsigmoid: "hardsigmoid", F.elu: "elu",
    F.leaky_relu: "leaky_relu", F.softmax: "softmax", F.log_softmax: "log_softmax",
    F.dropout: "dropout", F.max_pool1d: "max_pool1d", F.max_pool2d: "max_pool2d",
    F.avg_pool1d: "avg_pool1d", F.avg_pool2d: "avg_pool2d",
    F.adaptive_avg_pool1d: "adaptive_avg_pool1d", F.adaptive_avg_pool2d: "adaptive_avg_pool2d",
    F.scaled_dot_product_attention: "scaled_dot_product_attention",
}  # fmt: skip
"""Functions (``call_function`` targets) the allow-list has, by identity."""

_METHODS = {
    "view": "view", "reshape": "reshape", "permute": "permute", "transpose": "transpose",
    "flatten": "flatten", "squeeze": "squeeze", "unsqueeze": "unsqueeze", "mean": "mean",
    "sum": "sum", "contiguous": "contiguous", "size": "size", "relu": "relu",
    "sigmoid": "sigmoid", "tanh": "tanh", "softmax": "softmax", "log_softmax": "log_softmax",
    "long": "long", "float": "float", "add": "add", "sub": "sub", "mul": "mul", "div": "div",
    "matmul": "matmul", "neg": "neg",
}  # fmt: skip
"""Tensor methods (``call_method`` targets) the allow-list has."""

_DROPPED = {"inplace", "training", "_stacklevel"}
"""Keyword args that do not change values: in-place flags (the rebuilt graph never works
in place), ``F.dropout``'s ``training`` (it follows the module's mode), ``_stacklevel``."""


def _stochastic_depth(m: nn.Module) -> tuple[str, dict[str, Any]] | None:
    """torchvision's ``StochasticDepth`` (matched by class, torchvision is not needed)."""
    kind = type(m)
    if kind.__name__ == "StochasticDepth" and kind.__module__.startswith("torchvision."):
        return "stochastic_depth", {"p": float(m.p), "mode": str(m.mode)}  # type: ignore[arg-type]
    return None


class _Tracer(torch.fx.Tracer):
    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return type(m) in _STATEFUL or type(m) in _STATELESS or _stochastic_depth(m) is not None


class _Converter:
    def __init__(self, root: nn.Module, graph: torch.fx.Graph) -> None:
        self.root, self.graph = root, graph
        self.names: dict[torch.fx.Node, str] = {}
        self.nodes: list[dict[str, Any]] = []
        self.state = dict(root.state_dict(keep_vars=True))

    def fail(self, node: torch.fx.Node, why: str) -> GraphUnsupported:
        target = (
            node.target
            if isinstance(node.target, str)
            else getattr(node.target, "__name__", repr(node.target))
        )
        return GraphUnsupported(f"{node.op} {target!r} (node {node.name!r}): {why}")

    def value(self, node: torch.fx.Node, v: Any, depth: int = 0) -> Any:
        if isinstance(v, torch.fx.Node):
            return self.names[v]
        if isinstance(v, bool | int | float) or v is None:
            return v
        if isinstance(v, slice):
            if any(isinstance(p, torch.fx.Node) for p in (v.start, v.stop, v.step)):
                raise self.fail(node, "slices must have constant bounds")
            return {"slice": [v.start, v.stop, v.step]}
        if v is Ellipsis:
            return {"ellipsis": True}
        if isinstance(v, tuple | list) and depth == 0:
            return [self.value(node, item, 1) for item in v]
        raise self.fail(node, f"cannot pass {type(v).__name__} {v!r} to a graph op")

    def kwargs(self, node: torch.fx.Node, kwargs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, v in kwargs.items():
            if key in _DROPPED:
                continue
            if isinstance(v, torch.fx.Node):
                raise self.fail(node, f"keyword {key!r} must be a constant")
            if isinstance(v, str):
                out[key] = v
            elif isinstance(v, torch.dtype | torch.device):
                raise self.fail(node, f"keyword {key!r}={v} is not supported")
            else:
                out[key] = self.value(node, v)
        return out

    def add(
        self,
        node: torch.fx.Node,
        op: str,
        inputs: Any,
        args: dict[str, Any],
        module: str | None = None,
    ) -> None:
        name = node.name if node.name != INPUT else f"{INPUT}_"
        self.names[node] = name
        item: dict[str, Any] = {
            "name": name,
            "op": op,
            "inputs": [self.value(node, v) for v in inputs],
            "args": args,
        }
        if module is not None:
            item["module"] = module
        self.nodes.append(item)

    def convert(self) -> tuple[list[dict[str, Any]], str]:
        output = None
        for node in self.graph.nodes:
            if node.op == "placeholder":
                if INPUT in self.names.values():
                    raise self.fail(node, "the model must take one input")
                self.names[node] = INPUT
            elif node.op == "output":
                if not isinstance(node.args[0], torch.fx.Node):
                    raise self.fail(node, "the model must return one tensor")
                output = self.names[node.args[0]]
            elif node.op == "get_attr":
                self.get_attr(node)
            elif node.op == "call_module":
                self.call_module(node)
            elif node.op == "call_function":
                self.call_function(node)
            elif node.op == "call_method":
                op = _METHODS.get(str(node.target))
                if op is None:
                    raise self.fail(node, "not an allowed tensor method")
                self.add(node, op, node.args, self.kwargs(node, dict(node.kwargs)))
        if output is None:
            raise GraphUnsupported("the model returns nothing")
        return self.nodes, output

    def get_attr(self, node: torch.fx.Node) -> None:
        path = str(node.target)
        tensor = self.state.get(path)
        if tensor is None:
            raise self.fail(node, "only parameters and persistent buffers can be read")
        args: dict[str, Any] = {
            "shape": list(tensor.shape),
            "requires_grad": isinstance(tensor, nn.Parameter),
        }
        if not isinstance(tensor, nn.Parameter):
            if tensor.dtype not in (torch.float32, torch.long):
                raise self.fail(node, f"buffers must be float32 or int64, not {tensor.dtype}")
            args["dtype"] = "long" if tensor.dtype == torch.long else "float"
        self.add(node, "parameter", (), args, module=path)

    def call_module(self, node: torch.fx.Node) -> None:
        path = str(node.target)
        m = self.root.get_submodule(path)
        kwargs = self.kwargs(node, dict(node.kwargs))
        try:
            if type(m) in _STATEFUL:
                op, make = _STATEFUL[type(m)]
                self.add(node, op, node.args, {**make(m), **kwargs}, module=path)
                return
            found = (
                (_STATELESS[type(m)][0], _STATELESS[type(m)][1](m))
                if type(m) in _STATELESS
                else _stochastic_depth(m)
            )
        except ValueError as exc:
            raise self.fail(node, str(exc)) from None
        if found is None:
            raise self.fail(node, f"{type(m).__name__} is not an allowed layer")
        self.add(node, found[0], node.args, {**found[1], **kwargs})

    def call_function(self, node: torch.fx.Node) -> None:
        if node.target is getattr and node.args[1] == "shape":
            self.add(node, "size", node.args[:1], {})
            return
        op = _FUNCTIONS.get(node.target)
        if op is None:
            raise self.fail(node, "not an allowed function")
        kwargs = self.kwargs(node, dict(node.kwargs))
        args = node.args
        if op == "dropout":
            op, args = self.dropout(node)
        if op in ("softmax", "log_softmax") and kwargs.pop("dtype", None) is not None:
            raise self.fail(node, "dtype is not supported")
        if op.startswith("max_pool") and kwargs.pop("return_indices", False):
            raise self.fail(node, "return_indices is not supported")
        self.add(node, op, args, kwargs if op != "identity" else {})

    def dropout(self, node: torch.fx.Node) -> tuple[str, tuple[Any, ...]]:
        """``F.dropout``: its ``training`` was a plain bool when traced. Equal to the
        model's mode then, it is taken as ``self.training`` (the op follows the rebuilt
        model's mode); a literal ``False`` is no dropout; dropout forced on is refused."""
        given = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
        if given == self.root.training:
            return "dropout", node.args[:2]
        if given is False:
            return "identity", node.args[:1]
        raise self.fail(node, "dropout forced on in eval mode is not supported")


def to_graph(module: nn.Module, example_input: torch.Tensor, *, atol: float = 1e-5) -> GraphSpec:
    """The layer graph of ``module``, checked and verified on ``example_input``.

    Parameters
    ----------
    module
        The researcher's model; its forward must be traceable by ``torch.fx`` (no
        control flow that depends on the data) and use only allow-listed layers and
        functions. It is traced in training mode (Python branches on
        ``self.training`` take their training side; dropout follows the rebuilt
        model's mode) and left in the mode it was in.
    example_input
        A batch shaped as the data will be (``[N, C, H, W]`` images or ``[N, F]`` rows).
    atol
        Largest difference allowed between the module's and the rebuilt graph's outputs.

    Raises
    ------
    GraphUnsupported
        Naming the first step that has no allow-listed op, or when the rebuilt graph
        does not give the module's outputs.
    SpecInvalid
        When the graph does not pass the platform's checks (shapes, sizes).
    """
    was = module.training
    module.train()  # traced as peers train it: self.training is True while tracing
    try:
        graph = _Tracer().trace(module)
        nodes, output = _Converter(module, graph).convert()
    except GraphUnsupported:
        raise
    except Exception as exc:  # fx raises many kinds: the researcher needs the message
        raise GraphUnsupported(f"torch.fx cannot trace the model: {exc}") from exc
    finally:
        module.train(was)
    with torch.no_grad():
        module.eval()
        try:
            reference = module(example_input)
        finally:
            module.train(was)
    document = {
        "arch": "graph",
        "input_shape": list(example_input.shape[1:]),
        "nodes": nodes,
        "output": output,
    }
    spec = parse_model_spec(document)
    assert isinstance(spec, GraphSpec)
    verify_graph(module, spec, example_input, reference, atol=atol)
    return spec


def features_of(example_input: torch.Tensor, output: torch.Tensor) -> DataShape:
    """The feature spec an input batch and the model's output on it imply."""
    shape = list(example_input.shape[1:])
    key = "image_shape" if len(shape) == 3 else "input_size"
    value = shape if len(shape) == 3 else shape[0] if len(shape) == 1 else None
    if value is None or output.dim() != 2:
        raise GraphUnsupported(
            "the input must be [N, F] or [N, C, H, W] and the output [N, classes]"
        )
    return DataShape.model_validate({key: value, "num_classes": output.shape[1]})


def verify_graph(
    module: nn.Module,
    spec: GraphSpec,
    example_input: torch.Tensor,
    reference: torch.Tensor,
    *,
    atol: float = 1e-5,
) -> GraphNet:
    """Check ``spec`` as the platform will, rebuild it with ``module``'s weights, and
    compare its output (eval mode) with ``reference``; returns the rebuilt module."""
    check_graph(spec, features_of(example_input, reference))
    net = GraphNet(spec)
    try:
        net.load_state_dict(module.state_dict(), strict=True)
    except RuntimeError as exc:
        raise GraphUnsupported(f"the rebuilt model's weights do not match: {exc}") from None
    net.eval()
    with torch.no_grad():
        got = net(example_input)
    diff = (got - reference).abs().max().item() if got.shape == reference.shape else float("inf")
    if not diff <= atol:
        raise GraphUnsupported(f"the rebuilt graph's outputs differ from the model's by {diff}")
    return net
