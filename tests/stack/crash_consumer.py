"""A consumer process for the crash test (run by test_consumer_crash.py).

Usage: python crash_consumer.py MODE QUEUE DB

MODE ``crash-after-mark``: the handler applies its effect, the inbox records it done,
then the process dies before acknowledging (os._exit, like SIGKILL).
MODE ``crash-after-apply-once``: the handler applies its effect atomically with its
record (Inbox.apply_once_to), then dies before the inbox mark and the ack.
MODE ``normal`` / ``apply-once``: handles everything (plain effect, or guarded effect)
and exits after CONSUMER_SECONDS.
"""

from __future__ import annotations

import asyncio
import os
import sys

from pymongo import AsyncMongoClient

from peertrain.common.bus import Inbox, Subscriptions, make_broker
from peertrain.common.events import RecordedEvent
from peertrain.common.events.diagnostics import DIAGNOSTIC_PINGED
from peertrain.common.settings import ServiceSettings


async def main(mode: str, queue: str, db_name: str) -> None:
    settings = ServiceSettings()
    mongo: AsyncMongoClient[dict] = AsyncMongoClient(settings.mongo_url, tz_aware=True)
    db = mongo[db_name]
    effects = db["effects"]
    inbox = Inbox(db, consumer=queue)

    async def handler(event: RecordedEvent) -> None:
        n = event.data.n  # type: ignore[union-attr]
        if mode in ("crash-after-apply-once", "apply-once"):
            await Inbox.apply_once_to(effects, f"once-{n}", event.id, {"$inc": {"count": 1}})
            if mode == "crash-after-apply-once":
                os._exit(9)
            return
        await effects.update_one({"_id": f"plain-{n}"}, {"$inc": {"count": 1}}, upsert=True)

    if mode == "crash-after-mark":
        original = inbox.done

        async def done_then_die(event_id: str) -> None:
            await original(event_id)
            os._exit(9)

        inbox.done = done_then_die  # type: ignore[method-assign]

    broker = make_broker(settings.amqp_url.get_secret_value())
    subs = Subscriptions(delivery_limit=5)  # as the test declared it
    subs.add(queue, [DIAGNOSTIC_PINGED], handler, inbox=inbox)
    await broker.connect()
    await subs.declare(broker)
    subs.attach(broker)
    await broker.start()
    print("ready", flush=True)
    await asyncio.sleep(float(os.environ.get("CONSUMER_SECONDS", "8")))
    await broker.stop()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
