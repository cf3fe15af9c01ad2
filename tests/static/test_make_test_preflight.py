"""`make test` beside a running platform refuses first, saying what to stop.

deploy/local/test-preflight.sh is run on ports moved far from the real ones (a socket
these tests bind stands for the platform), so nothing real is touched or started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREFLIGHT = ROOT / "deploy" / "local" / "test-preflight.sh"
AUTH_PORT = 8001

# A hang guard only: the check does no I/O beyond connecting to loopback ports.
TIMEOUT_S = 20


def _listener() -> socket.socket:
    """A socket listening on a free loopback port whose next four ports are free too."""
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        if port + 4 < 65536 and all(_free(port + i) for i in range(1, 5)):
            s.listen()
            return s
        s.close()
    raise RuntimeError("no run of five free ports")


def _free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _preflight(offset: int, var_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PEERTRAIN_PORT_OFFSET": str(offset),
        "PEERTRAIN_VAR": str(var_dir),
        "LANES": "1",
    }
    env.pop("PYTEST_ARGS", None)
    return subprocess.run(
        ["bash", str(PREFLIGHT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.fixture
def held() -> Iterator[socket.socket]:
    s = _listener()
    yield s
    s.close()


def test_a_port_held_by_another_process_is_refused_naming_it(
    held: socket.socket, tmp_path: Path
) -> None:
    port = held.getsockname()[1]
    done = _preflight(port - AUTH_PORT, tmp_path)
    assert done.returncode == 1
    assert f"port {port} (auth) is in use by pid {os.getpid()}" in done.stderr
    assert "not the platform" in done.stderr
    assert "stop it, first" in done.stderr


def test_a_port_held_by_the_platform_is_refused_saying_make_down(tmp_path: Path) -> None:
    # A process that looks like services.sh's auth (its command line, its pid file).
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    holder = subprocess.Popen(
        [
            "python -m peertrain.auth",
            "-c",
            "import socket, sys; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])));"
            " s.listen(); print('ready', flush=True); sys.stdin.read()",
            str(port),
        ],
        executable=sys.executable,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        # A moved stack keeps its data beside the default one (deploy/local/env.sh).
        services = tmp_path / f"var-lane{port - AUTH_PORT}" / "services"
        services.mkdir(parents=True)
        (services / "auth.pid").write_text(f"{holder.pid}\n")
        done = _preflight(port - AUTH_PORT, tmp_path / "var")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(TIMEOUT_S)
    assert done.returncode == 1
    holder_line = f"port {port} (auth) is held by the running platform (pid {holder.pid};"
    assert holder_line in done.stderr
    assert "bash deploy/local/demo.sh peers-down && make down" in done.stderr


def test_free_ports_pass(held: socket.socket, tmp_path: Path) -> None:
    port = held.getsockname()[1]
    held.close()  # its run of five ports is free now (unless someone took one since)
    done = _preflight(port - AUTH_PORT, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_make_test_runs_the_check_before_the_venv_the_console_and_the_stacks() -> None:
    plan = subprocess.run(
        ["make", "--dry-run", "--no-print-directory", "test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    ).stdout.splitlines()
    assert "test-preflight.sh" in plan[0], plan
    later = "\n".join(plan[1:])
    assert "venv" in later and "console" in later and "deploy/local/test.sh" in later
