"""Moving dead-lettered messages back to their queue, once what failed them is fixed.

A message lands in ``<queue>.dlq`` after its handler failed it ``delivery_limit`` times
(or waited out an outage longer than the consumer's budget). Nothing re-drives it by
itself: after the fix, an operator runs::

    make redrive                      # every non-empty <queue>.dlq back into <queue>
    make redrive QUEUES="orchestrator.dispatch aggregator.updates"
    python -m peertrain.common.bus.redrive --dry-run

Each message is published again the way it first came: to the exchange and with the
routing key it was first published with, which RabbitMQ's ``x-death`` header records
(a peer's telemetry is read from its routing key, ``peer.<id>.<kind>``, and one
instance's queue may be gone: its events reach the instances that run now). The
headers the dead-lettering added are removed, so it gets a fresh delivery limit; then it
is acknowledged on the DLQ. A message without that record goes to its queue by name,
through the default exchange, as before. Publishing by routing key reaches every queue
bound to it, as the first publish did: consumers are idempotent (an inbox, or a
decision from the log), so one that had handled it already does nothing. A message no
queue takes (``mandatory``) stays in the DLQ. Only the messages present when the
redrive starts are moved, so one that fails again ends in the DLQ again instead of
looping.

It runs on FastStream's connection (:func:`~.broker.broker_channel`), through that
connection's aio-pika channel: FastStream has no call to fetch a queue's messages one
by one (``basic.get``) nor to publish a message as it came, headers and all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import aio_pika
import httpx

from peertrain.common.settings import ServiceSettings

from .broker import broker_channel
from .topology import dlq_name

__all__ = ["dead_letter_queues", "origin", "redrive"]

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


def origin(headers: Mapping[str, Any] | None, queue: str) -> tuple[str, str]:
    """``(exchange, routing key)`` a dead-lettered message was first published with, from
    its ``x-death`` header (the earliest death records the first publish); ``("",
    queue)`` (the queue by name) when the header does not say."""
    deaths = (headers or {}).get("x-death")
    if isinstance(deaths, list | tuple):
        for death in reversed(deaths):
            if not isinstance(death, Mapping):
                continue
            exchange, keys = death.get("exchange"), death.get("routing-keys")
            if isinstance(exchange, bytes):
                exchange = exchange.decode()
            if isinstance(exchange, str) and isinstance(keys, list | tuple) and keys:
                key = keys[0].decode() if isinstance(keys[0], bytes) else keys[0]
                if isinstance(key, str):
                    return exchange, key
    return "", queue


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
    # FastStream's connection; its aio-pika channel for basic.get (FastStream has none)
    async with broker_channel(amqp_url, publisher_confirms=True) as channel:
        for queue in queues:
            dlq = await channel.declare_queue(dlq_name(queue), passive=True)
            waiting = dlq.declaration_result.message_count or 0
            moved[queue] = 0
            if dry_run:
                moved[queue] = waiting
                continue
            kept: list[aio_pika.abc.AbstractIncomingMessage] = []
            for _ in range(waiting):
                message = await dlq.get(no_ack=False, fail=False)
                if message is None:
                    break
                exchange_name, routing_key = origin(message.headers, queue)
                headers = {
                    k: v for k, v in (message.headers or {}).items() if k not in DEATH_HEADERS
                }
                exchange = (
                    await channel.get_exchange(exchange_name, ensure=False)
                    if exchange_name
                    else channel.default_exchange
                )
                try:
                    await exchange.publish(
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
                        routing_key=routing_key,
                        mandatory=True,
                    )
                except aio_pika.exceptions.DeliveryError:  # no queue took it: keep it
                    kept.append(message)
                    continue
                await message.ack()
                moved[queue] += 1
            for message in kept:  # back into the DLQ, once every message was tried
                await message.nack(requeue=True)
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
