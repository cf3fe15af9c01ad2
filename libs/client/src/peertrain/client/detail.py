"""The error shape's ``detail``, in words: which field, which peer, why, on one line.

The services send ``{"error": {"code", "message", "detail"}}``; ``detail`` is one of a
few shapes, all rendered here (pure, no I/O):

- a list of ``{"loc", "msg"}`` items (a request's validation, a spec's problems):
  ``training.lrr: Extra inputs are not permitted; model: ...``;
- ``{"peers": [{"peer_id", "problem"}], "problems": [...]}`` (peers that cannot take
  part in a job): ``peer p1 is offline; peer p9 is unknown``;
- any other mapping (a quota, a state, a field): ``quota=running_jobs, limit=2, used=2``;
- a list of strings (a password policy) or a string.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAX_ITEMS", "describe_detail"]

MAX_ITEMS = 12
_MAX_VALUE = 80
_PEER_PROBLEMS = {
    "unknown": "is unknown (or not yours to use)",
    "offline": "is offline",
    "disabled": "is disabled",
    "not_registered": "has not registered its device yet",
    "outdated": "runs a peer runtime too old to read this platform's tasks (update it)",
}
# Where a request's field lives is not news: ``body.training.lr`` reads ``training.lr``.
_LOC_ROOTS = ("body", "query", "path")


def describe_detail(detail: Any, message: str = "") -> str:
    """``detail`` on one line ("" when there is nothing to say).

    Parameters
    ----------
    detail
        The error's ``detail``, as sent.
    message
        The error's message: a value it already names (a dataset id) is not repeated.
    """
    if detail is None or detail == "" or detail == [] or detail == {}:
        return ""
    if isinstance(detail, str):
        text = _one_line(detail)
        return "" if text in message else text
    if isinstance(detail, Mapping):
        return _mapping(detail, message)
    if isinstance(detail, Sequence):
        return _items([_item(x) for x in detail])
    return _one_line(str(detail))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _items(parts: list[str]) -> str:
    parts = [p for p in parts if p]
    more = len(parts) - MAX_ITEMS
    shown = "; ".join(parts[:MAX_ITEMS])
    return f"{shown}; and {more} more (--json shows all)" if more > 0 else shown


def _loc(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        parts = [str(p) for p in value]
        while parts and parts[0] in _LOC_ROOTS:
            parts = parts[1:]
        return ".".join(parts)
    return "" if value is None else str(value)


def _item(item: Any) -> str:
    if isinstance(item, Mapping) and ("msg" in item or "loc" in item):
        loc, msg = _loc(item.get("loc")), _one_line(str(item.get("msg") or "not valid"))
        return f"{loc}: {msg}" if loc else msg
    if isinstance(item, Mapping) and "peer_id" in item:
        return _peer(item)
    if isinstance(item, Mapping):
        return _pairs(item)
    return _one_line(str(item))


def _peer(item: Mapping[str, Any]) -> str:
    problem = str(item.get("problem") or "cannot take part")
    return f"peer {item.get('peer_id')} {_PEER_PROBLEMS.get(problem, problem)}"


def _mapping(detail: Mapping[str, Any], message: str) -> str:
    parts: list[str] = []
    rest = dict(detail)
    peers = rest.pop("peers", None)
    problems = rest.pop("problems", None)
    if isinstance(peers, list):
        parts += [_item(p) for p in peers]
    elif peers is not None:
        rest["peers"] = peers
    if isinstance(problems, list):
        parts += [_item(p) for p in problems]
    if rest:
        parts.append(_pairs(rest, message))
    return _items(parts)


def _pairs(mapping: Mapping[str, Any], message: str = "") -> str:
    out = []
    for key, value in mapping.items():
        if value is None or isinstance(value, Mapping):
            continue
        text = ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        text = _one_line(text)
        if message and text in message:
            continue
        if len(text) > _MAX_VALUE:
            text = text[: _MAX_VALUE - 3] + "..."
        out.append(f"{key}={text}")
    return ", ".join(out)
