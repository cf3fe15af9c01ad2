"""The peer's and the CLI's wheels (``make dist``), installed into clean virtual envs.

What a volunteer installs must hold only what a peer uses: peertrain-common without its
``service`` extra, so none of FastAPI, uvicorn, FastStream, PyMongo, aiobotocore. Each
install is the wheels ``deploy/local/dist.sh`` builds plus the lock's pins of their
third-party packages (its ``pylock.*.toml``), from the uv cache the workspace's venv was
built from: offline, hard-linked, seconds (torch is never downloaded again).
``uv pip check`` then shows that the wheels' own requirements are met by that set, so a
``pip install`` of the wheels from an index asks for nothing more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Distributions of peertrain-common's `service` extra (and what they bring along).
SERVICE_SIDE = frozenset(
    {
        "fastapi",
        "fastapi-offline",
        "starlette",
        "uvicorn",
        "faststream",
        "pymongo",
        "aiobotocore",
        "botocore",
        "prometheus-client",
        "python-jose",
    }
)
# The modules those install.
SERVICE_MODULES = frozenset(
    {"fastapi", "fastapi_offline", "starlette", "uvicorn", "faststream", "pymongo", "bson"}
    | {"aiobotocore", "botocore", "prometheus_client", "jose"}
)


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

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.venv,  # not the checkout: nothing of the workspace on sys.path
            env={k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}},
        )


def _version(pyproject: str) -> str:
    return str(tomllib.loads((ROOT / pyproject).read_text())["project"]["version"])


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """``deploy/local/dist.sh`` into a fresh folder (offline: from the uv cache)."""
    folder = tmp_path_factory.mktemp("dist")
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


@pytest.fixture(scope="module")
def peer(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    wheels = ["peertrain_common", "peertrain_ml", "peertrain_peer"]
    return _install(dist, tmp_path_factory.mktemp("peer") / "venv", "pylock.peer.toml", wheels)


@pytest.fixture(scope="module")
def client(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    venv = tmp_path_factory.mktemp("client") / "venv"
    return _install(dist, venv, "pylock.client.toml", ["peertrain_client"])


def test_peer_install_holds_the_versioned_wheels_and_no_service_side_package(
    peer: Installed,
) -> None:
    assert peer.packages["peertrain-peer"] == _version("peer-runtime/pyproject.toml")
    assert peer.packages["peertrain-ml"] == _version("libs/ml/pyproject.toml")
    assert peer.packages["peertrain-common"] == _version("libs/common/pyproject.toml")
    assert {"torch", "safetensors", "numpy", "httpx", "aio-pika"} <= set(peer.packages)
    assert SERVICE_SIDE & set(peer.packages) == set()


def test_installed_peer_cli_runs(peer: Installed) -> None:
    done = peer.run("peertrain-peer", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("enroll", "run", "status"):
        assert command in done.stdout


def test_no_module_of_the_installed_peer_imports_a_service_side_package(
    peer: Installed,
) -> None:
    """Every module of peertrain.peer and peertrain.ml imports, and loads none of them."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import peertrain.ml, peertrain.peer\n"
        "for pkg in (peertrain.peer, peertrain.ml):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "print(' '.join(sorted({n.split('.')[0] for n in sys.modules})))\n"
    )
    done = peer.run("python", "-c", script)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert {"peertrain", "torch", "aio_pika"} <= loaded
    assert SERVICE_MODULES & loaded == set()


def test_client_install_holds_the_cli_without_service_side_packages_or_torch(
    client: Installed,
) -> None:
    assert client.packages["peertrain-client"] == _version("libs/client/pyproject.toml")
    assert SERVICE_SIDE & set(client.packages) == set()
    assert "torch" not in client.packages
    done = client.run("peertrain", "--help")
    assert done.returncode == 0, done.stderr
    assert "login" in done.stdout
