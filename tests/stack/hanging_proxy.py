"""A TCP proxy that can hang a link: stop forwarding without closing anything.

A hung link is the fault a closed one is not: neither side sees an error, bytes just stop
arriving (a stalled NAT, a half-dead router). Tests put the proxy between a client and
one of the stack's servers and clear :attr:`HangingProxy.flowing` to hang every
connection through it, then set it to let the held bytes go on.

A connection whose server cannot be reached (the server is down) is closed at once, as a
refused connection would be, so clients notice and retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["HangingProxy", "ThreadedProxy"]

T = TypeVar("T")


class HangingProxy:
    """Forwards ``127.0.0.1:<port>`` to ``127.0.0.1:<upstream_port>``."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.server: asyncio.Server | None = None
        self.port = 0
        self._links: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen on a free port (:attr:`port`)."""
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and drop every connection."""
        self.flowing.set()
        if self.server is not None:
            self.server.close()
        for task in list(self._links):
            task.cancel()
        if self.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 5)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._links.add(task)
        try:
            await self.flowing.wait()  # a new connection hangs too while the link is hung
            try:
                up_reader, up_writer = await asyncio.open_connection(
                    "127.0.0.1", self.upstream_port
                )
            except OSError:
                return  # the server is away: refuse, as it would
            try:
                await asyncio.gather(
                    self._pump(reader, up_writer),
                    self._pump(up_reader, writer),
                    return_exceptions=True,
                )
            finally:
                up_writer.close()
        finally:
            writer.close()
            self._links.discard(task)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                await self.flowing.wait()  # hung: hold the bytes, keep the sockets open
                dst.write(data)
                await dst.drain()
        finally:
            with contextlib.suppress(Exception):
                dst.close()


class ThreadedProxy:
    """A :class:`HangingProxy` on an event loop of its own, in a daemon thread, for code
    that is not async (fixtures) or lives on another loop: :meth:`hang` and
    :meth:`release` may be called from any thread."""

    def __init__(self, upstream_port: int) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.proxy = self._call(self._make(upstream_port))

    @property
    def port(self) -> int:
        """The port clients connect to."""
        return self.proxy.port

    def hang(self) -> None:
        """Stop forwarding (every connection, and new ones)."""
        self._loop.call_soon_threadsafe(self.proxy.flowing.clear)

    def release(self) -> None:
        """Forward again, held bytes first."""
        self._loop.call_soon_threadsafe(self.proxy.flowing.set)

    def close(self) -> None:
        """Stop the proxy and its thread."""
        self._call(self.proxy.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _make(self, upstream_port: int) -> HangingProxy:
        proxy = HangingProxy(upstream_port)
        await proxy.start()
        return proxy

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)
