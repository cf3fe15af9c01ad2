"""Build the wheels (``make dist``) and install them into clean virtual environments.

Each install is the wheels ``deploy/local/dist.sh`` builds plus the lock's pins of their
third-party packages (its ``pylock.*.toml``), from the uv cache the workspace's venv was
built from: offline, hard-linked, seconds (torch is never downloaded again). ``uv pip
check`` then shows that the wheels' own requirements are met by that set, so a ``pip
install`` of the wheels from an index asks for nothing more.

Used by ``tests/install`` (what the installs hold) and by the stack test of a peer on
another machine (``tests/stack/test_remote_peer.py``: the installed peer and CLI, for
real).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ROOT", "Dist", "Installed", "build_dist", "install_client", "install_peer"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Dist:
    """The built wheels and pins, and the uv that installs them."""

    folder: Path
    uv: str
    env: dict[str, str]


@dataclass(frozen=True)
class Installed:
    """A clean venv holding one install."""

    venv: Path
    packages: dict[str, str]  # name -> version, as `uv pip list` gives them

    def program(self, name: str) -> str:
        """The path of one of the install's commands (``peertrain-peer``, ``peertrain``)."""
        return str(self.venv / "bin" / name)

    @staticmethod
    def env(extra: dict[str, str] | None = None) -> dict[str, str]:
        """This process's environment without what points at the workspace."""
        drop = {"PYTHONPATH", "VIRTUAL_ENV"}
        return {k: v for k, v in os.environ.items() if k not in drop} | (extra or {})

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.program(args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.venv,  # not the checkout: nothing of the workspace on sys.path
            env=self.env(),
        )


def build_dist(folder: Path) -> Dist:
    """``deploy/local/dist.sh`` into ``folder`` (offline: from the uv cache)."""
    done = subprocess.run(
        [
            "bash",
            "-c",
            '. deploy/local/env.sh && bash deploy/local/dist.sh "$1" >&2'
            ' && echo "$UV" && echo "$UV_CACHE_DIR"',
            "dist",
            str(folder),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "UV_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    uv, cache = done.stdout.split()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))}
    # Hard links from the cache: torch and its CUDA libraries are GBs, copying them is not.
    env |= {"UV_CACHE_DIR": cache, "UV_OFFLINE": "1", "UV_LINK_MODE": "hardlink"}
    return Dist(folder, uv, env)


def _install(dist: Dist, venv: Path, pins: str, wheels: list[str]) -> Installed:
    def uv(*args: str) -> str:
        done = subprocess.run(
            [dist.uv, *args], capture_output=True, text=True, timeout=300, env=dist.env
        )
        assert done.returncode == 0, f"uv {' '.join(args)}:\n{done.stderr}"
        return done.stdout

    uv("venv", "--quiet", "--python", sys.executable, str(venv))
    python = ("--python", str(venv / "bin" / "python"))
    uv("pip", "install", "--quiet", *python, "-r", str(dist.folder / pins))
    found = sorted(str(p) for w in wheels for p in dist.folder.glob(f"{w}-*.whl"))
    assert len(found) == len(wheels), found
    uv("pip", "install", "--quiet", *python, "--no-deps", *found)
    uv("pip", "check", "--quiet", *python)  # every wheel's requirements are met
    listed = json.loads(uv("pip", "list", *python, "--format", "json"))
    return Installed(venv, {p["name"]: p["version"] for p in listed})


def install_peer(dist: Dist, venv: Path) -> Installed:
    """What a volunteer installs: the peer and what it imports, no service side."""
    wheels = ["peertrain_common", "peertrain_ml", "peertrain_peer"]
    return _install(dist, venv, "pylock.peer.toml", wheels)


def install_client(dist: Dist, venv: Path) -> Installed:
    """What a researcher installs: the CLI and SDK, without torch."""
    return _install(dist, venv, "pylock.client.toml", ["peertrain_client"])
