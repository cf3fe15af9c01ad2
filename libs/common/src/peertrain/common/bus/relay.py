"""The outbox relay: publishes what its process appended, straight from memory.

The relay listens to its event log's appends (:meth:`EventLog.on_append`) and keeps
the events of its producer in memory until the broker confirms them. Each pass
publishes a batch to ``peertrain.events`` (routing key = event type) as persistent,
mandatory messages on a channel with publisher confirms, then records the confirmed
ones with one insert (:meth:`Outbox.confirmed`). No pass reads the log or the outbox.

Only the sweep reads, and it is rare (``sweep_interval_s``): it settles what a writer
that died mid-append left behind (see :mod:`peertrain.common.eventlog.outbox`) and hands
the events it finds to this relay. At start-up the relay catches up at once with every
marker of its producer (the previous process's unconfirmed events).

An event no queue is bound for is returned by RabbitMQ: it waits in memory and is
retried; past ``unroutable_grace_s`` it is left in the log only. Broker or database
outages are waited out with backoff; the relay never gives up, so nothing appended is
ever lost.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime

import structlog
from aiormq.exceptions import DeliveryError, PublishError
from faststream.rabbit import RabbitBroker

from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.eventlog import EventLog
from peertrain.common.events import RecordedEvent, to_message
from peertrain.common.metrics import (
    EVENTS_PUBLISHED,
    OUTBOX_LAG,
    OUTBOX_PENDING,
    OUTBOX_UNROUTABLE,
    OUTBOX_UNROUTED,
)

from .topology import EVENTS, declare_exchanges

__all__ = ["OutboxRelay"]

log = structlog.get_logger(__name__)


class OutboxRelay:
    """Publish one producer's appended events, forever.

    Parameters
    ----------
    log
        The event log whose appends this relay publishes.
    broker
        A connected broker from :func:`~peertrain.common.bus.broker.make_broker`.
    producer
        Only events with this ``producer`` are relayed (``None``: all).
    batch_size
        Events per pass; they are published concurrently and confirmed together.
    unroutable_retry_s
        How long an unroutable event waits before it is tried again.
    unroutable_grace_s
        How long an unroutable event is kept trying, from its first unroutable return
        (not from when it happened). A queue, once declared, is durable
        and keeps its bindings while its consumer is down, so an event that stays
        unroutable this long has no consumer in this deployment: it is left in the log
        only (counted in ``peertrain_outbox_unrouted_total``). ``None`` keeps trying.
    publish_timeout_s
        How long one publish may wait for its confirmation.
    stale_after_s
        How old an outbox marker must be before the sweep settles it against the log
        (younger ones may belong to an append still in progress elsewhere).
    sweep_interval_s
        How often the sweep runs (each run reads the two small outbox collections).
    clock
        Its monotonic seconds time the retries, the grace and the sweeps (tests pass a
        :class:`~peertrain.common.clock.ManualClock`).
    """

    def __init__(
        self,
        log: EventLog,
        broker: RabbitBroker,
        *,
        producer: str | None,
        batch_size: int = 2000,
        unroutable_retry_s: float = 5.0,
        unroutable_grace_s: float | None = None,
        publish_timeout_s: float = 10.0,
        stale_after_s: float = 30.0,
        sweep_interval_s: float = 30.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.log = log
        self.broker = broker
        self.producer = producer
        self.batch_size = batch_size
        self.unroutable_retry_s = unroutable_retry_s
        self.unroutable_grace_s = unroutable_grace_s
        self.publish_timeout_s = publish_timeout_s
        self.stale_after_s = stale_after_s
        self.sweep_interval_s = sweep_interval_s
        self.clock = clock
        self._label = producer or "all"
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._ready: deque[RecordedEvent] = deque()
        self._retry: list[tuple[float, RecordedEvent]] = []  # (when, event): unroutable
        self._held: set[str] = set()  # ids queued, in flight or waiting to retry
        self._unroutable_since: dict[str, float] = {}  # id -> first unroutable return
        self._wake = asyncio.Event()
        self._caught_up = False
        self._unsubscribe = log.on_append(self._on_append)

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Run the relay in a background task."""
        if self._task is None:
            self._stopping.clear()
            self._task = asyncio.create_task(self.run(), name=f"outbox-relay-{self._label}")

    async def stop(self) -> None:
        """Stop after the current pass; what is not confirmed stays in the outbox."""
        self._stopping.set()
        self._unsubscribe()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def pending(self) -> int:
        """Events this relay holds and the broker has not confirmed yet."""
        return len(self._held)

    async def run(self) -> None:
        """Relay until stopped; errors are logged and retried with backoff."""
        backoff = 0.1
        declared = False
        next_sweep = self.clock.monotonic() + self.sweep_interval_s
        while not self._stopping.is_set():
            try:
                if not declared:
                    await declare_exchanges(self.broker)
                    declared = True
                if self.clock.monotonic() >= next_sweep:
                    await self.sweep()
                    next_sweep = self.clock.monotonic() + self.sweep_interval_s
                published = await self.relay_once()
                backoff = 0.1
                if published == 0:
                    await self._idle(until=next_sweep)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # broker or database down: wait and retry
                log.warning("outbox relay pass failed", error=repr(exc), retry_in_s=backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def _idle(self, *, until: float) -> None:
        wake_at = min([until] + [when for when, _ in self._retry])
        timeout = max(0.0, wake_at - self.clock.monotonic())
        if not self._ready and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
        self._wake.clear()

    # -- feeding ----------------------------------------------------------------------

    def _on_append(self, events: list[RecordedEvent]) -> None:
        self._enqueue(e for e in events if self.producer is None or e.producer == self.producer)

    def _enqueue(self, events: Iterable[RecordedEvent]) -> None:
        added = False
        for event in events:
            if event.id not in self._held:
                self._held.add(event.id)
                self._ready.append(event)
                added = True
        if added:
            OUTBOX_PENDING.labels(producer=self._label).set(len(self._held))
            self._wake.set()

    async def sweep(self, *, older_than_s: float | None = None) -> int:
        """Settle the outbox (see :meth:`Outbox.sweep`); queue what it finds unconfirmed.

        Returns how many events it handed to this relay.
        """
        grace = self.stale_after_s if older_than_s is None else older_than_s
        found = await self.log.outbox.sweep(
            producer=self.producer,
            older_than_s=grace,
            absent_after_s=self.stale_after_s,
            in_flight=self._held,
        )
        if found.republish:
            log.info(
                "publishing events left unconfirmed by an earlier writer",
                count=len(found.republish),
            )
        self._enqueue(found.republish)
        return len(found.republish)

    # -- one pass ---------------------------------------------------------------------

    async def relay_once(self) -> int:
        """Publish one batch; return how many events were confirmed.

        The first pass also catches up with every unconfirmed event of this producer
        that the outbox holds (appended before this relay existed).
        """
        if not self._caught_up:
            await self.sweep(older_than_s=0.0)
            self._caught_up = True
        self._due_retries()
        batch: list[RecordedEvent] = []
        while self._ready and len(batch) < self.batch_size:
            batch.append(self._ready.popleft())
        if not batch:
            return 0
        # All publishes of a batch are pipelined on the one confirm channel. They are
        # started in append order and none suspends before its frame is written, so
        # they reach the broker in that order (tested: tests/stack/test_outbox.py).
        # Only a failure in the middle can let a later event of a stream go out before
        # an earlier one, which is then published again: at-least-once, as designed.
        try:
            results = await asyncio.gather(
                *(self._publish(event) for event in batch), return_exceptions=True
            )
        except BaseException:
            self._ready.extendleft(reversed(batch))
            raise
        confirmed: list[RecordedEvent] = []
        unroutable: list[RecordedEvent] = []
        failed: list[RecordedEvent] = []
        failure: BaseException | None = None
        for event, result in zip(batch, results, strict=True):
            if result is None:
                confirmed.append(event)
            elif isinstance(result, PublishError):
                unroutable.append(event)
            else:
                failed.append(event)
                failure = failure or result
        # Not confirmed: back to the front, in order, before anything can fail below.
        self._ready.extendleft(reversed(failed))
        expired = self._expired(unroutable)
        unroutable = [e for e in unroutable if e not in expired]
        self._retry += [(self.clock.monotonic() + self.unroutable_retry_s, e) for e in unroutable]
        settled = confirmed + expired
        if settled:
            try:
                await self.log.outbox.confirmed([e.id for e in settled])
            except BaseException:
                # Published but not recorded: publish again later (harmless twice).
                self._ready.extendleft(reversed(settled))
                raise
            self._held.difference_update(e.id for e in settled)
            for event in confirmed:
                self._unroutable_since.pop(event.id, None)
        self._count(confirmed, unroutable, expired)
        if failure is not None:
            raise failure
        return len(confirmed)

    def _due_retries(self) -> None:
        if not self._retry:
            return
        now = self.clock.monotonic()
        due = [e for when, e in self._retry if when <= now]
        self._retry = [(when, e) for when, e in self._retry if when > now]
        self._ready.extend(due)

    def _expired(self, unroutable: list[RecordedEvent]) -> list[RecordedEvent]:
        # The grace counts from the event's first unroutable return, not from when it
        # happened: a backlog published late (after an outage) gets its full grace.
        if not unroutable or self.unroutable_grace_s is None:
            return []
        now = self.clock.monotonic()
        grace = self.unroutable_grace_s
        since = self._unroutable_since
        expired = [e for e in unroutable if now - since.setdefault(e.id, now) >= grace]
        for event in expired:
            since.pop(event.id, None)
        if expired:
            log.info(
                "events left in the log only: no queue was bound for them",
                count=len(expired),
                types=sorted({e.type for e in expired}),
                grace_s=grace,
            )
        return expired

    def _count(
        self,
        confirmed: list[RecordedEvent],
        unroutable: list[RecordedEvent],
        expired: list[RecordedEvent],
    ) -> None:
        label = self._label
        if confirmed:
            now = datetime.now(UTC)
            EVENTS_PUBLISHED.labels(producer=label).inc(len(confirmed))
            for event in confirmed:
                OUTBOX_LAG.labels(producer=label).observe((now - event.occurred_at).total_seconds())
        if expired:
            OUTBOX_UNROUTED.labels(producer=label).inc(len(expired))
        if unroutable:
            OUTBOX_UNROUTABLE.labels(producer=label).inc(len(unroutable))
            for event in unroutable:
                log.warning(
                    "event unroutable: no queue is bound for its type; it waits in the outbox",
                    event_id=event.id,
                    event_type=event.type,
                    stream=event.stream,
                )
        OUTBOX_PENDING.labels(producer=label).set(len(self._held))

    async def _publish(self, event: RecordedEvent) -> None:
        try:
            await self.broker.publish(
                to_message(event),
                exchange=EVENTS,
                routing_key=event.type,
                mandatory=True,
                persist=True,
                timeout=self.publish_timeout_s,
                message_id=event.id,
                correlation_id=event.correlation_id or event.id,
                content_type="application/json",
                headers={"x-stream": event.stream, "x-seq": event.seq},
            )
        except PublishError:
            raise
        except DeliveryError as exc:  # nacked by the broker: not stored, try again
            raise ConnectionError(f"broker refused event {event.id}") from exc
