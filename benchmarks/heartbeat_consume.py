"""What consuming one heartbeat costs the registry's AMQP path, against a raw connection.

    python benchmarks/heartbeat_consume.py [--messages 50000] [raw faststream ...]

The registry consumes heartbeats on the ``aiormq`` channel under an aio-pika channel of
a FastStream broker's connection (``registry/subscribers.py``); ``raw`` is the same
callback on a connection of ``aiormq`` itself, the registry's path before. Each run
fills a fresh queue with ``--messages`` heartbeat-sized bodies, then drains it with a
prefetch of 2,000 and acknowledgements batched by 1,000, as the registry does.

``cpu_us_per_message`` is this process's CPU time per message (what a loaded machine
distorts least); ``drain_per_s`` the wall-clock rate. One JSON line per run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from typing import Any

import aiormq
from aiormq.abc import AbstractChannel, DeliveredMessage
from faststream.rabbit import Channel

from peertrain.common.bus import make_broker
from peertrain.common.settings import ServiceSettings

URL = ServiceSettings().amqp_url.get_secret_value()
BODY = b'{"session":"s","seq":1,"sent_at":1.0,"interval_s":5}' + b" " * 600
"""About a heartbeat's size (its token is in the headers, which are left out here)."""


async def fill(queue: str, count: int) -> None:
    connection = await aiormq.connect(URL)
    channel = await connection.channel(publisher_confirms=False)
    await channel.queue_declare(queue, arguments={"x-queue-type": "classic"})
    for _ in range(count):
        await channel.basic_publish(BODY, routing_key=queue)
    await connection.close()


async def drain(channel: AbstractChannel, queue: str, count: int) -> tuple[float, float]:
    """CPU and wall seconds to consume ``count`` messages from ``queue``."""
    done = asyncio.get_running_loop().create_future()
    seen = pending = 0

    async def on(message: DeliveredMessage) -> None:
        nonlocal seen, pending
        seen += 1
        pending += 1
        if pending >= 1000 or seen == count:
            pending = 0
            tag = int(getattr(message.delivery, "delivery_tag", 0) or 0)
            await channel.basic_ack(tag, multiple=True, wait=False)
        if seen == count and not done.done():
            done.set_result(None)

    cpu, wall = time.process_time(), time.perf_counter()
    await channel.basic_consume(queue, on)
    await done
    return time.process_time() - cpu, time.perf_counter() - wall


async def raw(queue: str, count: int) -> tuple[float, float]:
    connection = await aiormq.connect(URL)
    channel = await connection.channel()
    await channel.basic_qos(prefetch_count=2000)
    try:
        return await drain(channel, queue, count)
    finally:
        await connection.close()


async def faststream(queue: str, count: int) -> tuple[float, float]:
    broker = make_broker(URL, app_id="bench")
    await broker.connect()
    try:
        pika = await broker.config.channel_manager.get_channel(
            Channel(prefetch_count=2000, publisher_confirms=False)
        )
        return await drain(await pika.get_underlay_channel(), queue, count)
    finally:
        await broker.stop()


async def main(clients: list[str], count: int) -> None:
    for client in clients:
        queue = f"bench.consume.{uuid.uuid4().hex[:8]}"
        await fill(queue, count)
        cpu, wall = await (raw if client == "raw" else faststream)(queue, count)
        connection = await aiormq.connect(URL)
        await (await connection.channel()).queue_delete(queue)
        await connection.close()
        result: dict[str, Any] = {
            "client": client,
            "messages": count,
            "cpu_us_per_message": round(cpu / count * 1e6, 2),
            "drain_per_s": round(count / wall, 1),
        }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("clients", nargs="*", help="raw or faststream (default: each twice)")
    args = parser.parse_args()
    if not set(args.clients) <= {"raw", "faststream"}:
        parser.error("a client is raw or faststream")
    asyncio.run(main(args.clients or ["raw", "faststream"] * 2, args.messages))
