"""Write ``docs/asyncapi.json``: every message on PeerTrain's exchanges, by FastStream.

The catalogue (``peertrain.common.events``) is the source: one publisher per event type
on ``peertrain.events`` (routing key = type, payload = its model), the messages to peers
on ``peertrain.peers`` and the peers' telemetry on ``peertrain.telemetry``. Run
``python deploy/asyncapi.py`` after changing an event; ``tests/static`` checks the
committed document is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from faststream.rabbit import RabbitBroker
from faststream.specification import AsyncAPI
from pydantic import BaseModel

from peertrain.common.bus import EVENTS, PEERS, TELEMETRY
from peertrain.common.events import catalogue, tasks
from peertrain.common.events import peers as peer_events

OUT = Path(__file__).resolve().parents[1] / "docs" / "asyncapi.json"

TO_PEERS: dict[str, type[BaseModel]] = {
    tasks.TASK: tasks.TaskMessage,
    tasks.CANCEL: tasks.CancelMessage,
}
FROM_PEERS: dict[str, type[BaseModel]] = {
    peer_events.HEARTBEAT: peer_events.Heartbeat,
    peer_events.ANNOUNCE: peer_events.Announce,
    peer_events.LEAVING: peer_events.Leaving,
    tasks.ACCEPTED: tasks.TaskAcceptedBody,
    tasks.PROGRESS: tasks.TaskProgressBody,
    tasks.FAILED: tasks.TaskFailedBody,
    tasks.UPDATE: tasks.UpdateAnnounced,
}


def document() -> str:
    """The AsyncAPI 3.0 document, as indented JSON."""
    broker = RabbitBroker()
    for event_type, model in sorted(catalogue().items()):
        broker.publisher(
            exchange=EVENTS, routing_key=event_type, schema=model, title=f"event {event_type}"
        )
    for kind, model in TO_PEERS.items():
        broker.publisher(
            exchange=PEERS, routing_key=f"peer.<id>.{kind}", schema=model, title=f"to peer {kind}"
        )
    for kind, model in FROM_PEERS.items():
        broker.publisher(
            exchange=TELEMETRY,
            routing_key=f"peer.<id>.{kind}",
            schema=model,
            title=f"from peer {kind}",
        )
    spec = AsyncAPI(
        broker,
        title="PeerTrain",
        version="0.1.0",
        description="Events in the log (peertrain.events) and messages to and from peers.",
    )
    data = json.loads(spec.to_specification().to_json())
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(document())
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
