"""The ports test and benchmark services listen on, and who holds one that is taken.

Tests and benchmarks start the services on the platform's own ports (the gateway
routes to them). When a port is taken they refuse at once, saying who holds it and
what stops it: the running platform (``make up`` or ``make demo``; its pid files are in
``$VAR_DIR/services``, see ``deploy/local/services.sh``) or some other process, such as
another test or benchmark run.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .lane import stack_port

__all__ = [
    "PLATFORM_PORTS",
    "PortBusy",
    "PortHolder",
    "ensure_port_free",
    "free_port",
    "platform_services",
    "port_holder",
    "port_in_use",
    "scrape_targets_dir",
    "scraped",
]

PLATFORM_PORTS = {
    "auth": stack_port(8001),
    "registry": stack_port(8002),
    "dataset": stack_port(8003),
    "orchestrator": stack_port(8004),
    "aggregator": stack_port(8005),
}
"""Each service's port in this lane, as ``deploy/local/services.sh`` and the gateway have
them (see :mod:`.lane`)."""

_ROOT = Path(__file__).resolve().parents[6]  # the checkout (libs/testkit/src/peertrain/...)
_LISTEN = "0A"


class PortBusy(RuntimeError):
    """A port a service must listen on is taken; the message names the holder."""


@dataclass(frozen=True)
class PortHolder:
    """Who listens on a port.

    Parameters
    ----------
    port
        The port.
    pid
        The listening process, when this user may see it.
    command
        Its command line (empty when unknown).
    platform_service
        The platform service (``deploy/local/services.sh``) it is, else ``None``.
    """

    port: int
    pid: int | None
    command: str
    platform_service: str | None

    def refusal(self, name: str) -> str:
        """One line for ``name``'s refusal to start: who holds the port, what to stop."""
        if self.platform_service is not None:
            return (
                f"{name}: port {self.port} is held by the running platform "
                f"({self.platform_service}, pid {self.pid}; make demo / make up): run "
                "`make down`, or `bash deploy/local/demo.sh peers-down && make down` after "
                "make demo, first"
            )
        who = f"pid {self.pid} ({self.command[:120]})" if self.pid else "another user's process"
        return (
            f"{name}: port {self.port} is in use by {who}, not the platform: another test "
            "or benchmark run? Let it end, or stop it, first"
        )


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something listens on ``host:port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_holder(port: int) -> PortHolder | None:
    """Who listens on ``127.0.0.1:port``; ``None`` when nobody does."""
    if not port_in_use(port):
        return None
    platform = {pid: name for name, pid in platform_services().items()}
    pid = _listener(port, first=list(platform))
    if pid is None:  # not visible to this user: trust the platform's pid file
        service = next((s for s, p in PLATFORM_PORTS.items() if p == port), None)
        pid = next((p for p, s in platform.items() if s == service), None)
    return PortHolder(port, pid, _command(pid) if pid else "", platform.get(pid or -1))


def ensure_port_free(name: str, port: int) -> None:
    """Raise :class:`PortBusy` (saying who holds it) when ``port`` is taken."""
    holder = port_holder(port)
    if holder is not None:
        raise PortBusy(holder.refusal(name))


def _var_dir() -> Path:
    # deploy/local/env.sh exports VAR_DIR (from PEERTRAIN_VAR, else <checkout>/.var)
    explicit = os.environ.get("VAR_DIR") or os.environ.get("PEERTRAIN_VAR")
    return Path(explicit) if explicit else _ROOT / ".var"


def scrape_targets_dir() -> Path:
    """Where :func:`scraped` writes its target files (this lane's stack's)."""
    return _var_dir() / "prometheus" / "targets"


@contextmanager
def scraped(service: str, port: int) -> Iterator[None]:
    """While in the block, the local stack's Prometheus also scrapes an instance of
    ``service`` listening on ``port`` (a second orchestrator, say): a target file in
    ``$VAR_DIR/prometheus/targets`` (``file_sd_configs`` in deploy/prometheus/prometheus.yml)."""
    folder = scrape_targets_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{service}-{port}.json"
    target = [{"targets": [f"127.0.0.1:{port}"], "labels": {"service": service}}]
    path.write_text(json.dumps(target))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def platform_services() -> dict[str, int]:
    """The running platform's services (``make up``): name -> pid, from the pid files
    ``deploy/local/services.sh`` writes (a stale file's pid is checked, and left out)."""
    found = {}
    for service in PLATFORM_PORTS:
        try:
            pid = int((_var_dir() / "services" / f"{service}.pid").read_text().strip())
        except (OSError, ValueError):
            continue
        if f"peertrain.{service}" in _command(pid):  # not a recycled pid
            found[service] = pid
    return found


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def _listener(port: int, *, first: list[int]) -> int | None:
    """The pid whose socket listens on ``port`` (Linux ``/proc``; ``None`` if unseen)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    others = (int(p) for p in os.listdir("/proc") if p.isdigit())
    for pid in [*first, *others]:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in fds):
                return pid
        except OSError:
            continue
    return None
