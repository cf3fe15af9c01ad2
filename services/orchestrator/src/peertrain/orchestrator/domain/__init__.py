"""The orchestrator's pure core: job state machine, projections, job requests."""

from .directory import DatasetInfo, Directory, PeerInfo
from .job import Job, Round, Task
from .rounds import Env, reconcile

__all__ = ["DatasetInfo", "Directory", "Env", "Job", "PeerInfo", "Round", "Task", "reconcile"]
