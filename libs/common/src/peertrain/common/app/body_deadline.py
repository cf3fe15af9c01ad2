"""A total deadline on every request body, as a pure ASGI middleware (408 when it passes).

Neither uvicorn nor a per-read timeout (nginx's ``client_body_timeout``) bounds how long
a body may take: a client sending one byte every 20 s holds its request, and whatever
the route holds meanwhile (a multipart upload to S3), for as long as it likes. Here the
whole body must have arrived within ``max(timeout_s, received / min_rate)`` of the
request's start: any body may take ``timeout_s``; a larger one may take longer as long
as it keeps an average of ``min_rate`` bytes per second since the start (so a 2 GiB
upload at 64 KiB/s has about 9 hours, while a trickle is cut at ``timeout_s`` whatever
``Content-Length`` it announces).

When the deadline passes while the app waits for the body, the app's ``receive`` raises
:class:`RequestBodyTimeout` so that the route unwinds and cleans up (an upload removes
what it stored), whatever the app then tries to answer is dropped, and the caller gets
408 in the one error shape with ``Connection: close`` (the rest of the body is never
read).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from peertrain.common.errors import PeerTrainError

from .errors import error_response

__all__ = ["BodyBudget", "RequestBodyDeadline", "RequestBodyTimeout"]

log = structlog.get_logger(__name__)


class RequestBodyTimeout(PeerTrainError, TimeoutError):
    """The request body did not arrive in time; raised from the app's ``receive``."""

    status_code = 408
    code = "request_timeout"


@dataclass
class BodyBudget:
    """How long a body may take: ``max(timeout_s, received / min_rate)`` from ``started``.

    Parameters
    ----------
    timeout_s
        What any body may take.
    min_rate
        Bytes per second a longer body must keep up, on average since ``started``.
    started
        The request's start (a monotonic clock's reading).
    """

    timeout_s: float
    min_rate: float
    started: float
    received: int = 0

    @property
    def deadline(self) -> float:
        """When the body must have ended, given what arrived so far (same clock)."""
        return self.started + max(self.timeout_s, self.received / self.min_rate)

    def detail(self, now: float) -> dict[str, float | int]:
        """What the 408 says: the rule's parameters and how far the body got."""
        return {
            "timeout_s": self.timeout_s,
            "min_rate_bytes_per_s": self.min_rate,
            "received_bytes": self.received,
            "elapsed_s": round(now - self.started, 3),
        }


class RequestBodyDeadline:
    """Answer 408 for a request whose body has not arrived within its :class:`BodyBudget`.

    Parameters
    ----------
    app
        The wrapped ASGI app.
    timeout_s, min_rate
        See :class:`BodyBudget` (``ServiceSettings.request_body_timeout_s`` and
        ``request_body_min_rate``).
    """

    def __init__(self, app: ASGIApp, *, timeout_s: float, min_rate: float) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self.min_rate = min_rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        budget = BodyBudget(self.timeout_s, self.min_rate, started=loop.time())
        body_done = False
        expired: RequestBodyTimeout | None = None
        response_started = False

        async def timed_receive() -> Message:
            nonlocal body_done, expired
            if expired is not None:
                raise expired
            if body_done:  # after the body: only a disconnect can come
                return await receive()
            try:
                async with asyncio.timeout_at(budget.deadline):
                    message = await receive()
            except TimeoutError:
                expired = RequestBodyTimeout(
                    "the request body did not arrive in time", detail=budget.detail(loop.time())
                )
                raise expired from None
            if message["type"] == "http.request":
                budget.received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
            else:
                body_done = True
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if expired is not None:
                return  # the app's answer to its failed read; the 408 below replaces it
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, timed_receive, guarded_send)
        except Exception:
            if expired is None:
                raise
        if expired is None:
            return
        log.info("request body deadline passed", path=scope.get("path"), **expired.detail)
        if not response_started:  # else the unfinished response makes the server close
            response = error_response(
                expired.status_code,
                expired.code,
                expired.message,
                expired.detail,
                headers={"Connection": "close"},
            )
            await response(scope, receive, send)
