"""The request-body deadline, on a bare app driven through ASGI (a body that stalls)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import FastAPI, Request
from pydantic import BaseModel
from starlette.types import Message

from peertrain.common.app import install_error_handlers
from peertrain.common.app.body_deadline import BodyBudget, RequestBodyDeadline
from peertrain.common.app.middleware import RequestContextMiddleware


class Item(BaseModel):
    name: str


def make_app(seen: list[str]) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    app.add_middleware(RequestBodyDeadline, timeout_s=0.2, min_rate=1024)
    app.add_middleware(RequestContextMiddleware, service="unit")

    @app.post("/stream")
    async def stream(request: Request) -> dict[str, int]:
        size = 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
        except BaseException as exc:
            seen.append(type(exc).__name__)  # the route unwinds (and would clean up)
            raise
        return {"size": size}

    @app.post("/json")
    async def parsed(item: Item) -> Item:  # FastAPI wraps body errors in its own 400
        return item

    return app


async def call(app: FastAPI, path: str, chunks: list[bytes], *, stall: bool) -> list[Message]:
    """POST ``chunks``; with ``stall`` the client then sends nothing more, ever."""
    pending = list(chunks)
    sent: list[Message] = []
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }

    async def receive() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(0), "more_body": True}
        if stall:
            await asyncio.Event().wait()
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, send), timeout=30)
    return sent


def status_and_body(sent: list[Message]) -> tuple[int, dict[str, Any], dict[bytes, bytes]]:
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body), dict(start["headers"])


async def test_a_stalled_body_is_answered_408_in_the_error_shape_and_the_route_unwinds() -> None:
    seen: list[str] = []
    sent = await call(make_app(seen), "/stream", [b"a"], stall=True)
    status, body, headers = status_and_body(sent)
    assert status == 408
    assert body["error"]["code"] == "request_timeout"
    assert body["error"]["detail"]["received_bytes"] == 1
    assert headers[b"connection"] == b"close"
    assert b"x-request-id" in headers
    assert seen == ["RequestBodyTimeout"]
    assert sum(m["type"] == "http.response.start" for m in sent) == 1


async def test_a_parsed_body_that_stalls_is_408_not_the_frameworks_400() -> None:
    sent = await call(make_app([]), "/json", [b'{"name":'], stall=True)
    status, body, _ = status_and_body(sent)
    assert (status, body["error"]["code"]) == (408, "request_timeout")


async def test_a_body_that_arrives_passes_untouched() -> None:
    sent = await call(make_app([]), "/stream", [b"ab", b"cd"], stall=False)
    assert status_and_body(sent)[:2] == (200, {"size": 4})
    sent = await call(make_app([]), "/json", [b'{"name":', b'"x"}'], stall=False)
    assert status_and_body(sent)[:2] == (200, {"name": "x"})


def test_the_budget_grows_with_what_arrived_at_the_minimum_rate() -> None:
    budget = BodyBudget(timeout_s=60, min_rate=1000, started=100.0)
    assert budget.deadline == 160.0
    budget.received = 30_000  # 30 s worth: still within the base minute
    assert budget.deadline == 160.0
    budget.received = 600_000  # 600 s worth
    assert budget.deadline == 700.0
