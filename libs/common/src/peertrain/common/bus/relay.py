"""The outbox relay: publishes events that the log holds as unpublished.

Each pass reads the oldest unpublished events of one producer, publishes them to
``peertrain.events`` (routing key = event type) as persistent, mandatory messages on
a channel with publisher confirms, and marks only the confirmed ones as published.
An event no queue is bound for is returned by RabbitMQ: it stays in the outbox, is
logged, and is retried later. Broker or database outages are waited out with backoff;
the relay never gives up, so nothing appended is ever lost.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

import structlog
from aiormq.exceptions import DeliveryError, PublishError
from faststream.rabbit import RabbitBroker

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
    """Publish one producer's unpublished events, forever.

    Parameters
    ----------
    log
        The event log (the outbox).
    broker
        A connected broker from :func:`~peertrain.common.bus.broker.make_broker`.
    producer
        Only events with this ``producer`` are relayed (``None``: all).
    batch_size
        Events per pass; they are published concurrently and confirmed together.
    poll_interval_s
        How long to wait for new events when the outbox is empty. Appends in this
        process wake the relay at once; other processes' appends are seen by polling.
    unroutable_retry_s
        How long an unroutable event waits before it is tried again.
    unroutable_grace_s
        How long an unroutable event is kept trying. A queue, once declared, is durable
        and keeps its bindings while its consumer is down, so an event that stays
        unroutable this long has no consumer in this deployment: it is left in the log
        only (counted in ``peertrain_outbox_unrouted_total``), instead of being scanned
        and published again forever. ``None`` keeps trying for ever.
    publish_timeout_s
        How long one publish may wait for its confirmation.
    stale_after_s
        How old a ``pending`` outbox record (a writer died mid-append) must be before
        the relay settles it against the log.
    """

    def __init__(
        self,
        log: EventLog,
        broker: RabbitBroker,
        *,
        producer: str | None,
        batch_size: int = 2000,
        poll_interval_s: float = 0.05,
        unroutable_retry_s: float = 5.0,
        unroutable_grace_s: float | None = None,
        publish_timeout_s: float = 10.0,
        stale_after_s: float = 30.0,
    ) -> None:
        self.log = log
        self.broker = broker
        self.producer = producer
        self.batch_size = batch_size
        self.poll_interval_s = poll_interval_s
        self.unroutable_retry_s = unroutable_retry_s
        self.unroutable_grace_s = unroutable_grace_s
        self.publish_timeout_s = publish_timeout_s
        self.stale_after_s = stale_after_s
        self._label = producer or "all"
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Run the relay in a background task."""
        if self._task is None:
            self._stopping.clear()
            self._task = asyncio.create_task(self.run(), name=f"outbox-relay-{self._label}")

    async def stop(self) -> None:
        """Stop after the current pass."""
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run(self) -> None:
        """Relay until stopped; errors are logged and retried with backoff."""
        backoff = 0.1
        declared = False
        loop = asyncio.get_running_loop()
        next_sweep = 0.0
        while not self._stopping.is_set():
            try:
                if not declared:
                    await declare_exchanges(self.broker)
                    declared = True
                if loop.time() >= next_sweep:
                    await self.log.resolve_stale(older_than_s=self.stale_after_s)
                    next_sweep = loop.time() + self.stale_after_s / 3
                published = await self.relay_once()
                backoff = 0.1
                if published == 0:
                    await self.log.wait_for_append(self.poll_interval_s)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # broker or database down: wait and retry
                log.warning("outbox relay pass failed", error=repr(exc), retry_in_s=backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    # -- one pass ---------------------------------------------------------------------

    async def relay_once(self) -> int:
        """Publish one batch; return how many events were confirmed."""
        batch = await self.log.unpublished(producer=self.producer, limit=self.batch_size)
        if not batch:
            OUTBOX_PENDING.labels(producer=self._label).set(0)
            return 0
        # All publishes of a batch are pipelined on the one confirm channel. They are
        # started in position order and none suspends before its frame is written, so
        # they reach the broker in that order (tested: tests/stack/test_outbox.py).
        # Only a failure in the middle can let a later event of a stream go out before
        # an earlier one, which is then published again: at-least-once, as designed.
        results = await asyncio.gather(
            *(self._publish(event) for event in batch), return_exceptions=True
        )
        confirmed: list[RecordedEvent] = []
        unroutable: list[RecordedEvent] = []
        failure: BaseException | None = None
        for event, result in zip(batch, results, strict=True):
            if result is None:
                confirmed.append(event)
            elif isinstance(result, PublishError):
                unroutable.append(event)
            elif isinstance(result, BaseException):
                failure = failure or result
        if confirmed:
            await self.log.mark_published([e.id for e in confirmed])
            now = datetime.now(UTC)
            EVENTS_PUBLISHED.labels(producer=self._label).inc(len(confirmed))
            for event in confirmed:
                OUTBOX_LAG.labels(producer=self._label).observe(
                    (now - event.occurred_at).total_seconds()
                )
        if unroutable and self.unroutable_grace_s is not None:
            now = datetime.now(UTC)
            grace = self.unroutable_grace_s
            expired = [e for e in unroutable if (now - e.occurred_at).total_seconds() >= grace]
            if expired:
                await self.log.mark_published([e.id for e in expired])
                OUTBOX_UNROUTED.labels(producer=self._label).inc(len(expired))
                log.info(
                    "events left in the log only: no queue was bound for them",
                    count=len(expired),
                    types=sorted({e.type for e in expired}),
                    grace_s=grace,
                )
                unroutable = [e for e in unroutable if e not in expired]
        if unroutable:
            OUTBOX_UNROUTABLE.labels(producer=self._label).inc(len(unroutable))
            for event in unroutable:
                log.warning(
                    "event unroutable: no queue is bound for its type; it stays in the outbox",
                    event_id=event.id,
                    event_type=event.type,
                    stream=event.stream,
                )
            await self.log.defer([e.id for e in unroutable], delay_s=self.unroutable_retry_s)
        OUTBOX_PENDING.labels(producer=self._label).set(len(batch) - len(confirmed))
        if failure is not None:
            raise failure
        return len(confirmed)

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
