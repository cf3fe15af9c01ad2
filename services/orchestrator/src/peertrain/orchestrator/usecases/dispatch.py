"""Talking to peers: task messages (with presigned URLs) and cancel messages.

Each task is sent once, by the instance that holds its job's lease (the one that
assigned it). It sends a task it just assigned at once (:func:`dispatch_soon`); the
bus still brings every ``task.assigned`` to every instance (a queue of each one's own),
and :func:`dispatch` then only checks that the send worked, sending itself after a
failure. An instance that does not hold the job sends nothing: with one shared queue,
half the tasks reached the other instance, which sent them a second time. An instance
that takes a job over, or holds it at start-up, sends the tasks of the job's open round
its peers have not taken on yet (:func:`resend_open`): the holder may have died between
assigning and sending, so every task still reaches its peer at least once.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING

import structlog

from peertrain.common.bus import PEERS
from peertrain.common.events import RecordedEvent
from peertrain.common.events.tasks import (
    CancelMessage,
    Download,
    TaskMessage,
    UploadForm,
    peer_message_key,
)
from peertrain.common.events.training import JobCancelled, TaskAssigned, TaskLost
from peertrain.common.specs import count_parameters

from ..metrics import TASKS_DISPATCHED
from . import catchup

if TYPE_CHECKING:
    from ..application import OrchestratorApp
    from ..domain import Job

__all__ = ["MAX_DISPATCHING", "dispatch", "dispatch_soon", "resend_open", "task_message"]

log = structlog.get_logger(__name__)

MAX_DISPATCHING = 10_000
"""In-process dispatches remembered until the bus brings their ``task.assigned``."""

FEED_WAIT_S = 2.0
"""How long a dispatch waits for this instance's feed to fold an event another instance
appended, before it reads the job's streams itself."""


def dispatch_soon(app: OrchestratorApp, event: RecordedEvent) -> None:
    """Send a task this process just assigned without waiting for the bus to bring
    ``task.assigned`` back (one relay and one consumer hop less per round)."""
    assert isinstance(event.data, TaskAssigned)
    _in_background(app, event.id, event.data)


