"""``peertrain-peer run``: the two cores, wired: the asyncio listener and the worker."""

from __future__ import annotations

import asyncio
import logging
import signal
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from .api import PeerApi
from .config import PeerSettings
from .identity import load_identity
from .listener import Listener
from .outbox import Outbox
from .specs import detect_specs
from .status import StatusReporter
from .tokens import TokenManager
from .trainer import Trainer
from .worker import Worker

__all__ = ["TrainerFactory", "run"]

log = structlog.get_logger(__name__)

TrainerFactory = Callable[..., Trainer]
"""Called like :class:`Trainer` (``send`` first, then keywords): a subclass will do."""


async def run(
    settings: PeerSettings,
    *,
    api_url: str | None = None,
    trainer_factory: TrainerFactory | None = None,
) -> None:
    """Run until SIGTERM or SIGINT, then say goodbye and stop cleanly.

    Parameters
    ----------
    settings
        The runtime's settings.
    api_url
        Overrides the API URL the peer enrolled with.
    trainer_factory
        Makes the trainer (default :class:`Trainer`); tests pass a subclass.
    """
    # httpx logs every request's URL at INFO; presigned URLs are bearer secrets.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    config_dir = settings.config_dir
    identity = load_identity(config_dir)
    api = PeerApi(api_url or identity.api, timeout_s=settings.http_timeout_s)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    session = uuid.uuid4().hex
    status = StatusReporter(config_dir, session)
    specs = await asyncio.to_thread(detect_specs, config_dir)
    threads = settings.threads or specs.cpu_cores or None
    log.info(
        "peer starting",
        peer_id=identity.peer_id,
        name=identity.name,
        device=specs.device,
        threads=threads,
        interval_s=settings.heartbeat_interval_s,
    )
    outbox = Outbox()
    trainer = (trainer_factory or Trainer)(
        outbox.put,
        cache_dir=config_dir / "cache",
        threads=threads,
        device=settings.device,
        cache_max_files=settings.cache_max_files,
        slowdown=settings.slowdown,
    )

    def shutdown(*_: Any) -> None:
        stop.set()
        trainer.cancel_all()  # the running task stops at its next batch

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, shutdown)
    worker = Worker(trainer)
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
        reconnect_early_max_s=settings.reconnect_early_max_s,
        reconnect_early_s=settings.reconnect_early_s,
        outbox=outbox,
    )
    try:
        await listener.run(stop)
    finally:
        trainer.cancel_all()
        await asyncio.to_thread(worker.stop)
        trainer.close()
        status.update(state="stopped")
        log.info("peer stopped", heartbeats=listener.heartbeats_sent)
