"""The orchestrator's typed errors (the HTTP edge maps ``status_code`` and ``code``)."""

from __future__ import annotations

from peertrain.common.errors import Conflict, NotFound, ValidationFailed
from peertrain.common.peers import NotEnoughPeers

__all__ = [
    "DatasetNotFound",
    "DatasetNotReady",
    "JobNotFound",
    "JobRequestInvalid",
    "JobStateConflict",
    "NotEnoughPeers",
    "PeersUnavailable",
]


class JobNotFound(NotFound):
    """No such job, or not the caller's to see."""

    code = "job_not_found"


class DatasetNotFound(NotFound):
    """The job names a dataset that does not exist or is not the caller's."""

    code = "dataset_not_found"


class DatasetNotReady(Conflict):
    """The dataset exists but is not validated (still validating, or rejected)."""

    code = "dataset_not_ready"


class PeersUnavailable(Conflict):
    """Some named peers cannot take part (unknown, not the caller's, offline, disabled)."""

    code = "peers_unavailable"


class JobRequestInvalid(ValidationFailed):
    """The request is well-formed JSON but not a job we can run."""

    code = "job_invalid"


class JobStateConflict(Conflict):
    """The job's state does not allow this (e.g. cancelling a finished job)."""

    code = "job_state_conflict"
