"""Why an update is refused: machine-readable codes carried by ``update.rejected``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from peertrain.common.events.models import NUMERIC_REFUSALS
from peertrain.ml.problems import ProblemCode

__all__ = [
    "BAD_ENCODING",
    "JOB_ENDED",
    "MISSING_OBJECT",
    "NON_FINITE",
    "NORM_TOO_LARGE",
    "NOT_SAFETENSORS",
    "NUMERIC",
    "ROUND_NOT_OPEN",
    "SHA256_MISMATCH",
    "SIZE_MISMATCH",
    "STRIKES",
    "TASK_LOST",
    "TASK_MISMATCH",
    "TOO_LARGE",
    "TOO_STALE",
    "UNKNOWN_TASK",
    "WRONG_KEY",
    "WRONG_PEER",
    "WRONG_TENSORS",
    "refusal_code",
]

UNKNOWN_TASK: Final = "unknown_task"
WRONG_PEER: Final = "wrong_peer"
TASK_MISMATCH: Final = "task_mismatch"
TASK_LOST: Final = "task_lost"
ROUND_NOT_OPEN: Final = "round_not_open"
WRONG_KEY: Final = "wrong_key"
JOB_ENDED: Final = "job_ended"
TOO_LARGE: Final = "too_large"
SIZE_MISMATCH: Final = "size_mismatch"
MISSING_OBJECT: Final = "missing_object"
SHA256_MISMATCH: Final = "sha256_mismatch"
NOT_SAFETENSORS: Final = "not_safetensors"
WRONG_TENSORS: Final = "wrong_tensors"
NON_FINITE: Final = "non_finite"
NORM_TOO_LARGE: Final = "norm_too_large"
BAD_ENCODING: Final = "bad_encoding"
"""A compressed update that does not decode against the model as the job's
``training.compression`` says (a missing scale, an index out of range, ...)."""

TOO_STALE: Final = "too_stale"
"""Asynchronous rounds: the update's base version is more than ``max_staleness`` behind
the newest (not a strike: a slow peer is not a hostile one)."""

STRIKES: Final = frozenset(
    {
        UNKNOWN_TASK,
        WRONG_PEER,
        TASK_MISMATCH,
        WRONG_KEY,
        TOO_LARGE,
        SIZE_MISMATCH,
        MISSING_OBJECT,
        SHA256_MISMATCH,
        NOT_SAFETENSORS,
        WRONG_TENSORS,
        BAD_ENCODING,
    }
)
"""Refusals that count against the sender when made (``update.rejected`` ``strike``): an
honest peer never causes them. Late or superseded updates (``task_lost``,
``round_not_open``) do not count; nor, when made, do refusals of an update's numbers
(``NUMERIC``): an honest peer of a diverging job sends those, so the orchestrator
counts them only in a round whose majority was accepted."""

NUMERIC: Final = NUMERIC_REFUSALS
"""``non_finite``, ``norm_too_large``: about the numbers, not the sender."""
assert {NON_FINITE, NORM_TOO_LARGE} == NUMERIC

_REFUSALS: Final = (
    (ProblemCode.NOT_SAFETENSORS, NOT_SAFETENSORS),
    (ProblemCode.NON_FINITE, NON_FINITE),
    (ProblemCode.NORM_TOO_LARGE, NORM_TOO_LARGE),
    (ProblemCode.WRONG_TENSORS, WRONG_TENSORS),
)
"""An invalid update's problem codes and the refusal each gives, first match wins."""


def refusal_code(problems: Iterable[ProblemCode]) -> str:
    """The refusal code of an update with these problems (``wrong_tensors`` if none fit)."""
    found = set(problems)
    return next((code for problem, code in _REFUSALS if problem in found), WRONG_TENSORS)
