"""Replaying an asynchronous job's log gives its versions bit for bit, on any event log.

An asynchronous job's versions depend on the order its updates arrived in; that order
is in the log (``round.closed`` ``included``, each with the version its task trained
from), so a fresh aggregator that reads the log, and nothing else, builds the same
versions. :func:`replay_versions` copies a simulated job's log into ``log`` (the
in-memory log, or MongoDB/FerretDB on the stack: ``tests/stack/test_async_replay.py``)
without its versions past 0 and their evaluations, drives a fresh
:class:`~peertrain.aggregator.application.AggregatorApp` with the job's events as the
platform does, and returns what it built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from peertrain.aggregator.application import AGGREGATOR_SUBSCRIPTIONS, AggregatorApp
from peertrain.aggregator.config import AggregatorSettings
from peertrain.common.app import Ports, deliver
from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.eventlog import LogPort
from peertrain.common.events import NewEvent
from peertrain.common.events.models import (
    ModelDiverged,
    ModelEvaluated,
    ModelExported,
    ModelVersionCreated,
    model_key,
)
from peertrain.common.leases import SoleInstance
from peertrain.sim import SimResult

__all__ = ["ASYNC_SPEC", "ASYNC_VOLUNTEERS", "async_spec", "replay_versions", "versions_of"]

ASYNC_SPEC: dict[str, Any] = {
    "model": {"arch": "mlp", "hidden": [32]},
    "training": {"rounds": 5, "lr": 0.05, "batch_size": 16, "momentum": 0.9, "seed": 23},
    "aggregation": {"mode": "async", "buffer_size": 2, "max_staleness": 5},
    "sharding": {"strategy": "iid"},
}
"""``max_staleness`` is the job's rounds: the simulation keeps every accepted update's
copy a later version may include, so here all of them (a replay reads them all)."""


def async_spec(calibration: str) -> dict[str, Any]:
    """:data:`ASYNC_SPEC` with ``aggregation.calibration`` (``none`` or ``cached``)."""
    return {**ASYNC_SPEC, "aggregation": {**ASYNC_SPEC["aggregation"], "calibration": calibration}}


ASYNC_VOLUNTEERS: dict[str, Any] = {"slowdowns": (1.0, 2.0, 4.0, 8.0)}
"""Four peers of uneven speed: updates of old versions land in later buffers."""


def versions_of(events: list[Any]) -> dict[int, str]:
    """``version -> sha256`` of the ``model.version.created`` among ``events``."""
    return {e.version: e.sha256 for e in events if isinstance(e, ModelVersionCreated)}


def _rebuilt(data: object) -> bool:
    """What the replay must build again itself (versions past 0, what follows them)."""
    if isinstance(data, ModelVersionCreated):
        return data.version > 0
    return isinstance(data, ModelEvaluated | ModelDiverged | ModelExported)


async def replay_versions(result: SimResult, log: LogPort, work_dir: Path) -> dict[int, str]:
    """The versions a fresh aggregator builds from ``result``'s log copied into ``log``."""
    assert result.blobs is not None
    job_id = next(e.stream for e in result.log.events if e.stream.startswith("job:"))[4:]
    blobs = MemoryBlobStore()
    built = {model_key(job_id, v) for v in versions_of([e.data for e in result.log.events])}
    for key, data in result.blobs.objects.items():
        if key not in built or key == model_key(job_id, 0):
            await blobs.put_bytes(key, data)
    model = [e for e in result.log.events if e.stream == f"model:{job_id}"]
    kept = [NewEvent.of(e.data, producer="aggregator") for e in model if not _rebuilt(e.data)]
    await log.append(f"model:{job_id}", kept, expected_version=0)
    work_dir.mkdir(parents=True, exist_ok=True)
    app = AggregatorApp(
        Ports(log=log, blobs=blobs, leases=SoleInstance()), AggregatorSettings(work_dir=work_dir)
    )
    seq = 0
    for event in result.log.events:
        if event.stream != f"job:{job_id}":
            continue
        new = NewEvent.of(event.data, producer="orchestrator")
        [recorded] = await log.append(event.stream, [new], expected_version=seq)
        seq += 1
        await deliver(AGGREGATOR_SUBSCRIPTIONS, app, recorded)
    return versions_of([e.data for e in await log.read_stream(f"model:{job_id}")])
