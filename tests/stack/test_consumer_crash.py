"""A consumer killed after applying an event but before acknowledging it.

RabbitMQ redelivers the event to the restarted consumer; the inbox makes that
redelivery a success with no second effect.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from faststream.rabbit import RabbitQueue

from peertrain.common.bus import OutboxRelay, declare_queue
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED, DiagnosticPinged

SCRIPT = Path(__file__).with_name("crash_consumer.py")


def run_consumer(mode: str, queue: str, db: str, seconds: float = 8) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), mode, queue, db],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CONSUMER_SECONDS": str(seconds)},
        check=False,
    )
    return proc.returncode, proc.stderr[-3000:]


@pytest.mark.parametrize(
    ("mode", "then", "key"),
    [
        ("crash-after-mark", "normal", "plain-7"),
        ("crash-after-apply-once", "apply-once", "once-7"),
    ],
)
async def test_redelivery_after_a_crash_has_no_second_effect(
    mode: str,
    then: str,
    key: str,
    event_log: EventLog,
    broker: Any,
    mongo: Any,
    unique: Callable[[str], str],
) -> None:
    queue = unique("test.crash")
    db_name = unique("crashdb").replace(".", "_")
    await declare_queue(broker, queue, routing_keys=[DIAGNOSTIC_PINGED])
    await broker.start()
    event = NewEvent.of(DiagnosticPinged(n=7), producer="test")
    await event_log.append(f"crash:{queue}", [event], expected_version=0)
    await OutboxRelay(event_log, broker, producer="test").relay_once()

    # first run: applies the effect, then dies before the ack
    rc, err = await asyncio.to_thread(run_consumer, mode, queue, db_name)
    assert rc == 9, err
    effects = mongo[db_name]["effects"]
    assert (await effects.find_one({"_id": key}))["count"] == 1

    # second run: RabbitMQ redelivers; the inbox (or the guarded write) absorbs it
    rc, err = await asyncio.to_thread(run_consumer, then, queue, db_name)
    assert rc == 0, err
    assert (await effects.find_one({"_id": key}))["count"] == 1
    processed = mongo[db_name]["processed_events"]
    assert await processed.count_documents({"_id": {"$regex": ":done$"}}) == 1
    # and the message is gone from the queue: it was acknowledged the second time
    q = await broker.declare_queue(RabbitQueue(queue, declare=False))
    assert await q.get(no_ack=True, fail=False) is None
