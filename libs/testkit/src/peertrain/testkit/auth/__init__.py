"""Run the real auth service, and a probe service that verifies its tokens, as processes.

For the stack tests and ``benchmarks/auth.py``::

    svc = auth_process(mongo_db="pt_auth_x", key_dir=tmp, admin_password=pw, log_dir=tmp)
    svc.start()          # waits for /readyz
    ...
    svc.stop()

The probe (:mod:`.probe`) is a minimal *other* service that only verifies tokens.
"""

from .probe import create_probe_app
from .process import (
    GATEWAY_URL,
    PROBE_PREFIX,
    AuthUnderTest,
    ServiceProcess,
    auth_process,
    auth_queue_prefix,
    delete_auth_queues,
    free_port,
    port_in_use,
    probe_process,
    shared_auth_service,
)

__all__ = [
    "GATEWAY_URL",
    "PROBE_PREFIX",
    "AuthUnderTest",
    "ServiceProcess",
    "auth_process",
    "auth_queue_prefix",
    "create_probe_app",
    "delete_auth_queues",
    "free_port",
    "port_in_use",
    "probe_process",
    "shared_auth_service",
]
