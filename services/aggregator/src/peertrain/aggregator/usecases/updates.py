"""A peer's announced update: decide, download, check, fold, record.

Every announcement ends in exactly one of: ``update.accepted`` (folded into the round's
running sum), ``update.rejected`` (with a code and a reason), or an acknowledged no-op
(a duplicate, or a job this service has nothing on). Nothing here raises for a bad
update, so a hostile peer can neither crash the consumer nor make it retry forever.

Any instance checks and records an update (peers' announcements come on one shared
queue); the holder of the job folds it into the round's running sum. An update another
instance accepted reaches the holder as that instance's ``update.accepted`` on its feed
(:func:`fold_recorded`): the holder folds the accepted copy from the bucket then, while
the round still runs, so the round is not rebuilt from the bucket at its close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import structlog
import torch

from peertrain.aggregator.domain import (
    Candidate,
    Decision,
    Duplicate,
    Ignored,
    JobMemory,
    Refusal,
    UpdateRefused,
    codes,
    decide_update,
)
from peertrain.aggregator.domain.buffered import fold_target
from peertrain.aggregator.domain.checks import summed_on_arrival
from peertrain.aggregator.metrics import UPDATES, observe_update_bytes
from peertrain.common.blobs import PutResult
from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.models import UpdateAccepted, UpdateRejected, accepted_update_key
from peertrain.common.events.tasks import UpdateAnnounced
from peertrain.common.events.training import RoundOpened
from peertrain.common.security import PeerMessage, refuse
from peertrain.common.specs import CompressionSpec

from .checks import compare
from .numerics import State, decode_update, state_nbytes, update_norm
from .storage import accepted_delta, fetch_capped, model_state, sha256_hex
from .versions import begin_work, build_early, work_key

if TYPE_CHECKING:
    from ..application import AggregatorApp

__all__ = ["fold_recorded", "receive_update"]

log = structlog.get_logger(__name__)

OCTETS = "application/octet-stream"


async def receive_update(app: AggregatorApp, message: PeerMessage[UpdateAnnounced]) -> None:
    """Handle one verified ``peer.<id>.update`` message.

    Announcements are handled as they come, up to ``update_workers`` at once. The job's
    lock is held to decide and to record, not while the update is downloaded and
    checked: one update's download no longer holds the job's others (nor every other
    job's, as when an instance handled one announcement at a time). Recording decides
    again on the state as it is then, so an announcement delivered twice, or decided
    meanwhile by another instance, is recorded once.
    """
    body, peer_id = message.body, message.peer_id
    with structlog.contextvars.bound_contextvars(
        job_id=body.job_id, task_id=body.task_id, peer_id=peer_id
    ):
        async with app.checking:
            await _receive(app, peer_id, body)


async def _receive(app: AggregatorApp, peer_id: str, body: UpdateAnnounced) -> None:
    async with app.lock(body.job_id):
        state, decision = await _decide(app, peer_id, body)
        if not isinstance(decision, Candidate):
            await _settle(app, state, peer_id, body, decision)
            return
    checked: tuple[UpdateAccepted, dict[str, torch.Tensor]] | UpdateRefused
    try:
        checked = await _check(app, state, peer_id, body, decision)
    except UpdateRefused as exc:
        checked = exc
    async with app.lock(body.job_id):
        state, decision = await _decide(app, peer_id, body)  # as things are now
        if not isinstance(decision, Candidate):
            await _settle(app, state, peer_id, body, decision)
        elif isinstance(checked, UpdateRefused):
            await _reject(app, state, peer_id, body, checked.reason_code, checked.message)
        else:
            await _accept(app, state, peer_id, body, decision, *checked)


async def _decide(
    app: AggregatorApp, peer_id: str, body: UpdateAnnounced
) -> tuple[JobMemory, Decision]:
    """What the announcement is on the job's state (under the job's lock)."""
    state = await app.load(body.job_id)
    decision = decide_update(state, peer_id, body)
    if isinstance(decision, Ignored | Refusal) and decision.stale:
        # the cache may be behind the job stream (queues are not ordered with each
        # other): decide again on the caught-up state. Only then: a read per refused
        # message would let junk cost the store a read each.
        state = await app.load(body.job_id, catch_up=True)
        decision = decide_update(state, peer_id, body)
    return state, decision


async def _settle(
    app: AggregatorApp,
    state: JobMemory,
    peer_id: str,
    body: UpdateAnnounced,
    decision: Decision,
) -> None:
    """An announcement that is not worth downloading: counted, logged, or refused."""
    if isinstance(decision, Ignored | Duplicate):
        outcome = "ignored" if isinstance(decision, Ignored) else "duplicate"
        UPDATES.labels(outcome=outcome, code="").inc()
        if isinstance(decision, Ignored):  # counted; logged at most once a second
            refuse(app.settings.queue("updates"), "ignored", why=decision.reason)
        else:
            log.info("update not recorded", outcome=outcome, reason=decision.reason)
    elif isinstance(decision, Refusal):
        await _reject(app, state, peer_id, body, decision.code, decision.reason)


async def _accept(
    app: AggregatorApp,
    state: JobMemory,
    peer_id: str,
    body: UpdateAnnounced,
    decision: Candidate,
    event: UpdateAccepted,
    delta: dict[str, torch.Tensor],
) -> None:
    """Record a checked update (with the verdicts of the checks it completes) and fold
    it into the round's running sum if this instance holds the job."""
    version = decision.opened.model_version

    async def verdicts(now: JobMemory) -> list[EventData]:
        # against the check group's updates accepted by then (by any instance: asked
        # again after every conflict, so a pair accepted at once by two instances is
        # still compared by the second)
        return list(await compare(app, now, event, delta, version))

    recorded = await _record(app, state, peer_id, body, [event], then=verdicts)
    if recorded is None:
        UPDATES.labels(outcome="duplicate", code="").inc()
        return
    app.deltas.put(body.job_id, event.key, event.sha256, delta)
    if app.leases.holds(body.job_id) and summed_on_arrival(recorded, event):
        await _fold(app, recorded, decision.opened, event, delta)
    UPDATES.labels(outcome="accepted", code="").inc()
    observe_update_bytes(event)
    log.info("update accepted", norm=round(event.norm, 6))


