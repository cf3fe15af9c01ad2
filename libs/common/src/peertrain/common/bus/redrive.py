"""Moving dead-lettered messages back to their queue, once what failed them is fixed.

A message lands in ``<queue>.dlq`` after its handler failed it ``delivery_limit`` times
(or waited out an outage longer than the consumer's budget). Nothing re-drives it by
itself: after the fix, an operator runs::

    make redrive                      # every non-empty <queue>.dlq back into <queue>
    make redrive QUEUES="orchestrator.dispatch aggregator.updates"
    python -m peertrain.common.bus.redrive --dry-run

Each message is published again to its queue (through the default exchange), with the
headers the dead-lettering added removed, so it gets a fresh delivery limit; then it is
acknowledged on the DLQ. A consumer's inbox makes a message that was in fact handled
before harmless. Only the messages present when the redrive starts are moved, so one
that fails again ends in the DLQ again instead of looping.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from urllib.parse import quote, urlsplit

import aio_pika
import httpx

from peertrain.common.settings import ServiceSettings

from .topology import dlq_name

__all__ = ["dead_letter_queues", "redrive"]

DEATH_HEADERS = (
    "x-death",
    "x-delivery-count",
    "x-first-death-exchange",
    "x-first-death-queue",
    "x-first-death-reason",
    "x-last-death-exchange",
    "x-last-death-queue",
    "x-last-death-reason",
)


async def dead_letter_queues(management_url: str, amqp_url: str) -> dict[str, int]:
    """Every ``<queue>.dlq`` of the vhost with its message count (management API)."""
    parts = urlsplit(amqp_url)
    vhost = quote(parts.path.lstrip("/") or "/", safe="")
    auth = (parts.username or "", parts.password or "")
    async with httpx.AsyncClient(base_url=management_url, auth=auth, timeout=10) as http:
        response = await http.get(f"/api/queues/{vhost}", params={"columns": "name,messages"})
        response.raise_for_status()
    return {
        q["name"]: int(q.get("messages") or 0)
        for q in response.json()
        if str(q["name"]).endswith(".dlq")
    }


async def redrive(amqp_url: str, queues: list[str], *, dry_run: bool = False) -> dict[str, int]:
    """Move what ``<q>.dlq`` holds now back into ``q`` for each ``q``; returns the counts."""
    moved: dict[str, int] = {}
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel(publisher_confirms=True)
        for queue in queues:
            dlq = await channel.declare_queue(dlq_name(queue), passive=True)
            waiting = dlq.declaration_result.message_count or 0
            moved[queue] = 0
            if dry_run:
                moved[queue] = waiting
                continue
            for _ in range(waiting):
                message = await dlq.get(no_ack=False, fail=False)
                if message is None:
                    break
                headers = {
                    k: v for k, v in (message.headers or {}).items() if k not in DEATH_HEADERS
                }
                await channel.default_exchange.publish(
                    aio_pika.Message(
                        body=message.body,
                        headers=headers,
                        content_type=message.content_type,
                        message_id=message.message_id,
                        correlation_id=message.correlation_id,
                        app_id=message.app_id,
                        type=message.type,
                        timestamp=message.timestamp,
                        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    ),
                    routing_key=queue,
                    mandatory=True,
                )
                await message.ack()
                moved[queue] += 1
    finally:
        await connection.close()
    return moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queues", nargs="*", help="source queues (default: every non-empty DLQ's)")
    parser.add_argument("--management-url", default="http://127.0.0.1:15672")
    parser.add_argument("--dry-run", action="store_true", help="only count what would move")
    args = parser.parse_args(argv)
    amqp_url = ServiceSettings(service_name="redrive").amqp_url.get_secret_value()

    async def run() -> dict[str, int]:
        queues = list(args.queues)
        if not queues:
            found = await dead_letter_queues(args.management_url, amqp_url)
            queues = sorted(name.removesuffix(".dlq") for name, n in found.items() if n > 0)
        return await redrive(amqp_url, queues, dry_run=args.dry_run)

    moved = asyncio.run(run())
    print(json.dumps({"dry_run": args.dry_run, "moved": moved}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
