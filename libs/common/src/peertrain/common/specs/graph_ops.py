"""The allow-list of graph ops: each op's signature and its torch-free shape rule.

Shapes are whole shapes in which the batch dimension is :data:`BATCH`; a tensor has at
most one batch dimension (a ``parameter`` has none), no op may reduce, index or mix it,
and a per-sample size is the product of the other dimensions. Each rule mirrors what the
torch op does (``peertrain.ml.graph.ops`` runs the same ops) and refuses what torch would
refuse, so a graph that passes here builds and runs on a peer.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .graph import EllipsisArg, SliceArg

__all__ = ["BATCH", "OPS", "Args", "BadArg", "BatchSize", "OpDef", "Tensor", "bind", "ctor_args"]

BATCH = -1
"""The batch dimension in a shape."""


class BatchSize:
    """The batch size as a value (``x.size(0)``)."""

    def __repr__(self) -> str:
        return "BatchSize()"


@dataclass(frozen=True)
class Tensor:
    """A tensor's whole shape (batch dimension :data:`BATCH`) and dtype."""

    shape: tuple[int, ...]
    dtype: str = "float"

    @property
    def per_sample(self) -> int:
        """Values per sample (all of them when there is no batch dimension)."""
        return math.prod(d for d in self.shape if d != BATCH)


class BadArg(ValueError):
    """A node's inputs or args do not fit its op; ``where`` is the parameter's name."""

    def __init__(self, where: str, msg: str) -> None:
        super().__init__(msg)
        self.where, self.msg = where, msg


_REQUIRED: Any = object()
Args = dict[str, Any]
"""Arguments bound by name."""
Rule = Callable[[Args, Args], Any]
"""``rule(call_args, module_args)`` returns the node's value (a :class:`Tensor`, a tuple
of values, or a number)."""
TensorSpec = tuple[str, tuple[int, ...]]
"""A state-dict tensor's safetensors dtype code (``F32``, ``I64``) and shape."""
Tensors = Callable[[Args], dict[str, TensorSpec]]
"""``tensors(module_args)``: the layer's state dict, by name under its module path."""


@dataclass(frozen=True)
class OpDef:
    """One allow-listed op.

    ``call`` is the signature the node's ``inputs`` bind to (``vararg``: the name that
    collects the remaining positional inputs); ``ctor`` the layer's constructor arguments
    (ops with state only), given in the node's ``args``; ``count`` the values the layer
    keeps in its state dict.
    """

    call: tuple[tuple[str, Any], ...]
    rule: Rule
    vararg: str | None = None
    ctor: tuple[tuple[str, Any], ...] | None = None
    tensors: Tensors = field(default=lambda _: {})
    scratch: Callable[[dict[str, Any], dict[str, Any]], int] = field(default=lambda b, m: 0)

    @property
    def stateful(self) -> bool:
        return self.ctor is not None

    def count(self, m: Args) -> int:
        """Values the layer keeps in its state dict."""
        return sum(math.prod(shape) for _, shape in self.tensors(m).values())


def bind(op: OpDef, inputs: tuple[Any, ...], args: Mapping[str, Any]) -> tuple[Args, Args]:
    """``(call_args, module_args)``: positional inputs and keyword args bound by name,
    defaults filled in (raises :class:`BadArg`)."""
    names = [n for n, _ in op.call]
    call: dict[str, Any] = {}
    rest = list(inputs)
    for name in names:
        if not rest:
            break
        if name == op.vararg:
            call[name] = (
                tuple(rest[0]) if len(rest) == 1 and isinstance(rest[0], tuple) else tuple(rest)
            )
            rest = []
            break
        call[name] = rest.pop(0)
    if rest:
        raise BadArg("inputs", f"takes at most {len(names)} inputs, got {len(inputs)}")
    ctor_names = [n for n, _ in op.ctor or ()]
    module: dict[str, Any] = {}
    for key, value in args.items():
        if key in ctor_names:
            module[key] = value
        elif key in names and key not in call:
            call[key] = value
        else:
            raise BadArg(key, f"unexpected argument {key!r}")
    _fill(op.call, call)
    return call, ctor_args(op, module)


def ctor_args(op: OpDef, args: Mapping[str, Any]) -> Args:
    """The layer's constructor arguments among ``args``, defaults filled in."""
    names = dict(op.ctor or ())
    return _fill(op.ctor or (), {k: v for k, v in args.items() if k in names})


def _fill(params: tuple[tuple[str, Any], ...], bound: Args) -> Args:
    for name, default in params:
        if name not in bound:
            if default is _REQUIRED:
                raise BadArg(name, f"missing argument {name!r}")
            bound[name] = default
    return bound


# --- argument readers ---------------------------------------------------------------


