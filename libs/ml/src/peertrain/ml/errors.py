"""Typed errors of :mod:`peertrain.ml`, rooted in :class:`peertrain.common.errors.PeerTrainError`.

Each mixes in the builtin that fits, so callers may catch ``ValueError`` or the PeerTrain
class; the HTTP edge (in a service) maps ``status_code`` and ``code``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from peertrain.common.errors import PeerTrainError, ValidationFailed

from .problems import ProblemCode, UpdateProblem

__all__ = [
    "AggregationError",
    "DataInvalid",
    "GraphUnsupported",
    "MLError",
    "NotSafetensors",
    "TrainingCancelled",
    "UpdateInvalid",
]


class MLError(PeerTrainError):
    """Root of the errors raised by :mod:`peertrain.ml`."""

    code = "ml_error"


class DataInvalid(MLError, ValidationFailed):
    """Training or evaluation tensors do not match the model (shape, dtype, labels)."""

    status_code = 422
    code = "data_invalid"


class GraphUnsupported(MLError, ValueError):
    """A model cannot be turned into a layer graph: a step with no allow-listed op, a
    forward ``torch.fx`` cannot trace, or a rebuilt graph that differs from the model."""

    status_code = 422
    code = "graph_unsupported"


class UpdateInvalid(MLError, ValidationFailed):
    """A weight update was refused.

    ``issues`` are the coded problems (:class:`UpdateProblem`); ``problem_codes`` their
    codes, for machines; ``problems`` their messages (also in ``detail``).
    """

    status_code = 422
    code = "update_invalid"
    default_problem: ClassVar[ProblemCode] = ProblemCode.WRONG_TENSORS
    """The code of the one problem when no ``issues`` are given."""

    def __init__(self, message: str, *, issues: Sequence[UpdateProblem] = ()) -> None:
        self.issues = tuple(issues) or (UpdateProblem(self.default_problem, message),)
        self.problems = [p.message for p in self.issues]
        super().__init__(message, detail={"problems": self.problems})

    @property
    def problem_codes(self) -> frozenset[ProblemCode]:
        """The codes of :attr:`issues`."""
        return frozenset(p.code for p in self.issues)


class NotSafetensors(UpdateInvalid):
    """The bytes are not a well-formed safetensors file (nothing in them was executed)."""

    code = "not_safetensors"
    default_problem = ProblemCode.NOT_SAFETENSORS


class AggregationError(MLError, RuntimeError):
    """A round accumulator was misused or cannot produce a result."""

    code = "aggregation_error"


class TrainingCancelled(MLError):
    """Local training stopped because ``should_stop()`` said so.

    ``epochs_done`` counts the epochs that completed before the stop.
    """

    code = "training_cancelled"

    def __init__(self, message: str = "training was cancelled", *, epochs_done: int = 0) -> None:
        self.epochs_done = epochs_done
        super().__init__(message, detail={"epochs_done": epochs_done})
