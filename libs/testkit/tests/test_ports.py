"""A service refuses at once to start on a taken port, naming the holder (no stack)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from peertrain.testkit.common import PortBusy, ServiceProcess, port_holder

# Listens on a free port, prints it; "peertrain.registry" is in its command line, as in
# a platform service's (`python -m peertrain.registry`).
LISTENER = """
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)
"""


@pytest.fixture
def platform_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A stand-in for ``make up``'s registry: its pid file in VAR_DIR; yields its port."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LISTENER, "peertrain.registry"], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        (tmp_path / "services").mkdir()
        (tmp_path / "services" / "registry.pid").write_text(f"{proc.pid}\n")
        monkeypatch.setenv("VAR_DIR", str(tmp_path))
        yield port
    finally:
        proc.kill()
        proc.wait()


def service(port: int, tmp_path: Path) -> ServiceProcess:
    return ServiceProcess("registry", ["-c", "pass"], {}, port, tmp_path / "registry.log")


def test_a_port_held_by_the_platform_says_to_stop_the_platform(
    platform_registry: int, tmp_path: Path
) -> None:
    with pytest.raises(PortBusy) as e:
        service(platform_registry, tmp_path).start()
    message = str(e.value)
    assert message.startswith(f"registry: port {platform_registry} is held by the running")
    assert "make down" in message and "demo.sh peers-down" in message
    assert not (tmp_path / "registry.log").exists()  # refused before starting anything


def test_a_port_held_by_another_process_names_it(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        holder = port_holder(port)
        assert holder is not None and holder.pid == os.getpid()
        assert holder.platform_service is None
        with pytest.raises(PortBusy, match=f"port {port} is in use by pid {os.getpid()}"):
            service(port, tmp_path).start()
    assert port_holder(port) is None