RECORD_ATTEMPTS = 10
"""Appends of one verdict, each after reading what other instances appended."""


async def _record(
    app: AggregatorApp,
    state: JobMemory,
    peer_id: str,
    body: UpdateAnnounced,
    data: Sequence[EventData],
    *,
    then: Callable[[JobMemory], Awaitable[list[EventData]]] | None = None,
) -> JobMemory | None:
    """Append the verdict on ``body`` (``data``, then what ``then`` makes of the state it
    is appended to); the state it is in (``None``: decided meanwhile).

    Every instance records verdicts on the job's model stream, so another one's may
    land first: then this reads on and, if the announcement is still undecided, appends
    again (without downloading and checking the update again; ``then`` is asked again).
    """
    for _ in range(RECORD_ATTEMPTS - 1):
        try:
            more = await then(state) if then is not None else []
            await app.append(state, [*data, *more], actor=peer_id)
            return state
        except ConcurrencyError:
            state = await app.load(body.job_id, fresh_models=True)
            if not isinstance(decide_update(state, peer_id, body), Candidate | Refusal):
                log.info("update decided meanwhile by another instance")
                return None
    more = await then(state) if then is not None else []
    await app.append(state, [*data, *more], actor=peer_id)  # the last try raises: retried
    return state


async def _reject(
    app: AggregatorApp,
    state: JobMemory,
    peer_id: str,
    body: UpdateAnnounced,
    code: str,
    reason: str,
) -> None:
    rejected = UpdateRejected(
        job_id=body.job_id,
        round=body.round,
        attempt=body.attempt,
        shard=body.shard,
        task_id=body.task_id,
        peer_id=peer_id,
        code=code,
        reason=reason,
        strike=code in codes.STRIKES,
    )
    if await _record(app, state, peer_id, body, [rejected]) is None:
        return
    UPDATES.labels(outcome="rejected", code=code).inc()
    log.warning("update rejected", code=code, reason=reason)


async def _check(
    app: AggregatorApp,
    state: JobMemory,
    peer_id: str,
    body: UpdateAnnounced,
    candidate: Candidate,
) -> tuple[UpdateAccepted, dict[str, torch.Tensor]]:
    """Download and validate, and keep the aggregator's own copy at the event's
    content-addressed key; returns the event to record and the decoded delta.

    The round aggregates that copy of what was validated, not the peer's object: the
    peer's upload form stays usable until its deadline, so the object at the task's key
    may change after the download. The copy is written while the update is decoded and
    checked (the two waited one after the other before); the copy of an update refused
    then is removed again.
    """
    assert state.configured is not None
    base_version = candidate.opened.model_version
    base = await model_state(app, state, base_version)
    compression = state.configured.training.compression
    encoded = state_nbytes(base, compression)
    cap = min(app.settings.max_update_bytes, encoded + app.settings.update_slack_bytes)
    if body.size > cap:
        raise UpdateRefused(codes.TOO_LARGE, f"{body.size} bytes announced, the cap is {cap}")
    data = await fetch_capped(app, candidate.task.update_key, cap)
    if len(data) != body.size:
        raise UpdateRefused(
            codes.SIZE_MISMATCH, f"the object has {len(data)} bytes, {body.size} announced"
        )
    if sha256_hex(data) != body.sha256:
        raise UpdateRefused(codes.SHA256_MISMATCH, "the object's sha256 is not the announced one")
    key = accepted_update_key(body.job_id, body.round, body.attempt, body.shard, body.sha256)
    copy = asyncio.create_task(app.blobs.put_bytes(key, data, content_type=OCTETS))
    try:
        delta, norm = await asyncio.to_thread(
            _decoded, data, base, state.configured.aggregation.update_bound, compression
        )
    except UpdateRefused:
        await _drop_copy(app, copy, key)
        raise
    except BaseException:  # cancelled, or a fault: the message is tried again
        copy.add_done_callback(_retrieved)
        copy.cancel()
        raise
    await copy
    accepted = UpdateAccepted(
        job_id=body.job_id,
        round=body.round,
        attempt=body.attempt,
        shard=body.shard,
        task_id=body.task_id,
        peer_id=peer_id,
        key=key,
        sha256=body.sha256,
        size=len(data),
        norm=norm,
        weight=candidate.weight,
        claimed_samples=body.samples,
        train_loss=body.train_loss,
        train_accuracy=body.train_accuracy,
        compression=compression.kind,
        dense_size=state_nbytes(base),
        checks=candidate.task.checks,
    )
    return accepted, dict(delta)


