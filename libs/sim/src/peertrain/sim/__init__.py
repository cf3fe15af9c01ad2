"""PeerTrain simulation: many virtual peers in one process, running the platform's code.

No Ray and no stack: the orchestrator's rules, the dataset service's sharding, the
aggregator's use cases and the peer runtime's training, wired to an in-memory event log
and blob store, on a virtual clock. See :func:`run`.
"""

from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.eventlog import MemoryEventLog

from .api import run
from .data import SimData, from_arrays, load_data
from .engine import RoundMetrics, SimResult, Simulation
from .peers import Volunteers
from .spec import JobSpec, parse_job_spec

__all__ = [
    "JobSpec",
    "MemoryBlobStore",
    "MemoryEventLog",
    "RoundMetrics",
    "SimData",
    "SimResult",
    "Simulation",
    "Volunteers",
    "from_arrays",
    "load_data",
    "parse_job_spec",
    "run",
]
