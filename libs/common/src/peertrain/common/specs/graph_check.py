"""Checking a :class:`GraphSpec` without torch: every node's shape, the state size, the
activation sizes, before anything is allocated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import SpecInvalid
from .graph import INPUT, GraphNode, GraphSpec
from .graph_ops import BATCH, OPS, Args, BadArg, BatchSize, Tensor, TensorSpec, bind
from .model import MAX_ACTIVATIONS_PER_SAMPLE, MAX_PARAMETERS, DataShape

__all__ = [
    "MAX_GRAPH_ACTIVATIONS_PER_SAMPLE",
    "RESERVED_NAMES",
    "GraphCheck",
    "check_graph",
    "infer_graph",
]

MAX_GRAPH_ACTIVATIONS_PER_SAMPLE = 1 << 26
"""Most values all of a graph's nodes (and the attention and recurrent scratch inside
them) may produce together for one sample: 256 MiB as float32 (torchvision's ResNet-50
on 224x224 images: about 38 million)."""

RESERVED_NAMES = frozenset(
    {
        "T_destination",
        "add_module",
        "apply",
        "bfloat16",
        "buffers",
        "call_super_init",
        "children",
        "compile",
        "cpu",
        "cuda",
        "double",
        "dump_patches",
        "eval",
        "extra_repr",
        "float",
        "forward",
        "get_buffer",
        "get_extra_state",
        "get_parameter",
        "get_submodule",
        "half",
        "ipu",
        "load_state_dict",
        "modules",
        "mtia",
        "named_buffers",
        "named_children",
        "named_modules",
        "named_parameters",
        "parameters",
        "register_backward_hook",
        "register_buffer",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_load_state_dict_post_hook",
        "register_load_state_dict_pre_hook",
        "register_module",
        "register_parameter",
        "register_state_dict_post_hook",
        "register_state_dict_pre_hook",
        "requires_grad_",
        "set_extra_state",
        "set_submodule",
        "share_memory",
        "state_dict",
        "to",
        "to_empty",
        "train",
        "training",
        "type",
        "xpu",
        "zero_grad",
    }
)
"""Names of ``nn.Module`` attributes: no part of a module path may be one."""


@dataclass(frozen=True)
class GraphCheck:
    """What :func:`check_graph` found: values in the state dict, activations per sample,
    and each node's output (shapes with ``-1`` for the batch)."""

    state_values: int
    activations: int
    values: dict[str, Any]
    layers: dict[str, tuple[str, Args]] = field(default_factory=dict)
    """Each layer's module path -> its op and constructor arguments (defaults filled)."""

    def state(self) -> dict[str, TensorSpec]:
        """The rebuilt model's state dict: name -> (safetensors dtype, shape), names as
        in the researcher's module (``layer1.0.conv1.weight``)."""
        out: dict[str, TensorSpec] = {}
        for module, (op, margs) in self.layers.items():
            for leaf, spec in OPS[op].tensors(margs).items():
                out[f"{module}.{leaf}" if leaf else module] = spec
        return out


def _refuse(i: int, node: GraphNode, where: str, msg: str) -> SpecInvalid:
    what = f"node {i} {node.name!r} (op {node.op!r}): {msg}"
    return SpecInvalid(what, detail=[{"loc": f"model.nodes.{i}.{where}", "msg": what}])


def _resolve(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, tuple):
        return tuple(_resolve(v, env) for v in value)
    if isinstance(value, str):
        return env[value]
    return value


def _refs(value: Any) -> list[str]:
    if isinstance(value, tuple):
        return [r for v in value for r in _refs(v)]
    return [value] if isinstance(value, str) else []


def _size(value: Any) -> int:
    if isinstance(value, Tensor):
        return value.per_sample
    if isinstance(value, tuple):
        return sum(_size(v) for v in value)
    return 0


def _owner_conflicts(
    i: int, node: GraphNode, owners: dict[str, tuple[str, Args]], containers: set[str]
) -> None:
    """Refuse a new layer path that is reserved, inside a layer, or a container already."""
    assert node.module is not None
    parts = node.module.split(".")
    bad = [p for p in parts if p in RESERVED_NAMES or p.startswith("_graph")]
    if bad:
        raise _refuse(i, node, "module", f"{bad[0]!r} is a reserved name")
    for k in range(1, len(parts)):
        if ".".join(parts[:k]) in owners:
            raise _refuse(i, node, "module", f"{'.'.join(parts[:k])!r} is a layer, not a container")
    if node.module in containers:
        raise _refuse(i, node, "module", f"{node.module!r} already contains layers")
    containers.update(".".join(parts[:k]) for k in range(1, len(parts)))


