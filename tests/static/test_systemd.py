"""Static checks of deploy/systemd/peertrain-peer.service, the peer as a system service.

The unit is parsed here (systemd's syntax: sections, repeatable keys, backslash
continuations) and checked for what docs/volunteers.md promises: an unprivileged user,
the hardening, the limits and the restart policy; ``systemd-analyze verify`` checks it
too where systemd is installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "peertrain-peer.service"
STATE_DIR = "/var/lib/peertrain-peer"


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """Sections of a unit file, each key with all its values in order."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line.startswith(("#", ";")):
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{line!r} before any section"
        key, sep, value = line.partition("=")
        assert sep, f"not a KEY=value line: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.fixture(scope="module")
def service() -> dict[str, list[str]]:
    return parse_unit(UNIT.read_text())["Service"]


def one(service: dict[str, list[str]], key: str) -> str:
    values = service.get(key)
    assert values, f"no {key}="
    return values[-1]


def environment(service: dict[str, list[str]]) -> dict[str, str]:
    pairs = (item.split("=", 1) for value in service["Environment"] for item in value.split())
    return {name: value for name, value in pairs}


def test_it_runs_the_peer_as_its_own_unprivileged_user(service: dict[str, list[str]]) -> None:
    exec_start = one(service, "ExecStart").split()
    assert Path(exec_start[0]).name == "peertrain-peer" and exec_start[1:] == ["run"]
    assert one(service, "User") == "peertrain-peer"
    assert one(service, "Group") == "peertrain-peer"
    assert one(service, "User") not in {"root", "0"}
    assert one(service, "CapabilityBoundingSet") == ""


def test_its_identity_and_caches_live_in_its_state_directory(
    service: dict[str, list[str]],
) -> None:
    env = environment(service)
    assert env["PEERTRAIN_PEER_CONFIG_DIR"] == STATE_DIR
    assert env["HOME"] == STATE_DIR
    assert "/var/lib/" + one(service, "StateDirectory") == STATE_DIR
    assert one(service, "StateDirectoryMode") == "0700"
    assert one(service, "ReadWritePaths").split() == [STATE_DIR]


def test_it_is_hardened(service: dict[str, list[str]]) -> None:
    assert one(service, "NoNewPrivileges") == "yes"
    assert one(service, "ProtectSystem") == "strict"
    assert one(service, "ProtectHome") == "yes"
    assert one(service, "PrivateTmp") == "yes"
    for key in (
        "RestrictSUIDSGID",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectControlGroups",
        "RestrictNamespaces",
        "LockPersonality",
    ):
        assert one(service, key) == "yes", key
    # a GPU peer needs /dev/nvidia*
    assert "PrivateDevices" not in service


def test_its_resources_are_limited_and_threads_follow_the_cpu_quota(
    service: dict[str, list[str]],
) -> None:
    quota = one(service, "CPUQuota")
    assert quota.endswith("%")
    cpus = int(quota[:-1]) // 100
    assert cpus >= 1
    assert int(environment(service)["PEERTRAIN_PEER_THREADS"]) == cpus
    assert one(service, "MemoryMax")[-1] in "KMGT"
    assert one(service, "TasksMax").isdigit()


def test_it_restarts_on_failure_but_not_when_restarting_cannot_help(
    service: dict[str, list[str]],
) -> None:
    assert one(service, "Restart") == "on-failure"
    # peertrain-peer run exits 2 (not enrolled, bad config) and 3 (refused by the platform)
    assert set(one(service, "RestartPreventExitStatus").split()) == {"2", "3"}
    units = parse_unit(UNIT.read_text())
    assert units["Install"]["WantedBy"] == ["multi-user.target"]
    assert "network-online.target" in units["Unit"]["After"][0].split()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verify_accepts_it(tmp_path: Path) -> None:
    # verify wants ExecStart's program to exist: point it at a stand-in
    program = tmp_path / "peertrain-peer"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    text = UNIT.read_text().replace("/opt/peertrain-peer/bin/peertrain-peer", str(program))
    unit = tmp_path / UNIT.name
    unit.write_text(text)
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "peertrain-peer.service" not in done.stderr, done.stderr
