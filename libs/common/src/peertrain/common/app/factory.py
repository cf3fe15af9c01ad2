"""The service app factory: FastAPI and FastStream in one lifespan.

Every service is built the same way::

    app = create_app(settings, routers=[users.router], setup=setup)

``setup(ctx)`` runs once MongoDB, RabbitMQ and S3 are connected and before consumers
start: a service creates its indexes and registers its event subscriptions there.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

import structlog
from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pymongo import AsyncMongoClient

from peertrain.common.blobs import BlobStore
from peertrain.common.bus import OutboxRelay, Subscriptions, declare_exchanges, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.logging import configure_logging
from peertrain.common.settings import ServiceSettings

from .body_deadline import RequestBodyDeadline
from .context import ServiceContext
from .docs import install_docs
from .errors import install_error_handlers
from .health import health_router
from .middleware import NulPathGuard, RequestContextMiddleware
from .responses import errors

__all__ = ["Setup", "connect_context", "create_app"]

log = structlog.get_logger(__name__)

Setup = Callable[[ServiceContext], Awaitable[None]]
T = TypeVar("T")


async def _retry(what: str, attempt: Callable[[], Awaitable[T]], *, for_s: float = 60.0) -> T:
    """Retry ``attempt`` with backoff for up to ``for_s`` (the stack may still be starting)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + for_s
    delay = 0.2
    while True:
        try:
            return await attempt()
        except Exception as exc:
            if loop.time() >= deadline:
                raise
            log.warning("waiting for dependency", dependency=what, error=repr(exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 3.0)


@asynccontextmanager
async def connect_context(
    settings: ServiceSettings,
    *,
    setup: Setup | None = None,
    use_blobs: bool = True,
    start_relay: bool | None = None,
) -> AsyncIterator[ServiceContext]:
    """Connect to the stack, run ``setup``, start consumers and the relay; undo on exit.

    Usable outside FastAPI too (workers, benchmarks, tests).
    """
    async with AsyncExitStack() as stack:
        timeout_ms = int(settings.mongo_timeout_s * 1000)
        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            settings.mongo_url,
            tz_aware=True,
            serverSelectionTimeoutMS=timeout_ms,
            connectTimeoutMS=timeout_ms,
            appname=settings.service_name,
        )
        stack.push_async_callback(mongo.close)
        event_log = EventLog(mongo[settings.mongo_db])
        await _retry("mongodb", event_log.ensure_indexes)

        broker = make_broker(
            settings.amqp_url.get_secret_value(),
            prefetch_count=settings.prefetch_count,
            app_id=settings.service_name,
        )
        await _retry("rabbitmq", broker.connect)
        stack.push_async_callback(broker.stop)
        await declare_exchanges(broker)

        blobs = None
        if use_blobs:
            blobs = await stack.enter_async_context(BlobStore(settings.blob_store_config()))

        ctx = ServiceContext(
            settings=settings,
            mongo=mongo,
            log=event_log,
            db=mongo[settings.own_db],
            broker=broker,
            blobs=blobs,
            subscriptions=Subscriptions(
                delivery_limit=settings.delivery_limit, observe=event_log.observed
            ),
        )
        if setup is not None:
            await setup(ctx)
        await ctx.subscriptions.declare(broker)
        ctx.subscriptions.attach(broker)
        await broker.start()

        if start_relay if start_relay is not None else settings.relay_enabled:
            ctx.relay = OutboxRelay(
                event_log,
                broker,
                producer=settings.service_name,
                batch_size=settings.relay_batch_size,
                unroutable_grace_s=settings.relay_unroutable_grace_s,
            )
            ctx.relay.start()
            stack.push_async_callback(ctx.relay.stop)
        try:
            yield ctx
        finally:
            for hook in reversed(ctx.on_shutdown):
                await hook()


def create_app(
    settings: ServiceSettings,
    *,
    routers: Sequence[APIRouter] = (),
    setup: Setup | None = None,
    use_blobs: bool = True,
    title: str | None = None,
    version: str = "0.1.0",
) -> FastAPI:
    """Build a service: routes under ``settings.api_prefix``, health, metrics, errors.

    Parameters
    ----------
    settings
        The service's settings.
    routers
        Its HTTP routers (paths relative to the API prefix).
    setup
        Hook run after connecting and before consumers start.
    use_blobs
        Whether the service needs S3 (and ``/readyz`` checks it).

    Raises
    ------
    ValueError
        If the settings are unsafe (``settings.startup_problems()``: development
        secrets in production, and each service's own checks).
    """
    problems = settings.startup_problems()
    if problems:
        raise ValueError(
            f"refusing to start in {settings.environment} mode: " + "; ".join(problems)
        )
    configure_logging(settings.service_name, level=settings.log_level, json=settings.log_json)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with connect_context(settings, setup=setup, use_blobs=use_blobs) as ctx:
            app.state.ctx = ctx
            log.info("service started", port=settings.port)
            yield
            app.state.ctx = None

    prefix = settings.api_prefix.rstrip("/")
    app = FastAPI(
        title=title or f"PeerTrain {settings.service_name}",
        version=version,
        lifespan=lifespan,
        openapi_url=f"{prefix}/openapi.json",
        docs_url=None,  # FastAPI's pages load their assets from a CDN: ours are served here
        redoc_url=None,
    )
    install_docs(app, prefix)
    app.state.ctx = None
    install_error_handlers(app)
    app.add_middleware(NulPathGuard)
    app.add_middleware(
        RequestBodyDeadline,
        timeout_s=settings.request_body_timeout_s,
        min_rate=settings.request_body_min_rate,
    )
    app.add_middleware(RequestContextMiddleware, service=settings.service_name)
    app.include_router(health_router())
    if prefix:
        app.include_router(health_router(), prefix=prefix, include_in_schema=False)
    # every route answers 422 (and 503 while starting) in the one error shape, which the
    # document says, instead of FastAPI's default HTTPValidationError (never sent);
    # a route's own ``responses=`` add to these
    for router in routers:
        app.include_router(router, prefix=prefix, responses=errors())
    app.add_route("/metrics", _metrics, include_in_schema=False)
    return app


async def _metrics(_: Request) -> Response:
    """Prometheus exposition of this process's metrics (exactly at ``/metrics``)."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
