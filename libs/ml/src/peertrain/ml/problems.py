"""Why an update is refused, for machines: a code with each human sentence.

:class:`peertrain.ml.errors.UpdateInvalid` carries these; callers map the codes (the
aggregator to its ``update.rejected`` codes) and never read the messages to decide.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

__all__ = ["ProblemCode", "UpdateProblem"]


class ProblemCode(StrEnum):
    """Why an update is refused, for machines (the message is for people)."""

    NOT_SAFETENSORS = "not_safetensors"
    """The bytes are not a well-formed safetensors file."""
    WRONG_TENSORS = "wrong_tensors"
    """Missing or unexpected tensors, or a shape or dtype other than the model's."""
    NON_FINITE = "non_finite"
    """A NaN or an infinity among the values."""
    NORM_TOO_LARGE = "norm_too_large"
    """The L2 norm is over the bound (or overflows)."""


class UpdateProblem(NamedTuple):
    """One reason to refuse an update: a :class:`ProblemCode` and a human sentence."""

    code: ProblemCode
    message: str
