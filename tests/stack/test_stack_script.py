"""``deploy/local/stack.sh up`` with its ports held by other programs: it refuses at once.

Run on ports moved far from the real ones (an offset of its own, its data in a temporary
folder), with a socket of this test on every component's port: nothing is launched,
so ``up`` must say which components it could not launch and stop there, rather than
wait out each component's readiness timeout (minutes) before failing.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.stack

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "deploy" / "local" / "stack.sh"
COMPONENTS = ("rabbitmq", "postgres", "ferretdb", "minio", "gateway", "prometheus")


def _stack(offset: int, var: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PEERTRAIN_PORT_OFFSET": str(offset), "PEERTRAIN_VAR": str(var)}
    return subprocess.run(
        ["bash", str(STACK), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _ports(offset: int, var: Path) -> dict[str, int]:
    status = _stack(offset, var, "status", timeout=60)
    assert status.returncode == 0, status.stderr
    found = dict(re.findall(r"^(\w+)\s+stopped\s+pid=-\s+port=(\d+)$", status.stdout, re.M))
    assert set(found) == set(COMPONENTS), status.stdout  # none of this lane runs
    return {name: int(port) for name, port in found.items()}


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An offset whose component ports are all free, each then held by a socket here."""
    var = tmp_path / "var"
    for offset in range(710, 990, 10):
        ports = _ports(offset, var)
        sockets: list[socket.socket] = []
        try:
            for port in ports.values():
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
                s.listen()
        except OSError:
            for s in sockets:
                s.close()
            continue
        try:
            yield offset, var
        finally:
            for s in sockets:
                s.close()
        return
    pytest.fail("no offset with every component's port free")


def test_up_refuses_at_once_when_every_port_is_held_by_another_program(
    held: tuple[int, Path],
) -> None:
    offset, var = held
    # a hang guard only: waiting for readiness would take minutes
    done = _stack(offset, var, "up", timeout=300)
    assert done.returncode == 1, (done.stdout, done.stderr)
    for name in COMPONENTS:
        assert f"{name}: port" in done.stderr and "not ours; stop it first" in done.stderr
    assert f"could not launch {' '.join(COMPONENTS)}" in done.stderr, done.stderr
    assert "not ready" not in done.stderr, done.stderr
    assert "starting" not in done.stderr, done.stderr  # nothing was launched
