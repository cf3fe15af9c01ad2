"""The aggregator's typed errors."""

from __future__ import annotations

from peertrain.common.errors import Conflict, NotFound, PeerTrainError

__all__ = [
    "AggregatorError",
    "FinalNotExported",
    "JobNotFound",
    "NoEvaluatedVersion",
    "UpdateRefused",
    "VersionNotFound",
    "WeightsTooLarge",
]


class AggregatorError(PeerTrainError):
    """Root of the aggregator's errors."""

    code = "aggregator_error"


class JobNotFound(AggregatorError, NotFound):
    """No such job, or not the caller's."""

    code = "job_not_found"


class FinalNotExported(AggregatorError, Conflict):
    """The job's final model is not exported yet."""

    code = "final_not_exported"


class VersionNotFound(AggregatorError, NotFound):
    """The job has no model version of that number (yet)."""

    code = "version_not_found"


class NoEvaluatedVersion(AggregatorError, Conflict):
    """The best version was asked for, and no version is evaluated yet."""

    code = "no_evaluated_version"


class UpdateRefused(AggregatorError, ValueError):
    """An update fails a check; ``reason_code`` goes into ``update.rejected``."""

    code = "update_refused"

    def __init__(self, reason_code: str, message: str) -> None:
        super().__init__(message, detail={"code": reason_code})
        self.reason_code = reason_code


class WeightsTooLarge(AggregatorError, ValueError):
    """Uploaded weights passed the size cap; the rest of the body was not read."""

    status_code = 413
    code = "payload_too_large"

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            f"the weights exceed the limit of {max_bytes} bytes", detail={"max_bytes": max_bytes}
        )
