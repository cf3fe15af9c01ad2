"""Benchmark: events appended to the log until consumed from RabbitMQ, twice.

4 writers append 20,000 events (10 per append, 100 per stream) to the real MongoDB-wire
server; the outbox relay publishes them to the real RabbitMQ; one ordered subscriber
(the platform's default: strictly in queue order) consumes them. Then the same log is
pre-filled with ``BENCH_PREFILL`` events (1,000,000; ``0`` skips it) and the same run
is made again on it: costs must not grow with the log.

Prints one JSON line last:
``events_per_s`` (20,000 / time from the first append to the last consumption),
``relay_lag_p99_ms`` (per event: consumption time minus append time), and the same two
prefixed ``prefilled_`` for the run on the pre-filled log.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from datetime import UTC, datetime

from faststream.rabbit import RabbitBroker, RabbitQueue
from pymongo import AsyncMongoClient

from peertrain.common.bus import OutboxRelay, Subscriptions, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED, DiagnosticPinged
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.common.prefill import prefill, stderr_progress

EVENTS = int(os.environ.get("BENCH_EVENTS", "20000"))
PREFILL = int(os.environ.get("BENCH_PREFILL", "1000000"))
WRITERS = 4
PER_APPEND = 10
PER_STREAM = 100
STORE = "ferretdb-1.24-postgresql-15"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_once(log: EventLog, broker: RabbitBroker, run: str) -> dict[str, float]:
    """One pass: EVENTS appended by WRITERS, relayed, consumed; its figures."""
    lags: list[float] = []
    done = asyncio.Event()
    last_consumed = 0.0

    async def on_event(event: RecordedEvent) -> None:
        nonlocal last_consumed
        if event.data.note != run:  # type: ignore[union-attr]
            return
        now = time.time()
        lags.append(now - event.occurred_at.timestamp())
        last_consumed = now
        if len(lags) >= EVENTS:
            done.set()

    subs = Subscriptions()
    queue = f"bench.eventlog.{run}"
    subs.add(queue, [DIAGNOSTIC_PINGED], on_event)
    await subs.declare(broker)
    subs.attach(broker)
    await broker.start()
    relay = OutboxRelay(log, broker, producer="bench", batch_size=2000)
    relay.start()
    per_writer = EVENTS // WRITERS

    async def writer(w: int) -> None:
        for s in range(per_writer // PER_STREAM):
            for k in range(PER_STREAM // PER_APPEND):
                batch = [
                    NewEvent.of(DiagnosticPinged(n=k * PER_APPEND + j, note=run), producer="bench")
                    for j in range(PER_APPEND)
                ]
                await log.append(f"bench:{run}:{w}:{s}", batch, expected_version=k * PER_APPEND)

    started = time.time()
    await asyncio.gather(*(writer(w) for w in range(WRITERS)))
    appended = time.time()
    await asyncio.wait_for(done.wait(), timeout=1800)
    elapsed = last_consumed - started
    await relay.stop()
    for name in (queue, f"{queue}.dlq"):
        queue_obj = await broker.declare_queue(RabbitQueue(name, declare=False))
        await queue_obj.delete(if_unused=False, if_empty=False)
    return {
        "append_events_per_s": round(EVENTS / (appended - started), 1),
        "events_per_s": round(EVENTS / elapsed, 1),
        "relay_lag_p50_ms": round(percentile(lags, 0.50) * 1000, 1),
        "relay_lag_p99_ms": round(percentile(lags, 0.99) * 1000, 1),
    }


async def main() -> None:
    settings = ServiceSettings(service_name="bench")
    run = uuid.uuid4().hex[:8]
    mongo: AsyncMongoClient[dict] = AsyncMongoClient(settings.mongo_url, tz_aware=True)
    db_name = f"pt_bench_{run}"
    log = EventLog(mongo[db_name])
    await log.ensure_indexes()
    try:
        broker = make_broker(settings.amqp_url.get_secret_value())
        await broker.connect()
        empty = await run_once(log, broker, f"{run}a")
        await broker.stop()
        prefilled: dict[str, float] = {}
        prefill_s = None
        if PREFILL:
            started = time.time()
            await prefill(mongo[db_name], PREFILL, progress=stderr_progress())
            prefill_s = round(time.time() - started, 1)
            broker = make_broker(settings.amqp_url.get_secret_value())
            await broker.connect()
            again = await run_once(log, broker, f"{run}b")
            await broker.stop()
            prefilled = {f"prefilled_{k}": v for k, v in again.items()}
    finally:
        await mongo.drop_database(db_name)
        await mongo.close()
    result = {
        "benchmark": "eventlog",
        "events": EVENTS,
        "writers": WRITERS,
        "events_per_append": PER_APPEND,
        "store": STORE if "27017" in settings.mongo_url else settings.mongo_url,
        **empty,
        **prefilled,
        "prefilled_events": PREFILL,
        "prefill_s": prefill_s,
        "goal": {"events_per_s": 2000, "relay_lag_p99_ms": 250},
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