def _in_background(app: OrchestratorApp, key: str, assigned: TaskAssigned) -> None:
    dispatching = app.dispatching
    if len(dispatching) > MAX_DISPATCHING:  # bus deliveries lost: forget the oldest
        for stale in list(dispatching)[: len(dispatching) // 2]:
            dispatching.pop(stale)
    dispatching[key] = asyncio.create_task(_dispatch_task(app, assigned))


async def _dispatch_task(app: OrchestratorApp, assigned: TaskAssigned) -> bool:
    try:
        message = await task_message(app, assigned)
        if message is not None:
            await _send(app, assigned.peer_id, "task", message.model_dump_json(), assigned.task_id)
    except Exception as exc:  # the bus delivery will try again
        log.warning("sending a task failed; the bus will retry", error=repr(exc))
        return False
    return True


async def dispatch(app: OrchestratorApp, event: RecordedEvent) -> None:
    """``task.assigned`` -> the task message; ``job.cancelled`` -> cancel messages;
    ``task.lost`` ``surplus`` -> a cancel of that task (its round closed without it:
    its peer stops training what is no longer needed)."""
    data = event.data
    if isinstance(data, TaskAssigned):
        sent = app.dispatching.pop(event.id, None)
        if sent is not None and await sent:
            return
        if not app.leases.holds(data.job_id):
            return  # its holder sent it (and sends it again should it take the job over)
        await app.folded_to(data.job_id, event.seq, timeout_s=FEED_WAIT_S)
        async with app.lock:  # another instance may have assigned it: read that far
            await catchup.seen(app, event, data.job_id)
        message = await task_message(app, data)
        if message is None:
            return
        await _send(app, data.peer_id, "task", message.model_dump_json(), data.task_id)
    elif isinstance(data, JobCancelled):
        await app.folded_to(data.job_id, event.seq, timeout_s=FEED_WAIT_S)
        async with app.lock:
            job = await catchup.seen(app, event, data.job_id)
        if job is None or job.created is None:
            return
        peers = set(job.created.peers)
        if job.current is not None:
            peers |= {t.peer_id for t in job.current.tasks.values()}
        body = CancelMessage(job_id=data.job_id).model_dump_json()
        for peer_id in sorted(peers):
            await _send(app, peer_id, "cancel", body, f"{event.id}.{peer_id}")
    elif isinstance(data, TaskLost) and data.reason == "surplus":
        body = CancelMessage(
            job_id=data.job_id, task_id=data.task_id, reason=data.reason
        ).model_dump_json()
        await _send(app, data.peer_id, "cancel", body, event.id)


def resend_open(app: OrchestratorApp, job: Job) -> int:
    """Send, in the background, the tasks of ``job``'s open round that their peers have
    not taken on (``assigned``, not ``accepted``); how many (the caller just took the
    job's lease, or holds it at start-up)."""
    if job.current is None or job.terminal is not None or job.created is None:
        return 0
    waiting = [t for t in job.current.tasks.values() if t.acceptable]
    for task in waiting:
        assigned = TaskAssigned(
            job_id=job.job_id,
            round=task.round,
            attempt=task.attempt,
            shard=task.shard,
            task_id=task.task_id,
            peer_id=task.peer_id,
            update_key=task.update_key,
            deadline=task.deadline,
        )
        key = f"{task.task_id}@taken"  # no bus delivery pops it: it goes when done
        _in_background(app, key, assigned)
        app.dispatching[key].add_done_callback(partial(_forget, app.dispatching, key))
    if waiting:
        log.info("sending the open tasks of a job taken", job_id=job.job_id, tasks=len(waiting))
    return len(waiting)


def _forget(dispatching: dict[str, asyncio.Task[bool]], key: str, _: object) -> None:
    dispatching.pop(key, None)


async def _send(app: OrchestratorApp, peer_id: str, kind: str, body: str, message_id: str) -> None:
    await app.publisher.publish(
        body,
        exchange=PEERS.name,
        routing_key=peer_message_key(peer_id, kind),
        message_id=message_id,
    )
    TASKS_DISPATCHED.labels(kind=kind).inc()


async def task_message(app: OrchestratorApp, assigned: TaskAssigned) -> TaskMessage | None:
    """The message for an assigned task, with presigned URLs valid past its deadline;
    ``None`` when there is nothing to send any more."""
    async with app.lock:
        job = app.jobs.get(assigned.job_id)
        found = job.dispatch(assigned.task_id) if job is not None else None
        if job is None or found is None:
            return None  # nothing to do any more (ended, lost, already answered)
    task, rnd, version, plan, conf = (
        found.task,
        found.round,
        found.version,
        found.plan,
        found.configured,
    )
    settings, blobs = app.settings, app.blobs
    features = conf.feature_spec.for_peers()
    remaining = (task.deadline - app.clock.now()).total_seconds()
    expires = int(max(60.0, remaining) + settings.presign_slack_s)
    expires = min(expires, 7 * 24 * 3600)
    max_bytes = (
        count_parameters(conf.model, features.data_shape) * 4 + settings.update_overhead_bytes
    )
    form = await blobs.presigned_post(task.update_key, max_bytes=max_bytes, expires_s=expires)
    message = TaskMessage(
        task_id=task.task_id,
        job_id=job.job_id,
        round=task.round,
        attempt=task.attempt,
        shard=task.shard,
        deadline=task.deadline,
        model_version=rnd.model_version,
        model=Download(
            url=await blobs.presigned_get(rnd.model_key, expires_s=expires),
            sha256=rnd.model_sha256,
            size=version.size,
            key=rnd.model_key,
        ),
        data=Download(
            url=await blobs.presigned_get(plan.key, expires_s=expires),
            sha256=plan.sha256,
            size=plan.size,
            key=plan.key,
        ),
        upload=UploadForm(
            url=form["url"],
            fields=dict(form["fields"]),
            key=task.update_key,
            max_bytes=max_bytes,
        ),
        model_spec=conf.model,
        feature_spec=features,
        training=found.training,
        seed=found.seed,
    )
    # The spec was validated with job.configured, and a model instance is taken as it is
    # (not walked again for a NUL: tens of ms for an image's or a wide table's).
    return message
