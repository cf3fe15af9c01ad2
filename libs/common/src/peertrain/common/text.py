"""Text the store can hold: the type of every free-text or id field of a request body.

PostgreSQL (under FerretDB) refuses a NUL character in text, in a write and in a query
alike, so a NUL that reached either would fail with a 500 (in a request) or fail a
consumer's handler every time it is tried (in a message). Request fields that reach the
store are declared with these types: the OpenAPI document says so (a ``pattern``), and a
body holding a NUL there is a 422 in the one error shape before anything runs. (Paths
are guarded by :class:`peertrain.common.app.middleware.NulPathGuard`, and the dataset
service's multipart fields by its form reader.)

What peers send (telemetry bodies, device specs) is parsed by models based on
:class:`StoreText`, which refuses a NUL anywhere in the input, nested or not, so a peer
message holding one is refused at decode, before any handler or store call. From JSON,
the check costs one search of the body (a NUL can only be written ``\\u0000`` there);
walking the decoded input of a task message with MNIST's 784 feature columns took
about 3 ms of its 5 ms parse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Annotated, Any, Self

from pydantic import BaseModel, StringConstraints, ValidationInfo, model_validator

__all__ = ["NO_NUL", "Id", "Name", "StoreText", "Text", "has_nul", "refuse_nul"]

NO_NUL = r"^[^\x00]*$"
"""A pattern: any text without a NUL character."""

Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=NO_NUL)]
"""A name a person gives (a job's, a dataset's): 1-200 characters, no NUL."""

Id = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=NO_NUL)]
"""The id of a resource, as a caller names it: 1-100 characters, no NUL."""

Text = Annotated[str, StringConstraints(pattern=NO_NUL)]
"""Any text without a NUL (lengths are the field's own business)."""

_MAX_DEPTH = 32
_ATOMS = frozenset({int, float, bool, type(None)})


def has_nul(value: object, _depth: int = 0) -> bool:
    """Whether ``value`` holds a NUL in any string, mapping key included, however nested
    in mappings, lists and tuples (deeper than 32 levels counts as holding one)."""
    # Concrete types first: decoded JSON is only these, and ``isinstance`` with an ABC
    # (``Mapping``) was most of the walk's time.
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict | Mapping):
        return _any_nul(chain(value, value.values()), _depth)
    if isinstance(value, list | tuple):
        return _any_nul(value, _depth)
    if isinstance(value, bytes | bytearray):
        return b"\x00" in value
    return False


def _any_nul(items: Iterable[object], depth: int) -> bool:
    """Whether any of a container's items (at ``depth``) holds a NUL."""
    if depth >= _MAX_DEPTH:
        return True
    for item in items:
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif type(item) not in _ATOMS and has_nul(item, depth + 1):
            return True
    return False


def refuse_nul(value: Any) -> Any:
    """``value`` itself, or :class:`ValueError` if it holds a NUL (see :func:`has_nul`)."""
    if has_nul(value):
        raise ValueError("text holds a NUL character, which the store cannot hold")
    return value


_NUL_FREE = object()
"""Key of a validation context whose JSON body was searched and holds no NUL."""


class StoreText(BaseModel):
    """Base of a model parsed from untrusted input: a NUL anywhere in it is refused.

    The check runs on the raw input (JSON decoded, or the keyword arguments), before the
    fields are validated, so it also covers fields a subclass adds later. From JSON
    (:meth:`model_validate_json`) it is one search of the body for the only way JSON can
    write a NUL, ``\\u0000`` (a raw one is invalid JSON), done once for the whole
    message; only a body holding that text (which may be an escaped backslash before
    ``u0000``) is walked model by model.
    """

    @classmethod
    def model_validate_json(
        cls, json_data: str | bytes | bytearray, *, context: Any | None = None, **kwargs: Any
    ) -> Self:
        """:meth:`pydantic.BaseModel.model_validate_json`, the NUL check done on the body."""
        escape: Any = "\\u0000" if isinstance(json_data, str) else b"\\u0000"
        if escape not in json_data and (context is None or isinstance(context, dict)):
            context = {**(context or {}), _NUL_FREE: True}
        return super().model_validate_json(json_data, context=context, **kwargs)

    @model_validator(mode="before")
    @classmethod
    def _refuse_nul(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(info.context, dict) and info.context.get(_NUL_FREE):
            return data
        return refuse_nul(data)
