"""Short ids: what tables show, and what every command takes back.

Ids are UUIDv7s: ids made within a minute of each other share their first dozen
characters (a timestamp), while their last ones are random. So a table shows each id's
shortest *suffix* of at least :data:`MIN_SHOWN` characters that no other row shares,
and a command takes any unique *prefix* or *suffix* of an id, resolved here against
the list the server gives. A full id (a canonical UUID) is used as it is, unlisted.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from peertrain.client.errors import ClientError
from peertrain.client.sync import Client

from .state import state_of

__all__ = [
    "DATASET",
    "JOB",
    "MIN_SHOWN",
    "PEER",
    "AmbiguousId",
    "IdKind",
    "UnknownId",
    "match_id",
    "resolve",
    "resolving",
    "short_ids",
    "shown_id",
]

F = TypeVar("F", bound=Callable[..., Any])
MIN_SHOWN = 8
"""The fewest characters a table shows of an id."""


class AmbiguousId(ClientError, LookupError):
    """A short id that more than one item's id starts or ends with."""


class UnknownId(ClientError, LookupError):
    """A short id that no item's id starts or ends with."""


@dataclass(frozen=True)
class IdKind:
    """One kind of thing a command names by id: how to list them and read their ids."""

    noun: str
    id_keys: tuple[str, ...]
    listing: Callable[[Client], list[dict[str, Any]]]

    def id_of(self, item: Mapping[str, Any]) -> str:
        """The item's id (``""`` when it has none)."""
        for key in self.id_keys:
            if item.get(key):
                return str(item[key])
        return ""


JOB = IdKind("job", ("job_id", "id"), lambda pt: pt.list_jobs())
DATASET = IdKind("dataset", ("id", "dataset_id"), lambda pt: pt.list_datasets())
PEER = IdKind("peer", ("peer_id", "id"), lambda pt: pt.list_peers())
# Uploaded weights have no listing: their ids are taken whole.


def short_ids(ids: Iterable[str], minimum: int = MIN_SHOWN) -> dict[str, str]:
    """Each id's shortest suffix (``minimum`` characters at least) that none of the
    other ``ids`` ends with; an id shorter than that is shown whole."""
    # Reversed and sorted, the ids that share the longest end with one are its neighbours.
    backwards = sorted({i[::-1] for i in ids if i})
    shown: dict[str, str] = {}
    for n, this in enumerate(backwards):
        neighbours = backwards[max(0, n - 1) : n] + backwards[n + 1 : n + 2]
        shared = max((_common(this, other) for other in neighbours), default=0)
        size = min(len(this), max(minimum, shared + 1))
        shown[this[::-1]] = this[:size][::-1]
    return shown


def shown_id(value: Any, short: Mapping[str, str], wide: bool) -> str:
    """An id as a table shows it: whole with ``--wide``, else its short id (from
    :func:`short_ids` over the rows shown); ``-`` when there is none."""
    text = str(value or "")
    return (text if wide else short.get(text, text)) or "-"


def _common(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _is_full(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def match_id(kind: IdKind, text: str, items: Sequence[Mapping[str, Any]]) -> str:
    """The one id among ``items`` that is ``text``, or starts or ends with it.

    Raises
    ------
    AmbiguousId
        Several ids start or end with ``text``; the message lists them with names.
    UnknownId
        None does.
    """
    wanted = text.strip().lower()
    ids = {kind.id_of(item): item for item in items}
    ids.pop("", None)
    if wanted in {i.lower() for i in ids}:
        return next(i for i in ids if i.lower() == wanted)
    found = [
        i for i in ids if wanted and (i.lower().startswith(wanted) or i.lower().endswith(wanted))
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise UnknownId(f"no {kind.noun} has an id that starts or ends with {text!r}")
    listed = ", ".join(f"{i} ({ids[i].get('name') or '-'})" for i in found[:10])
    more = f" and {len(found) - 10} more" if len(found) > 10 else ""
    raise AmbiguousId(
        f"{text!r} names {len(found)} {kind.noun}s: {listed}{more}; give more of the id"
    )


def resolve(pt: Client, kind: IdKind, text: str, *, unknown_ok: bool = False) -> str:
    """The full id ``text`` stands for: itself when it is a full id, else the one id of
    ``kind``'s listing that starts or ends with it (see :func:`match_id`).

    With ``unknown_ok``, a ``text`` that no id matches is given back as it is: for a
    request the server checks whole (a job's dataset and peers), which then reports
    every problem at once.
    """
    if _is_full(text):
        return text
    try:
        return match_id(kind, text, kind.listing(pt))
    except UnknownId:
        if unknown_ok:
            return text
        raise


def resolving(command: F, **kinds: IdKind) -> F:
    """``command`` with its parameters named in ``kinds`` (``job_id=JOB``) resolved
    before it runs: for commands whose module resolves none itself."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs[name] for name in kinds if kwargs.get(name)}
        if given:
            with state_of(kwargs["ctx"]).client() as pt:
                for name, text in given.items():
                    kwargs[name] = resolve(pt, kinds[name], str(text))
        return command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