def check_graph(spec: GraphSpec, features: DataShape) -> GraphCheck:
    """Check ``spec`` against the data ``features`` describes and the size bounds.

    Raises
    ------
    SpecInvalid
        Naming the first node at fault, its op and the problem (detail ``loc``
        ``model.nodes.<i>.<field>``): an op outside the allow-list, a reference to an
        unknown or later node, bad args, shapes that do not fit, a node over
        :data:`MAX_ACTIVATIONS_PER_SAMPLE` values per sample, all nodes together over
        :data:`MAX_GRAPH_ACTIVATIONS_PER_SAMPLE`, a state over :data:`MAX_PARAMETERS`
        values; or an ``input_shape`` or output that does not fit the data.
    """
    want = features.image_shape or (features.flat_size,)
    if tuple(spec.input_shape) != tuple(want):
        msg = f"input_shape {list(spec.input_shape)} is not the data's sample shape {list(want)}"
        raise SpecInvalid(msg, detail=[{"loc": "model.input_shape", "msg": msg}])
    found = infer_graph(spec)
    out = found.values.get(spec.output)
    want_out = Tensor((BATCH, features.num_classes))
    if out != want_out:
        shown = list(out.shape) if isinstance(out, Tensor) else type(out).__name__
        classes = features.num_classes
        msg = f"the output {spec.output!r} must be a [N, {classes}] float tensor, got {shown}"
        raise SpecInvalid(msg, detail=[{"loc": "model.output", "msg": msg}])
    return found


def infer_graph(spec: GraphSpec) -> GraphCheck:
    """Every node's value for the spec's own ``input_shape``, node by node, with the
    checks and bounds of :func:`check_graph` except those against a dataset."""
    env: dict[str, Any] = {INPUT: Tensor((BATCH, *spec.input_shape))}
    owners: dict[str, tuple[str, Args]] = {}
    containers: set[str] = set()
    state = total = 0
    for i, node in enumerate(spec.nodes):
        op = OPS.get(node.op)
        if op is None:
            raise _refuse(i, node, "op", "not an allowed op")
        if node.name in env:
            raise _refuse(i, node, "name", "the name is already taken")
        for ref in _refs(node.inputs):
            if ref not in env:
                raise _refuse(i, node, "inputs", f"{ref!r} is not an earlier node")
        if op.stateful != (node.module is not None):
            raise _refuse(i, node, "module", "give module for layers with state, and only them")
        try:
            call, margs = bind(op, _resolve(node.inputs, env), node.args)
            value = op.rule(call, margs)
            scratch = op.scratch(call, margs)
        except BadArg as exc:
            key = exc.where
            in_args = key in node.args or (key != "inputs" and key not in dict(op.call))
            where = f"args.{key}" if in_args else "inputs"
            raise _refuse(i, node, where, exc.msg) from None
        except (TypeError, ValueError, LookupError, ArithmeticError, StopIteration):
            raise _refuse(i, node, "inputs", "the inputs or args do not fit the op") from None
        if node.module is not None:
            seen = owners.get(node.module)
            if seen is None:
                _owner_conflicts(i, node, owners, containers)
                owners[node.module] = (node.op, margs)
                state += op.count(margs)
            elif seen != (node.op, margs):
                raise _refuse(i, node, "module", "a shared layer must repeat its op and args")
        size = _size(value)
        if max(size, scratch) > MAX_ACTIVATIONS_PER_SAMPLE:
            most = MAX_ACTIVATIONS_PER_SAMPLE
            msg = f"{max(size, scratch):,} values per sample, more than {most:,}"
            raise _refuse(i, node, "inputs", msg)
        total += size + scratch
        if total > MAX_GRAPH_ACTIVATIONS_PER_SAMPLE:
            most = MAX_GRAPH_ACTIVATIONS_PER_SAMPLE
            msg = f"the nodes so far produce {total:,} values per sample, more than {most:,}"
            raise _refuse(i, node, "inputs", msg)
        if state > MAX_PARAMETERS:
            raise _refuse(
                i,
                node,
                "args",
                f"the layers so far hold {state:,} values, more than {MAX_PARAMETERS:,}",
            )
        env[node.name] = value
    values = {k: v for k, v in env.items() if not isinstance(v, BatchSize)}
    return GraphCheck(state_values=state, activations=total, values=values, layers=owners)
