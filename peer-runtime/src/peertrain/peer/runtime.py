"""``peertrain-peer run``: the two cores, wired: the asyncio listener and the worker."""

from __future__ import annotations

import asyncio
import signal
import uuid

import structlog

from .api import PeerApi
from .config import PeerSettings
from .identity import load_identity
from .listener import Listener
from .specs import detect_specs
from .status import StatusReporter
from .tokens import TokenManager
from .worker import Worker

__all__ = ["run"]

log = structlog.get_logger(__name__)


async def run(settings: PeerSettings, *, api_url: str | None = None) -> None:
    """Run until SIGTERM or SIGINT, then say goodbye and stop cleanly."""
    config_dir = settings.config_dir
    identity = load_identity(config_dir)
    api = PeerApi(api_url or identity.api, timeout_s=settings.http_timeout_s)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    session = uuid.uuid4().hex
    status = StatusReporter(config_dir, session)
    specs = await asyncio.to_thread(detect_specs, config_dir)
    log.info(
        "peer starting",
        peer_id=identity.peer_id,
        name=identity.name,
        device=specs.device,
        interval_s=settings.heartbeat_interval_s,
    )
    worker = Worker()
    worker.start()
    tokens = TokenManager(api, identity, renew_fraction=settings.token_renew_fraction)
    listener = Listener(
        identity,
        api,
        tokens,
        worker,
        specs,
        status,
        config_dir=config_dir,
        interval_s=settings.heartbeat_interval_s,
        announce_every=settings.announce_every,
        reconnect_max_s=settings.reconnect_max_s,
    )
    try:
        await listener.run(stop)
    finally:
        await asyncio.to_thread(worker.stop)
        status.update(state="stopped")
        log.info("peer stopped", heartbeats=listener.heartbeats_sent)
