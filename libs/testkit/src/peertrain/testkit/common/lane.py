"""Which copy of the local stack a test or benchmark runs against, and its addresses.

``make test`` runs its tests in two lanes at once, each on a copy of the local stack of
its own (``deploy/local/env.sh``): lane 0 on the ports ``docs/operations.md`` lists, the other with
every port moved by ``PEERTRAIN_PORT_OFFSET`` (RabbitMQ 5672 + offset, the gateway 8080 +
offset, the services 8001..8005 + offset, ...). Tests take every address from here, and
start services with :func:`child_env`, so that a test runs unchanged in either lane.
"""

from __future__ import annotations

import os

from peertrain.common.settings import ServiceSettings

__all__ = ["GATEWAY", "OFFSET", "PROMETHEUS", "RABBIT_API", "child_env", "stack_port"]

OFFSET = int(os.environ.get("PEERTRAIN_PORT_OFFSET") or 0)
"""How far this lane's ports are from the defaults (0: the local stack's own ports)."""


def stack_port(default: int) -> int:
    """This lane's port of a component whose default port is ``default``."""
    return default + OFFSET


GATEWAY = f"http://127.0.0.1:{stack_port(8080)}"
"""The gateway (nginx) in front of this lane's services."""
RABBIT_API = f"http://127.0.0.1:{stack_port(15672)}/api"
"""RabbitMQ's management API."""
PROMETHEUS = f"http://127.0.0.1:{stack_port(9090)}"


def child_env(service: str | None, values: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``peertrain.<service>`` subprocess in this lane.

    No other ``PEERTRAIN_*`` variable leaks in from the caller's environment; the service gets
    this lane's MongoDB, RabbitMQ and S3 addresses (and S3 keys) under its own prefix (the services'
    settings read ``PEERTRAIN_<SERVICE>_*`` only; ``None``: plain ``ServiceSettings``,
    ``PEERTRAIN_*``), then ``values`` on top.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEERTRAIN_")}
    env["PEERTRAIN_PORT_OFFSET"] = str(OFFSET)  # a test's own child process is in this lane
    stack = ServiceSettings()  # this lane's addresses (env.sh exports them)
    prefix = f"PEERTRAIN_{service.upper()}_" if service else "PEERTRAIN_"
    env[prefix + "MONGO_URL"] = stack.mongo_url
    env[prefix + "AMQP_URL"] = stack.amqp_url.get_secret_value()
    env[prefix + "S3_ENDPOINT_URL"] = stack.s3_endpoint_url
    # MinIO's keys: the stack's own (env.sh makes them; minioadmin is not accepted)
    env[prefix + "S3_ACCESS_KEY"] = stack.s3_access_key
    env[prefix + "S3_SECRET_KEY"] = stack.s3_secret_key.get_secret_value()
    if service == "registry":  # it manages peers' broker users and hands out the address
        env[prefix + "PEER_AMQP_URL"] = f"amqp://127.0.0.1:{stack_port(5672)}/"
        env[prefix + "RABBITMQ_MANAGEMENT_URL"] = RABBIT_API.removesuffix("/api")
    env.update(values or {})
    return env
