"""Rebuilding a layer graph as a trainable module."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from peertrain.common.specs import SpecInvalid
from peertrain.common.specs.graph import INPUT, GraphNode, GraphSpec
from peertrain.common.specs.graph_ops import OPS, bind, ctor_args

from .ops import FUNCTIONS, LAYERS

__all__ = ["GraphNet"]


def _container(root: nn.Module, parts: list[str]) -> nn.Module:
    """The module at ``parts`` under ``root``, made of empty containers where missing."""
    here = root
    for part in parts:
        child = here._modules.get(part)
        if child is None:
            child = nn.Module()
            here.add_module(part, child)
        here = child
    return here


class GraphNet(nn.Module):
    """The model a :class:`GraphSpec` describes: its layers at their dotted paths (so the
    state dict's keys are those of the model it was made from) and a forward that runs
    the nodes in order with the ops of the fixed table (:mod:`.ops`).

    Build it through :func:`peertrain.ml.zoo.build_model`, which checks the spec first
    (``check_budget``); layers get torch's default initialization from the global random
    state, and ``parameter`` nodes a normal(0, 0.02) draw (buffers: zeros).
    """

    def __init__(self, spec: GraphSpec) -> None:
        super().__init__()
        self._graph_spec = spec
        self._graph_layers: dict[str, nn.Module] = {}
        self._graph_frees = _last_uses(spec)
        done: set[str] = set()
        for node in spec.nodes:
            if node.module is None or node.module in done:
                continue
            done.add(node.module)
            margs = ctor_args(OPS[node.op], node.args)
            *parent, leaf = node.module.split(".")
            holder = _container(self, parent)
            try:
                made = LAYERS[node.op](**margs)
                if isinstance(made, nn.Parameter):
                    holder.register_parameter(leaf, made)
                elif isinstance(made, torch.Tensor):
                    holder.register_buffer(leaf, made)
                else:
                    holder.add_module(leaf, made)
                    self._graph_layers[node.module] = made
            except (KeyError, TypeError, ValueError) as exc:
                msg = f"node {node.name!r} (op {node.op!r}): cannot build {node.module!r}: {exc}"
                raise SpecInvalid(msg, detail=[{"loc": "model.nodes", "msg": msg}]) from None

    @property
    def spec(self) -> GraphSpec:
        """The graph this module runs."""
        return self._graph_spec

    def _resolve(self, value: Any, env: dict[str, Any]) -> Any:
        if isinstance(value, tuple):
            return tuple(self._resolve(v, env) for v in value)
        return env[value] if isinstance(value, str) else value

    def _step(self, node: GraphNode, env: dict[str, Any]) -> Any:
        call, _ = bind(OPS[node.op], self._resolve(node.inputs, env), node.args)
        if node.op == "parameter":
            assert node.module is not None
            *parent, leaf = node.module.split(".")
            holder = self.get_submodule(".".join(parent))
            return holder._parameters.get(leaf, holder._buffers.get(leaf))
        if node.module is not None:
            return self._graph_layers[node.module](**call)
        return FUNCTIONS[node.op](call, self.training)

    def run(self, x: torch.Tensor, *, keep: bool = False) -> dict[str, Any]:
        """The nodes' outputs for input ``x`` (the input under ``"x"``): every node's
        with ``keep``, else only the graph's output (each value is let go after its last
        use, as in the module it was made from)."""
        env: dict[str, Any] = {INPUT: x}
        for node, frees in zip(self._graph_spec.nodes, self._graph_frees, strict=True):
            env[node.name] = self._step(node, env)
            if not keep:
                for name in frees:
                    del env[name]
        return env

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for a batch shaped ``[N, *input_shape]``, or flat ``[N, features]`` as
        the zoo's models accept it (viewed as ``input_shape``)."""
        shape = self._graph_spec.input_shape
        if x.dim() == 2 and len(shape) > 1:
            x = x.view(x.shape[0], *shape)
        out: torch.Tensor = self.run(x)[self._graph_spec.output]
        return out


def _names(value: Any) -> list[str]:
    if isinstance(value, tuple):
        return [n for v in value for n in _names(v)]
    return [value] if isinstance(value, str) else []


def _last_uses(spec: GraphSpec) -> list[list[str]]:
    """For each node, the values no later node reads (never the output)."""
    last: dict[str, int] = {}
    for i, node in enumerate(spec.nodes):
        for name in _names(node.inputs):
            last[name] = i
    frees: list[list[str]] = [[] for _ in spec.nodes]
    for name, i in last.items():
        if name != spec.output:
            frees[i].append(name)
    return frees
