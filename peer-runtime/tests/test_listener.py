"""The listener's consumer, wired as in a session, driven through FastStream's test broker."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from faststream.rabbit import TestRabbitBroker

from peertrain.peer.identity import BrokerAccess
from peertrain.peer.listener import Listener
from peertrain.peer.worker import WorkItem

ACCESS = BrokerAccess(
    username="peer-p1",
    password="secret",
    url="amqp://localhost:5672/",
    queue="peer.p1",
    telemetry_exchange="peertrain.telemetry",
    routing_key_prefix="peer.p1.",
)


class _Worker:
    def __init__(self) -> None:
        self.items: list[WorkItem] = []

    def submit(self, item: WorkItem) -> None:
        self.items.append(item)


def _listener(worker: _Worker) -> Listener:
    status = SimpleNamespace(session="s", update=lambda **_: None, note=lambda **_: None)
    return Listener(
        SimpleNamespace(peer_id="p1"),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        worker,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        status,  # type: ignore[arg-type]
        config_dir=Path("/nonexistent"),
    )


async def test_a_message_on_the_peers_queue_reaches_the_worker_with_its_key_and_id() -> None:
    worker = _Worker()
    listener = _listener(worker)
    closed: list[Any] = []
    broker = listener._broker(ACCESS, lambda *args: closed.append(args))
    body = json.dumps({"type": "task", "task_id": "t1", "job_id": "j1"}).encode()
    async with TestRabbitBroker(broker) as br:
        await br.publish(body, queue="peer.p1", message_id="m1")
    assert [(i.body, i.message_id) for i in worker.items] == [(body, "m1")]
    assert worker.items[0].routing_key == "peer.p1"
    assert listener.tasks_received == 1