def _decoded(
    data: bytes, base: State, bound: float, compression: CompressionSpec
) -> tuple[State, float]:
    """The update's dense delta, checked, and its norm (one hop to a worker thread)."""
    delta = decode_update(data, base, bound, compression)
    return delta, update_norm(delta)


async def _drop_copy(app: AggregatorApp, copy: asyncio.Task[PutResult], key: str) -> None:
    """Remove the copy of an update refused while it was being written (best effort: an
    object left behind goes with the job's objects when the job is deleted)."""
    try:
        await copy
        await app.blobs.delete(key)
    except Exception as exc:
        log.warning("could not remove the copy of a refused update", key=key, error=repr(exc))


def _retrieved(task: asyncio.Task[PutResult]) -> None:
    """Read a given-up copy's outcome, so that its failure is not reported unread."""
    if not task.cancelled():
        task.exception()


async def _fold(
    app: AggregatorApp,
    state: JobMemory,
    opened: RoundOpened,
    accepted: UpdateAccepted,
    delta: dict[str, torch.Tensor],
) -> None:
    """Add the update to the round's running sum (best effort: a closing round rebuilds
    from the bucket whenever the running sum is not exactly what it includes)."""
    assert state.configured is not None
    target = fold_target(state, opened)
    if target is None:  # asynchronous, between rounds: the round's close rebuilds it
        return
    opened, factor = target
    if _summed(app, state.job_id, opened, accepted):
        return
    work = app.rounds.get(state.job_id)
    try:
        if work is None or (work.round, work.attempt) != (opened.round, opened.attempt):
            if work is not None:
                work.close()
            work, _ = await begin_work(
                app, state, opened.round, opened.attempt, opened.model_version
            )
            app.rounds[state.job_id] = work
        key = work_key(accepted.key, accepted.sha256)
        weight = accepted.weight * factor
        group = str(accepted.shard)
        await asyncio.to_thread(work.accumulator.add, delta, weight, key=key, group=group)
        await build_early(app, state)
    except Exception:
        log.exception("could not fold the update; the round will be rebuilt when it closes")
        dropped = app.rounds.pop(state.job_id, None)
        if dropped is not None:
            dropped.close()
        app.early.pop(state.job_id, None)


def _summed(app: AggregatorApp, job_id: str, opened: RoundOpened, accepted: UpdateAccepted) -> bool:
    """Whether the holder's running sum of ``opened``'s round (or the version made of
    it early) already has ``accepted``."""
    key = work_key(accepted.key, accepted.sha256)
    here = (opened.round, opened.attempt)
    work, early = app.rounds.get(job_id), app.early.get(job_id)
    folded = work.keys() if work is not None and (work.round, work.attempt) == here else set()
    made = early.keys if early is not None and (early.round, early.attempt) == here else set()
    return key in folded or key in made


async def fold_recorded(app: AggregatorApp, job_id: str, event: RecordedEvent) -> None:
    """An ``update.accepted`` heard on the feed: folded into the job's cached state (no
    read); by the job's holder, also into the round's running sum, from the accepted
    copy in the bucket, unless it is there already (it accepted the update itself).

    An update another instance checked was missing from the holder's running sum, so
    every such round was rebuilt from the bucket when it closed (a download per update,
    on the path from the last update to the next round). Best effort: whatever goes
    wrong here, the round is rebuilt at its close, as before.
    """
    accepted = event.data
    assert isinstance(accepted, UpdateAccepted)
    async with app.lock(job_id):
        app.observe(job_id, event)
        if not app.leases.holds(job_id):
            return
        state = await app.load(job_id)
        opened = state.opened.get((accepted.round, accepted.attempt))
        if opened is None or state.configured is None or not summed_on_arrival(state, accepted):
            return
        if not state.configured.aggregation.is_async and not state.is_open(
            accepted.round, accepted.attempt
        ):
            return  # closed meanwhile: its version is made (or being made) without this
        # (an asynchronous task outlives its round: its update goes to the round open now)
        if _summed(app, job_id, opened, accepted):
            return  # this instance accepted it, and folded it then
        try:
            base = await model_state(app, state, opened.model_version)
            delta = await accepted_delta(app, state, accepted.key, accepted.sha256, base)
        except Exception as exc:  # the round is rebuilt at its close
            log.warning("could not fold an update accepted elsewhere", error=repr(exc))
            return
        await _fold(app, state, opened, accepted, delta)
        log.info("update accepted elsewhere folded", task_id=accepted.task_id)
