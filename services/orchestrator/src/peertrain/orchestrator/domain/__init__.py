"""The orchestrator's pure core: job state machine, projections, job requests."""

from .directory import DatasetInfo, Directory, PeerInfo
from .job import Env, Job, Round, Task, reconcile

__all__ = ["DatasetInfo", "Directory", "Env", "Job", "PeerInfo", "Round", "Task", "reconcile"]
