"""structlog JSON logs, with correlation ids bound from requests and events.

``configure_logging`` routes the standard library's loggers (uvicorn, FastStream,
pymongo) through the same JSON renderer, so one service writes one log format. The
HTTP middleware binds ``request_id``; event subscribers bind ``correlation_id``,
``event_id`` and ``event_type``: every line logged while handling them carries them.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Hashable
from typing import Any

import structlog

__all__ = ["configure_logging", "warn_throttled"]


def configure_logging(service: str, *, level: str = "INFO", json: bool = True) -> None:
    """Configure structlog and stdlib logging for one service process (idempotent)."""
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _add_service(service),
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    logging.getLogger("aiormq").setLevel(logging.WARNING)
    logging.getLogger("aio_pika").setLevel(logging.WARNING)
    logging.getLogger("pymongo").setLevel(logging.WARNING)


def _add_service(service: str) -> structlog.types.Processor:
    def add(_: object, __: str, event_dict: structlog.types.EventDict) -> structlog.types.EventDict:
        event_dict.setdefault("service", service)
        return event_dict

    return add


WARN_EVERY_S = 1.0
_last_warned: dict[Hashable, float] = {}


def warn_throttled(logger: Any, key: Hashable, message: str, **fields: Any) -> None:
    """Log ``message`` as a warning unless one of the same ``key`` was logged in the last
    :data:`WARN_EVERY_S` seconds: refusals a hostile sender can cause by the thousand must be
    counted (by the caller), not each written to the log."""
    now = time.monotonic()
    if now - _last_warned.get(key, -WARN_EVERY_S) >= WARN_EVERY_S:
        _last_warned[key] = now
        logger.warning(message, **fields)
