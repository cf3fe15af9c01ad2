"""The torch side of the allow-list: each op of
:data:`peertrain.common.specs.graph_ops.OPS` as a layer factory or a function.

A graph names ops by these keys only; nothing is looked up by a name from the file.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from peertrain.common.specs.graph import EllipsisArg, SliceArg

__all__ = ["FUNCTIONS", "LAYERS", "index_value", "stochastic_depth"]

Args = dict[str, Any]


def stochastic_depth(input: torch.Tensor, p: float, mode: str, training: bool) -> torch.Tensor:
    """torchvision's ``ops.stochastic_depth`` (the same draws, the same arithmetic)."""
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = torch.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


def index_value(value: Any) -> Any:
    """A graph index (``{"slice": ...}``, ``{"ellipsis": true}``, lists) as Python's."""
    if isinstance(value, tuple):
        return tuple(index_value(v) for v in value)
    if isinstance(value, SliceArg):
        return slice(*value.slice)
    if isinstance(value, EllipsisArg):
        return Ellipsis
    return value


def _parameter(shape: tuple[int, ...], requires_grad: bool, dtype: str) -> torch.Tensor:
    if requires_grad:
        return nn.Parameter(nn.init.normal_(torch.empty(shape), std=0.02))
    return torch.zeros(shape, dtype=torch.long if dtype == "long" else torch.float32)


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, tuple | list) else value


LAYERS: dict[str, Callable[..., nn.Module | torch.Tensor]] = {
    "linear": nn.Linear,
    "conv1d": nn.Conv1d,
    "conv2d": nn.Conv2d,
    "batch_norm1d": nn.BatchNorm1d,
    "batch_norm2d": nn.BatchNorm2d,
    "layer_norm": lambda normalized_shape, **kw: nn.LayerNorm(_tuple(normalized_shape), **kw),
    "group_norm": nn.GroupNorm,
    "embedding": nn.Embedding,
    "lstm": nn.LSTM,
    "gru": nn.GRU,
    "multihead_attention": nn.MultiheadAttention,
    "parameter": _parameter,
}
"""Ops with state: constructor from the node's args (a tensor for ``parameter``)."""

Fn = Callable[[Args, bool], Any]


def _unary(fn: Callable[..., Any]) -> Fn:
    """``fn(input, **the_rest)`` (torch's builtins take their first tensor by position)."""

    def call(a: Args, training: bool) -> Any:
        if "input" not in a:
            return fn(**a)
        return fn(a["input"], **{k: v for k, v in a.items() if k != "input"})

    return call


def _pool_stride(a: Args) -> Args:
    return {**a, "stride": a["stride"] if a["stride"] not in (None, ()) else None}


FUNCTIONS: dict[str, Fn] = {
    "dropout": lambda a, training: F.dropout(a["input"], a["p"], training),
    "relu": _unary(F.relu),
    "relu6": _unary(F.relu6),
    "gelu": _unary(F.gelu),
    "silu": _unary(F.silu),
    "sigmoid": _unary(torch.sigmoid),
    "tanh": _unary(torch.tanh),
    "hardswish": _unary(F.hardswish),
    "hardsigmoid": _unary(F.hardsigmoid),
    "elu": _unary(F.elu),
    "leaky_relu": _unary(F.leaky_relu),
    "softmax": _unary(F.softmax),
    "log_softmax": _unary(F.log_softmax),
    "identity": lambda a, training: a["input"],
    "contiguous": lambda a, training: a["input"].contiguous(),
    "neg": lambda a, training: operator.neg(a["input"]),
    "stochastic_depth": lambda a, training: stochastic_depth(training=training, **a),
    "add": lambda a, training: operator.add(a["input"], a["other"]),
    "sub": lambda a, training: operator.sub(a["input"], a["other"]),
    "mul": lambda a, training: operator.mul(a["input"], a["other"]),
    "div": lambda a, training: operator.truediv(a["input"], a["other"]),
    "max_pool1d": lambda a, training: F.max_pool1d(**_pool_stride(a)),
    "max_pool2d": lambda a, training: F.max_pool2d(**_pool_stride(a)),
    "avg_pool1d": lambda a, training: F.avg_pool1d(
        **{k: v for k, v in _pool_stride(a).items() if k != "divisor_override"}
    ),
    "avg_pool2d": lambda a, training: F.avg_pool2d(**_pool_stride(a)),
    "adaptive_avg_pool1d": _unary(F.adaptive_avg_pool1d),
    "adaptive_avg_pool2d": _unary(F.adaptive_avg_pool2d),
    "cat": lambda a, training: torch.cat(list(a["tensors"]), a["dim"]),
    "flatten": _unary(torch.flatten),
    "reshape": lambda a, training: a["input"].reshape(a["shape"]),
    "view": lambda a, training: a["input"].view(a["shape"]),
    "permute": lambda a, training: a["input"].permute(a["dims"]),
    "transpose": _unary(torch.transpose),
    "squeeze": _unary(torch.squeeze),
    "unsqueeze": _unary(torch.unsqueeze),
    "getitem": lambda a, training: operator.getitem(a["input"], index_value(a["index"])),
    "size": lambda a, training: (
        a["input"].size() if a["dim"] is None else a["input"].size(a["dim"])
    ),
    "long": lambda a, training: a["input"].long(),
    "float": lambda a, training: a["input"].float(),
    "mean": _unary(torch.mean),
    "sum": _unary(torch.sum),
    "matmul": _unary(torch.matmul),
    "scaled_dot_product_attention": _unary(F.scaled_dot_product_attention),
}
"""Ops without state: ``fn(bound_args, training)``."""
