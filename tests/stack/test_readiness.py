"""/readyz follows the real dependencies: FerretDB stopped and started again."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

SCRIPT = Path(__file__).with_name("probe_app.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def probe() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(port)])
    yield proc, f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


async def status_of(client: httpx.AsyncClient, url: str) -> int | None:
    try:
        return (await client.get(url, timeout=10)).status_code
    except httpx.HTTPError:
        return None


async def test_readyz_is_503_while_ferretdb_is_down_and_200_after(
    probe: tuple[subprocess.Popen[bytes], str],
    eventually: Any,
    stack: Callable[..., str],
) -> None:
    proc, base = probe
    async with httpx.AsyncClient() as client:
        await eventually(lambda: _is(client, f"{base}/readyz", 200), what="ready")
        ok = (await client.get(f"{base}/readyz")).json()
        assert ok["checks"] == {"mongodb": "ok", "rabbitmq": "ok", "s3": "ok"}
        assert (await client.get(f"{base}/api/probe/healthz")).status_code == 200

        await asyncio.to_thread(stack, "stop", "ferretdb")
        try:
            await eventually(lambda: _is(client, f"{base}/readyz", 503), what="not ready")
            down = (await client.get(f"{base}/readyz")).json()
            assert down["error"]["code"] == "unavailable"
            assert down["error"]["detail"]["mongodb"]
            assert down["error"]["detail"]["rabbitmq"] is None
            assert (await client.get(f"{base}/healthz")).status_code == 200
        finally:
            await asyncio.to_thread(stack, "start", "ferretdb")
        await eventually(lambda: _is(client, f"{base}/readyz", 200), what="ready again")
        assert proc.poll() is None  # the same process, never restarted


async def _is(client: httpx.AsyncClient, url: str, status: int) -> bool:
    return await status_of(client, url) == status


async def test_errors_have_one_shape(
    probe: tuple[subprocess.Popen[bytes], str], eventually: Any
) -> None:
    _, base = probe
    async with httpx.AsyncClient() as client:
        await eventually(lambda: _is(client, f"{base}/readyz", 200), what="ready")
        missing = await client.get(f"{base}/api/probe/nope", headers={"X-Request-ID": "abc-1"})
        assert missing.status_code == 404
        assert set(missing.json()["error"]) == {"code", "message", "detail"}
        assert missing.headers["x-request-id"] == "abc-1"
        metrics = await client.get(f"{base}/metrics")
        assert "peertrain_http_requests_total" in metrics.text