def _tensor(b: dict[str, Any], name: str, dtype: str | None = "float") -> Tensor:
    value = b[name]
    if not isinstance(value, Tensor):
        raise BadArg(name, f"{name} must be a tensor")
    if dtype is not None and value.dtype != dtype:
        raise BadArg(name, f"{name} must be a {dtype} tensor, not {value.dtype}")
    return value


def _int(b: dict[str, Any], name: str, lo: int | None = None, hi: int | None = None) -> int:
    value = b[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadArg(name, f"{name} must be an integer")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise BadArg(name, f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def _opt_int(b: dict[str, Any], name: str, lo: int | None = None) -> int | None:
    return None if b[name] is None else _int(b, name, lo)


def _num(b: dict[str, Any], name: str, lo: float | None = None, hi: float | None = None) -> float:
    value = b[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadArg(name, f"{name} must be a number")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise BadArg(name, f"{name}={value} is out of range [{lo}, {hi}]")
    return float(value)


def _bool(b: dict[str, Any], name: str) -> bool:
    if not isinstance(b[name], bool):
        raise BadArg(name, f"{name} must be true or false")
    return bool(b[name])


def _word(b: dict[str, Any], name: str, choices: tuple[str, ...]) -> str:
    if b[name] not in choices:
        raise BadArg(name, f"{name} must be one of {', '.join(choices)}")
    return str(b[name])


def _ints(b: dict[str, Any], name: str, n: int, lo: int = 0, hi: int = 1 << 20) -> tuple[int, ...]:
    """An int or a list of ``n`` ints (a kernel size, a stride...)."""
    value = b[name]
    items = value if isinstance(value, tuple) else (value,) * n
    if len(items) != n or any(isinstance(v, bool) or not isinstance(v, int) for v in items):
        raise BadArg(name, f"{name} must be an integer or {n} integers")
    if any(v < lo or v > hi for v in items):
        raise BadArg(name, f"{name}={list(items)} is out of range [{lo}, {hi}]")
    return tuple(items)


def _dim(t: Tensor, b: dict[str, Any], name: str, extra: int = 0) -> int:
    """A dimension of ``t`` (negative counts from the end); never the batch's."""
    nd = len(t.shape) + extra
    d = _int(b, name, -nd, nd - 1) % nd if nd else _int(b, name, 0, -1)
    if extra == 0 and t.shape[d] == BATCH:
        raise BadArg(name, f"{name}={b[name]} is the batch dimension")
    return d


def _batch_at(t: Tensor, name: str, ndim: int, at: int = 0) -> tuple[int, ...]:
    """The non-batch dims of a tensor that must be ``ndim``-dimensional, batch at ``at``."""
    if len(t.shape) != ndim or t.shape[at] != BATCH:
        raise BadArg(
            name, f"{name} must have {ndim} dimensions with the batch at {at}, got {_show(t)}"
        )
    return t.shape[:at] + t.shape[at + 1 :]


def _show(t: Tensor) -> str:
    return "[" + ", ".join("N" if d == BATCH else str(d) for d in t.shape) + "]"


def _out(shape: tuple[int, ...], dtype: str = "float") -> Tensor:
    if any(d < 1 and d != BATCH for d in shape):
        raise BadArg("inputs", f"the output shape {_show(Tensor(shape))} has an empty dimension")
    if sum(d == BATCH for d in shape) > 1:
        raise BadArg("inputs", "the output would mix the batch dimension with another")
    return Tensor(shape, dtype)


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Torch's broadcasting of two shapes (the batch only meets itself or 1)."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise BadArg("inputs", f"shapes {list(a)} and {list(b)} do not broadcast")
    return tuple(reversed(out))


# --- layers with state ----------------------------------------------------------------

R = _REQUIRED


def _linear(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input")
    n_in = _int(m, "in_features", 1)
    _int(m, "out_features", 1)
    _bool(m, "bias")
    if not t.shape or t.shape[-1] != n_in:
        raise BadArg("input", f"input {_show(t)} does not end in in_features={n_in}")
    return _out((*t.shape[:-1], m["out_features"]))


def _conv(nd: int) -> Rule:
    def rule(b: Args, m: Args) -> Tensor:
        t = _tensor(b, "input")
        c_in, *size = _batch_at(t, "input", nd + 2)
        cin, cout = _int(m, "in_channels", 1), _int(m, "out_channels", 1)
        groups = _int(m, "groups", 1)
        k = _ints(m, "kernel_size", nd, 1)
        s, d = _ints(m, "stride", nd, 1), _ints(m, "dilation", nd, 1)
        _bool(m, "bias")
        _word(m, "padding_mode", ("zeros", "reflect", "replicate", "circular"))
        if c_in != cin:
            raise BadArg("input", f"input {_show(t)} has {c_in} channels, not in_channels={cin}")
        if cin % groups or cout % groups:
            raise BadArg("groups", f"groups={groups} does not divide the channels")
        if m["padding"] in ("same", "valid"):
            if m["padding"] == "same" and s != (1,) * nd:
                raise BadArg("padding", "padding='same' needs stride 1")
            p = (0,) * nd if m["padding"] == "valid" else None
        else:
            p = _ints(m, "padding", nd)
        out = []
        for i in range(nd):
            if p is None:
                out.append(size[i])
                continue
            span = size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1
            if span < 0:
                raise BadArg("kernel_size", f"the kernel is larger than the input {_show(t)}")
            out.append(span // s[i] + 1)
        return _out((BATCH, cout, *out))

    return rule


def _conv_tensors(nd: int) -> Tensors:
    def tensors(m: Args) -> dict[str, TensorSpec]:
        k = _ints(m, "kernel_size", nd, 1)
        cin, cout, groups = m["in_channels"], m["out_channels"], m["groups"]
        out: dict[str, TensorSpec] = {"weight": ("F32", (cout, cin // groups, *k))}
        if m["bias"]:
            out["bias"] = ("F32", (cout,))
        return out

    return tensors


def _batch_norm(nd: int) -> Rule:
    def rule(b: Args, m: Args) -> Tensor:
        t = _tensor(b, "input")
        c = _int(m, "num_features", 1)
        _num(m, "eps", 0.0)
        if m["momentum"] is not None:
            _num(m, "momentum", 0.0, 1.0)
        _bool(m, "affine"), _bool(m, "track_running_stats")
        ok = len(t.shape) in ((2, 3) if nd == 1 else (4,)) and t.shape[0] == BATCH
        if not ok or t.shape[1] != c:
            raise BadArg("input", f"input {_show(t)} is not [N, {c}, ...] for num_features={c}")
        return t

    return rule


def _bn_tensors(m: Args) -> dict[str, TensorSpec]:
    c = m["num_features"]
    out: dict[str, TensorSpec] = {}
    if m["affine"]:
        out |= {"weight": ("F32", (c,)), "bias": ("F32", (c,))}
    if m["track_running_stats"]:
        out |= {
            "running_mean": ("F32", (c,)),
            "running_var": ("F32", (c,)),
            "num_batches_tracked": ("I64", ()),
        }
    return out


def _layer_norm(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input")
    shape = _ints(
        m,
        "normalized_shape",
        len(m["normalized_shape"]) if isinstance(m["normalized_shape"], tuple) else 1,
        1,
    )
    _num(m, "eps", 0.0), _bool(m, "elementwise_affine"), _bool(m, "bias")
    if len(t.shape) < len(shape) or t.shape[-len(shape) :] != shape:
        raise BadArg("input", f"input {_show(t)} does not end in normalized_shape={list(shape)}")
    return t


def _ln_tensors(m: Args) -> dict[str, TensorSpec]:
    shape = _ints(
        m,
        "normalized_shape",
        len(m["normalized_shape"]) if isinstance(m["normalized_shape"], tuple) else 1,
        1,
    )
    if not m["elementwise_affine"]:
        return {}
    out: dict[str, TensorSpec] = {"weight": ("F32", shape)}
    if m["bias"]:
        out["bias"] = ("F32", shape)
    return out


def _group_norm(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input")
    g, c = _int(m, "num_groups", 1), _int(m, "num_channels", 1)
    _num(m, "eps", 0.0), _bool(m, "affine")
    if c % g:
        raise BadArg("num_groups", f"num_groups={g} does not divide num_channels={c}")
    if len(t.shape) < 2 or t.shape[0] != BATCH or t.shape[1] != c:
        raise BadArg("input", f"input {_show(t)} is not [N, {c}, ...]")
    return t


def _embedding(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input", "long")
    n = _int(m, "num_embeddings", 1)
    _int(m, "embedding_dim", 1)
    if m["padding_idx"] is not None:
        _int(m, "padding_idx", -n, n - 1)
    return _out((*t.shape, m["embedding_dim"]))


def _rnn(gates: int) -> tuple[Rule, Tensors]:
    def rule(b: Args, m: Args) -> tuple[Any, ...]:
        t = _tensor(b, "input")
        n_in, hidden = _int(m, "input_size", 1), _int(m, "hidden_size", 1)
        layers = _int(m, "num_layers", 1, 64)
        _bool(m, "bias"), _num(m, "dropout", 0.0, 1.0)
        dirs = 2 if _bool(m, "bidirectional") else 1
        first = _bool(m, "batch_first")
        length, size = _batch_at(t, "input", 3, 0 if first else 1)
        if size != n_in:
            raise BadArg("input", f"input {_show(t)} does not end in input_size={n_in}")
        out = (BATCH, length, dirs * hidden) if first else (length, BATCH, dirs * hidden)
        state = Tensor((dirs * layers, BATCH, hidden))
        return (_out(out), (state, state) if gates == 4 else state)

    def tensors(m: Args) -> dict[str, TensorSpec]:
        h, dirs = m["hidden_size"], 2 if m["bidirectional"] else 1
        out: dict[str, TensorSpec] = {}
        width = m["input_size"]
        for layer in range(m["num_layers"]):
            for suffix in ("", "_reverse")[:dirs]:
                out[f"weight_ih_l{layer}{suffix}"] = ("F32", (gates * h, width))
                out[f"weight_hh_l{layer}{suffix}"] = ("F32", (gates * h, h))
                if m["bias"]:
                    out[f"bias_ih_l{layer}{suffix}"] = ("F32", (gates * h,))
                    out[f"bias_hh_l{layer}{suffix}"] = ("F32", (gates * h,))
            width = dirs * h
        return out

    return rule, tensors


def _mha(b: Args, m: Args) -> tuple[Any, ...]:
    e, heads = _int(m, "embed_dim", 1), _int(m, "num_heads", 1)
    _num(m, "dropout", 0.0, 1.0), _bool(m, "bias")
    first = _bool(m, "batch_first")
    if e % heads:
        raise BadArg("num_heads", f"num_heads={heads} does not divide embed_dim={e}")
    at = 0 if first else 1
    lq, eq = _batch_at(_tensor(b, "query"), "query", 3, at)
    lk, ek = _batch_at(_tensor(b, "key"), "key", 3, at)
    lv, ev = _batch_at(_tensor(b, "value"), "value", 3, at)
    if (eq, ek, ev) != (e, e, e) or lk != lv:
        raise BadArg("inputs", f"query, key and value must be [.., .., {e}], key and value alike")
    weights: Tensor | None = None
    if _bool(b, "need_weights"):
        avg = _bool(b, "average_attn_weights")
        weights = _out((BATCH, lq, lk) if avg else (BATCH, heads, lq, lk))
    return (b["query"], weights)


def _mha_scratch(b: Args, m: Args) -> int:
    """The attention weights the layer computes inside (per sample)."""
    at = 1 if m["batch_first"] else 0
    return int(m["num_heads"] * b["query"].shape[at] * b["key"].shape[at])


def _sdpa_scratch(b: Args, m: Args) -> int:
    q, k = b["query"], b["key"]
    lead = broadcast(broadcast(q.shape[:-2], k.shape[:-2]), b["value"].shape[:-2])
    return int(math.prod(d for d in lead if d != BATCH) * q.shape[-2] * k.shape[-2])


def _rnn_scratch(gates: int) -> Callable[[Args, Args], int]:
    def scratch(b: Args, m: Args) -> int:
        t: Tensor = b["input"]
        dirs = 2 if m["bidirectional"] else 1
        return int(
            gates * m["hidden_size"] * t.per_sample // m["input_size"] * m["num_layers"] * dirs
        )

    return scratch


def _mha_tensors(m: Args) -> dict[str, TensorSpec]:
    e = m["embed_dim"]
    out: dict[str, TensorSpec] = {"in_proj_weight": ("F32", (3 * e, e))}
    if m["bias"]:
        out["in_proj_bias"] = ("F32", (3 * e,))
    out["out_proj.weight"] = ("F32", (e, e))
    if m["bias"]:
        out["out_proj.bias"] = ("F32", (e,))
    return out


def _parameter(b: Args, m: Args) -> Tensor:
    shape = _ints(m, "shape", len(m["shape"]) if isinstance(m["shape"], tuple) else 1, 1)
    _bool(m, "requires_grad")
    if len(shape) > 6:
        raise BadArg("shape", "at most 6 dimensions")
    return Tensor(shape, "float" if m["requires_grad"] else _word(m, "dtype", ("float", "long")))


# --- functions -----------------------------------------------------------------------


def _same(dtype: str | None = "float") -> Rule:
    return lambda b, m: _tensor(b, "input", dtype)


def _checked(check: Callable[[Args], Any]) -> Rule:
    def rule(b: Args, m: Args) -> Tensor:
        check(b)
        return _tensor(b, "input")

    return rule


def _softmax(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input")
    _dim(t, b, "dim")
    return t


def _pool(nd: int, kind: str) -> Rule:
    def rule(b: Args, m: Args) -> Tensor:
        t = _tensor(b, "input")
        c, *size = _batch_at(t, "input", nd + 2)
        k = _ints(b, "kernel_size", nd, 1)
        s = k if b["stride"] is None or b["stride"] == () else _ints(b, "stride", nd, 1)
        p = _ints(b, "padding", nd)
        d = _ints(b, "dilation", nd, 1) if kind == "max" else (1,) * nd
        ceil = _bool(b, "ceil_mode")
        if kind == "avg":
            _bool(b, "count_include_pad")
            if b["divisor_override"] is not None:
                _int(b, "divisor_override", 1)
        out = []
        for i in range(nd):
            if 2 * p[i] > d[i] * (k[i] - 1) + 1:
                raise BadArg("padding", "padding must be at most half of the kernel size")
            span = size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1
            if span < 0:
                raise BadArg("kernel_size", f"the kernel is larger than the input {_show(t)}")
            n = (span + (s[i] - 1 if ceil else 0)) // s[i] + 1
            if ceil and (n - 1) * s[i] >= size[i] + p[i]:
                n -= 1
            out.append(n)
        return _out((BATCH, c, *out))

    return rule


def _adaptive(nd: int) -> Rule:
    def rule(b: Args, m: Args) -> Tensor:
        t = _tensor(b, "input")
        c, *size = _batch_at(t, "input", nd + 2)
        value = b["output_size"]
        items = value if isinstance(value, tuple) else (value,) * nd
        if len(items) != nd:
            raise BadArg("output_size", f"output_size must be an integer or {nd} integers")
        out = [
            size[i] if v is None else _int({"output_size": v}, "output_size", 1, 1 << 16)
            for i, v in enumerate(items)
        ]
        return _out((BATCH, c, *out))

    return rule


_SCALAR = 2**31 - 1
"""Largest number arithmetic on constants and sizes may give (as the JSON's own)."""


def _arith(kind: str) -> Rule:
    def rule(b: Args, m: Args) -> Any:
        x, y = b["input"], b["other"]
        if not isinstance(x, Tensor) and not isinstance(y, Tensor):
            if isinstance(x, BatchSize) or isinstance(y, BatchSize):
                raise BadArg("inputs", "arithmetic on the batch size")
            for name in ("input", "other"):
                _num(b, name)
            if kind == "div" and y == 0:
                raise BadArg("other", "division by zero")
            ops = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
            value = ops[kind](x, y) if kind in ops else x / y
            if not -_SCALAR <= value <= _SCALAR:  # also refuses NaN
                raise BadArg("inputs", f"the result is out of range [-{_SCALAR}, {_SCALAR}]")
            return value
        shapes, dtypes = [], []
        for name, v in (("input", x), ("other", y)):
            if isinstance(v, Tensor):
                shapes.append(v.shape)
                dtypes.append(v.dtype)
            else:
                _num(b, name)
                dtypes.append("float" if isinstance(v, float) else "long")
        shape = broadcast(shapes[0], shapes[-1])
        long = kind != "div" and all(d == "long" for d in dtypes)
        return _out(shape, "long" if long else "float")

    return rule


def _cat(b: Args, m: Args) -> Tensor:
    ts = b["tensors"]
    if not isinstance(ts, tuple) or not ts or not all(isinstance(t, Tensor) for t in ts):
        raise BadArg("tensors", "tensors must be a list of tensors")
    first = ts[0]
    d = _dim(first, b, "dim")
    total = 0
    for t in ts:
        rest = [v for i, v in enumerate(t.shape) if i != d]
        if len(t.shape) != len(first.shape) or rest != [
            v for i, v in enumerate(first.shape) if i != d
        ]:
            raise BadArg("tensors", f"{_show(t)} does not fit {_show(first)} beside dim {d}")
        total += t.shape[d]
    return _out((*first.shape[:d], total, *first.shape[d + 1 :]), first.dtype)


def _flatten(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input", None)
    nd = max(len(t.shape), 1)
    start = _int(b, "start_dim", -nd, nd - 1) % nd
    end = _int(b, "end_dim", -nd, nd - 1) % nd
    if start > end:
        raise BadArg("end_dim", "end_dim comes before start_dim")
    span = t.shape[start : end + 1]
    if BATCH in span and len(span) > 1:
        raise BadArg("start_dim", "flattening would merge the batch dimension")
    merged = BATCH if BATCH in span else math.prod(span)
    return _out((*t.shape[:start], merged, *t.shape[end + 1 :]), t.dtype)


def _reshape(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input", None)
    items = b["shape"]
    if not items or len(items) > 8:
        raise BadArg("shape", "shape must have 1 to 8 dimensions")
    dims, infer = [], None
    for i, v in enumerate(items):
        if isinstance(v, BatchSize):
            dims.append(BATCH)
        elif isinstance(v, bool) or not isinstance(v, int) or v < -1 or v == 0:
            raise BadArg(
                "shape", f"shape item {v!r} must be a positive integer, -1 or the batch size"
            )
        elif v == -1:
            if infer is not None:
                raise BadArg("shape", "at most one -1")
            infer = i
            dims.append(1)
        else:
            dims.append(v)
    known = math.prod(d for d in dims if d != BATCH)
    has_batch = BATCH in t.shape
    if infer is not None:
        if BATCH in dims or not has_batch:
            if t.per_sample % known:
                raise BadArg("shape", f"cannot view {_show(t)} as {list(items)}")
            dims[infer] = t.per_sample // known
        elif known == t.per_sample:
            dims[infer] = BATCH
        else:
            raise BadArg("shape", f"viewing {_show(t)} as {list(items)} would mix the batch")
    if (BATCH in dims) != has_batch or math.prod(d for d in dims if d != BATCH) != t.per_sample:
        raise BadArg("shape", f"cannot view {_show(t)} as {list(items)}")
    return _out(tuple(dims), t.dtype)


def _permute(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input", None)
    nd = len(t.shape)
    dims = b["dims"]
    if len(dims) != nd or any(isinstance(v, bool) or not isinstance(v, int) for v in dims):
        raise BadArg("dims", f"dims must be {nd} integers")
    order = [v % nd if -nd <= v < nd else -1 for v in dims]
    if sorted(order) != list(range(nd)):
        raise BadArg("dims", f"dims {list(dims)} are not a permutation of {nd} dimensions")
    return Tensor(tuple(t.shape[i] for i in order), t.dtype)


def _transpose(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input", None)
    nd = len(t.shape)
    i, j = _int(b, "dim0", -nd, nd - 1) % nd, _int(b, "dim1", -nd, nd - 1) % nd
    shape = list(t.shape)
    shape[i], shape[j] = shape[j], shape[i]
    return Tensor(tuple(shape), t.dtype)


def _reduce(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input")
    value = b["dim"]
    if value is None:
        raise BadArg("dim", "give the dims to reduce (not the batch dimension)")
    dims = set()
    for v in value if isinstance(value, tuple) else (value,):
        dims.add(_dim(t, {"dim": v}, "dim"))
    keep = _bool(b, "keepdim")
    shape = tuple(1 if i in dims else d for i, d in enumerate(t.shape) if keep or i not in dims)
    return Tensor(shape, t.dtype)


def _squeeze(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input", None)
    if b["dim"] is None:
        raise BadArg("dim", "give squeeze a dim (a batch of one would lose its dimension)")
    d = _dim(t, b, "dim")
    return t if t.shape[d] != 1 else Tensor(t.shape[:d] + t.shape[d + 1 :], t.dtype)


def _unsqueeze(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input", None)
    d = _dim(t, b, "dim", extra=1)
    return Tensor((*t.shape[:d], 1, *t.shape[d:]), t.dtype)


def _matmul(b: Args, m: Args) -> Tensor:
    x, y = _tensor(b, "input"), _tensor(b, "other")
    a, c = x.shape, y.shape
    if len(a) < 2 or len(c) < 2:
        raise BadArg("inputs", "matmul needs tensors of at least 2 dimensions")
    if a[-1] != c[-2] or a[-1] == BATCH:
        raise BadArg("inputs", f"cannot multiply {_show(x)} by {_show(y)}")
    return _out((*broadcast(a[:-2], c[:-2]), a[-2], c[-1]))


def _sdpa(b: Args, m: Args) -> Tensor:
    q, k, v = (_tensor(b, n) for n in ("query", "key", "value"))
    _num(b, "dropout_p", 0.0, 1.0), _bool(b, "is_causal")
    if b["scale"] is not None:
        _num(b, "scale")
    if len(q.shape) < 2 or len(k.shape) != len(q.shape) or len(v.shape) != len(q.shape):
        raise BadArg("inputs", "query, key and value must have the same number of dimensions")
    if (
        q.shape[-1] != k.shape[-1]
        or k.shape[-2] != v.shape[-2]
        or BATCH in q.shape[-2:] + k.shape[-2:]
    ):
        raise BadArg("inputs", f"query {_show(q)}, key {_show(k)} and value {_show(v)} do not fit")
    lead = broadcast(broadcast(q.shape[:-2], k.shape[:-2]), v.shape[:-2])
    return _out((*lead, q.shape[-2], v.shape[-1]))


def _stochastic_depth(b: Args, m: Args) -> Tensor:
    t = _tensor(b, "input")
    _num(b, "p", 0.0, 1.0)
    if _word(b, "mode", ("row", "batch")) == "row" and (not t.shape or t.shape[0] != BATCH):
        raise BadArg("input", "mode='row' needs the batch dimension first")
    return t


def _index(t: Tensor, index: Any) -> Tensor:
    items = index if isinstance(index, tuple) else (index,)
    if sum(isinstance(i, EllipsisArg) for i in items) > 1:
        raise BadArg("index", "at most one ...")
    used = sum(1 for i in items if i is not None and not isinstance(i, EllipsisArg))
    if used > len(t.shape):
        raise BadArg("index", f"too many indices for {_show(t)}")
    out: list[int] = []
    dims = iter(t.shape)
    for item in items:
        if item is None:
            out.append(1)
        elif isinstance(item, EllipsisArg):
            out.extend(next(dims) for _ in range(len(t.shape) - used))
        elif isinstance(item, SliceArg):
            d = next(dims)
            if d == BATCH:
                if item.slice != (None, None, None):
                    raise BadArg("index", "only ':' may index the batch dimension")
                out.append(BATCH)
            else:
                if item.slice[2] is not None and item.slice[2] < 1:
                    raise BadArg("index", "slice steps must be positive")
                out.append(len(range(*slice(*item.slice).indices(d))))
        elif isinstance(item, int) and not isinstance(item, bool):
            d = next(dims)
            if d == BATCH:
                raise BadArg("index", f"index {item} would pick samples of the batch")
            if not -d <= item < d:
                raise BadArg("index", f"index {item} is out of range for {_show(t)}")
        else:
            raise BadArg("index", f"cannot index with {item!r}")
    out.extend(dims)
    return _out(tuple(out), t.dtype)


def _getitem(b: Args, m: Args) -> Any:
    value, index = b["input"], b["index"]
    if isinstance(value, Tensor):
        return _index(value, index)
    if isinstance(value, tuple):
        if (
            isinstance(index, bool)
            or not isinstance(index, int)
            or not -len(value) <= index < len(value)
        ):
            raise BadArg("index", f"index {index!r} is out of range for {len(value)} items")
        return value[index]
    raise BadArg("input", "only tensors and tuples can be indexed")


def _size(b: Args, m: Args) -> Any:
    t = _tensor(b, "input", None)
    sizes = tuple(BatchSize() if d == BATCH else d for d in t.shape)
    if b["dim"] is None:
        return sizes
    nd = len(t.shape)
    return sizes[_int(b, "dim", -nd, nd - 1) % nd]


def _cast(dtype: str) -> Rule:
    return lambda b, m: Tensor(_tensor(b, "input", None).shape, dtype)


_I = (("input", R),)
_GATES_LSTM, _GATES_GRU = _rnn(4), _rnn(3)
_CONV_CTOR = (
    ("in_channels", R),
    ("out_channels", R),
    ("kernel_size", R),
    ("stride", 1),
    ("padding", 0),
    ("dilation", 1),
    ("groups", 1),
    ("bias", True),
    ("padding_mode", "zeros"),
)
_BN_CTOR = (
    ("num_features", R),
    ("eps", 1e-5),
    ("momentum", 0.1),
    ("affine", True),
    ("track_running_stats", True),
)
_RNN_CTOR = (
    ("input_size", R),
    ("hidden_size", R),
    ("num_layers", 1),
    ("bias", True),
    ("batch_first", False),
    ("dropout", 0.0),
    ("bidirectional", False),
)
_MAXPOOL = (
    ("input", R),
    ("kernel_size", R),
    ("stride", None),
    ("padding", 0),
    ("dilation", 1),
    ("ceil_mode", False),
)
_AVGPOOL = (
    ("input", R),
    ("kernel_size", R),
    ("stride", None),
    ("padding", 0),
    ("ceil_mode", False),
    ("count_include_pad", True),
    ("divisor_override", None),
)
_BIN = (("input", R), ("other", R))

OPS: dict[str, OpDef] = {
    # layers with state
    "linear": OpDef(
        _I,
        _linear,
        ctor=(("in_features", R), ("out_features", R), ("bias", True)),
        tensors=lambda m: {
            "weight": ("F32", (m["out_features"], m["in_features"])),
            **({"bias": ("F32", (m["out_features"],))} if m["bias"] else {}),
        },
    ),
    "conv1d": OpDef(_I, _conv(1), ctor=_CONV_CTOR, tensors=_conv_tensors(1)),
    "conv2d": OpDef(_I, _conv(2), ctor=_CONV_CTOR, tensors=_conv_tensors(2)),
    "batch_norm1d": OpDef(_I, _batch_norm(1), ctor=_BN_CTOR, tensors=_bn_tensors),
    "batch_norm2d": OpDef(_I, _batch_norm(2), ctor=_BN_CTOR, tensors=_bn_tensors),
    "layer_norm": OpDef(
        _I,
        _layer_norm,
        ctor=(("normalized_shape", R), ("eps", 1e-5), ("elementwise_affine", True), ("bias", True)),
        tensors=_ln_tensors,
    ),
    "group_norm": OpDef(
        _I,
        _group_norm,
        ctor=(("num_groups", R), ("num_channels", R), ("eps", 1e-5), ("affine", True)),
        tensors=lambda m: (
            {"weight": ("F32", (m["num_channels"],)), "bias": ("F32", (m["num_channels"],))}
            if m["affine"]
            else {}
        ),
    ),
    "embedding": OpDef(
        _I,
        _embedding,
        ctor=(("num_embeddings", R), ("embedding_dim", R), ("padding_idx", None)),
        tensors=lambda m: {"weight": ("F32", (m["num_embeddings"], m["embedding_dim"]))},
    ),
    "lstm": OpDef(
        _I, _GATES_LSTM[0], ctor=_RNN_CTOR, tensors=_GATES_LSTM[1], scratch=_rnn_scratch(4)
    ),
    "gru": OpDef(_I, _GATES_GRU[0], ctor=_RNN_CTOR, tensors=_GATES_GRU[1], scratch=_rnn_scratch(3)),
    "multihead_attention": OpDef(
        (
            ("query", R),
            ("key", R),
            ("value", R),
            ("need_weights", True),
            ("average_attn_weights", True),
        ),
        _mha,
        ctor=(
            ("embed_dim", R),
            ("num_heads", R),
            ("dropout", 0.0),
            ("bias", True),
            ("batch_first", False),
        ),
        tensors=_mha_tensors,
        scratch=_mha_scratch,
    ),
    "parameter": OpDef(
        (),
        _parameter,
        ctor=(("shape", R), ("requires_grad", True), ("dtype", "float")),
        tensors=lambda m: {
            "": (
                "F32" if m["requires_grad"] or m["dtype"] == "float" else "I64",
                _ints(m, "shape", len(m["shape"]) if isinstance(m["shape"], tuple) else 1, 1),
            )
        },
    ),
    # elementwise
    "dropout": OpDef((("input", R), ("p", 0.5)), _checked(lambda b: _num(b, "p", 0.0, 1.0))),
    "relu": OpDef(_I, _same()),
    "relu6": OpDef(_I, _same()),
    "gelu": OpDef(
        (("input", R), ("approximate", "none")),
        _checked(lambda b: _word(b, "approximate", ("none", "tanh"))),
    ),
    "silu": OpDef(_I, _same()),
    "sigmoid": OpDef(_I, _same()),
    "tanh": OpDef(_I, _same()),
    "hardswish": OpDef(_I, _same()),
    "hardsigmoid": OpDef(_I, _same()),
    "elu": OpDef((("input", R), ("alpha", 1.0)), _checked(lambda b: _num(b, "alpha"))),
    "leaky_relu": OpDef(
        (("input", R), ("negative_slope", 0.01)), _checked(lambda b: _num(b, "negative_slope"))
    ),
    "softmax": OpDef((("input", R), ("dim", R)), _softmax),
    "log_softmax": OpDef((("input", R), ("dim", R)), _softmax),
    "identity": OpDef(_I, _same(None)),
    "contiguous": OpDef(_I, _same(None)),
    "neg": OpDef(_I, _same()),
    "stochastic_depth": OpDef((("input", R), ("p", R), ("mode", R)), _stochastic_depth),
    "add": OpDef(_BIN, _arith("add")),
    "sub": OpDef(_BIN, _arith("sub")),
    "mul": OpDef(_BIN, _arith("mul")),
    "div": OpDef(_BIN, _arith("div")),
    # pooling
    "max_pool1d": OpDef(_MAXPOOL, _pool(1, "max")),
    "max_pool2d": OpDef(_MAXPOOL, _pool(2, "max")),
    "avg_pool1d": OpDef(_AVGPOOL, _pool(1, "avg")),
    "avg_pool2d": OpDef(_AVGPOOL, _pool(2, "avg")),
    "adaptive_avg_pool1d": OpDef((("input", R), ("output_size", R)), _adaptive(1)),
    "adaptive_avg_pool2d": OpDef((("input", R), ("output_size", R)), _adaptive(2)),
    # shapes
    "cat": OpDef((("tensors", R), ("dim", 0)), _cat),
    "flatten": OpDef((("input", R), ("start_dim", 0), ("end_dim", -1)), _flatten),
    "reshape": OpDef((("input", R), ("shape", R)), _reshape, vararg="shape"),
    "view": OpDef((("input", R), ("shape", R)), _reshape, vararg="shape"),
    "permute": OpDef((("input", R), ("dims", R)), _permute, vararg="dims"),
    "transpose": OpDef((("input", R), ("dim0", R), ("dim1", R)), _transpose),
    "squeeze": OpDef((("input", R), ("dim", None)), _squeeze),
    "unsqueeze": OpDef((("input", R), ("dim", R)), _unsqueeze),
    "getitem": OpDef((("input", R), ("index", R)), _getitem),
    "size": OpDef((("input", R), ("dim", None)), _size),
    "long": OpDef(_I, _cast("long")),
    "float": OpDef(_I, _cast("float")),
    # reductions and products
    "mean": OpDef((("input", R), ("dim", None), ("keepdim", False)), _reduce),
    "sum": OpDef((("input", R), ("dim", None), ("keepdim", False)), _reduce),
    "matmul": OpDef(_BIN, _matmul),
    "scaled_dot_product_attention": OpDef(
        (
            ("query", R),
            ("key", R),
            ("value", R),
            ("dropout_p", 0.0),
            ("is_causal", False),
            ("scale", None),
        ),
        _sdpa,
        scratch=_sdpa_scratch,
    ),
}
"""The allow-list: op name -> signature and shape rule. Nothing else can be named."""
