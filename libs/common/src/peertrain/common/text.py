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
message holding one is refused at decode, before any handler or store call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, StringConstraints, model_validator

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


def has_nul(value: object, _depth: int = 0) -> bool:
    """Whether ``value`` holds a NUL in any string, mapping key included, however nested
    in mappings, lists and tuples (deeper than 32 levels counts as holding one)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, bytes | bytearray):
        return b"\x00" in value
    if _depth >= _MAX_DEPTH:
        return isinstance(value, Mapping | list | tuple)
    if isinstance(value, Mapping):
        return any(has_nul(k, _depth + 1) or has_nul(v, _depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_nul(v, _depth + 1) for v in value)
    return False


def refuse_nul(value: Any) -> Any:
    """``value`` itself, or :class:`ValueError` if it holds a NUL (see :func:`has_nul`)."""
    if has_nul(value):
        raise ValueError("text holds a NUL character, which the store cannot hold")
    return value


class StoreText(BaseModel):
    """Base of a model parsed from untrusted input: a NUL anywhere in it is refused.

    The check runs on the raw input (JSON decoded, or the keyword arguments), before the
    fields are validated, so it also covers fields a subclass adds later.
    """

    @model_validator(mode="before")
    @classmethod
    def _refuse_nul(cls, data: Any) -> Any:
        return refuse_nul(data)
