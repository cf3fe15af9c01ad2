"""The peer's and the CLI's wheels (``make dist``), installed into clean virtual envs.

What a volunteer installs must hold only what a peer uses: peertrain-common without its
``service`` extra, so none of FastAPI, uvicorn, PyMongo, aiobotocore (FastStream's
RabbitMQ client it holds: the one AMQP client of services and peers). How the
installs are made: ``wheels.py``. The installed peer and CLI at work against the stack,
from another machine's network: ``tests/stack/test_remote_peer.py``.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from wheels import ROOT, Dist, Installed, build_dist, install_client, install_peer

# Distributions of peertrain-common's `service` extra (and what they bring along).
SERVICE_SIDE = frozenset(
    {
        "fastapi",
        "fastapi-offline",
        "starlette",
        "uvicorn",
        "pymongo",
        "aiobotocore",
        "botocore",
        "prometheus-client",
        "python-jose",
    }
)
# The modules those install.
SERVICE_MODULES = frozenset(
    {"fastapi", "fastapi_offline", "starlette", "uvicorn", "pymongo", "bson"}
    | {"aiobotocore", "botocore", "prometheus_client", "jose"}
)


def _version(pyproject: str) -> str:
    return str(tomllib.loads((ROOT / pyproject).read_text())["project"]["version"])


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return build_dist(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def peer(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install_peer(dist, tmp_path_factory.mktemp("peer") / "venv")


@pytest.fixture(scope="module")
def client(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install_client(dist, tmp_path_factory.mktemp("client") / "venv")


def test_peer_install_holds_the_versioned_wheels_and_no_service_side_package(
    peer: Installed,
) -> None:
    assert peer.packages["peertrain-peer"] == _version("peer-runtime/pyproject.toml")
    assert peer.packages["peertrain-ml"] == _version("libs/ml/pyproject.toml")
    assert peer.packages["peertrain-common"] == _version("libs/common/pyproject.toml")
    assert {"torch", "safetensors", "numpy", "httpx", "aio-pika", "faststream"} <= set(
        peer.packages
    )
    assert SERVICE_SIDE & set(peer.packages) == set()
    assert "peertrain-testkit" not in peer.packages


def test_installed_peer_cli_runs(peer: Installed) -> None:
    done = peer.run("peertrain-peer", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("enroll", "run", "status"):
        assert command in done.stdout


def test_no_module_of_the_installed_peer_imports_a_service_side_package(
    peer: Installed,
) -> None:
    """Every module of peertrain.peer and peertrain.ml imports, and loads none of them;
    none of them is test support (that is peertrain-testkit, which no wheel holds)."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import peertrain.ml, peertrain.peer\n"
        "walked = []\n"
        "for pkg in (peertrain.peer, peertrain.ml):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "        walked.append(m.name)\n"
        "print(' '.join(sorted({n.split('.')[0] for n in sys.modules})))\n"
        "print(' '.join(walked))\n"
    )
    done = peer.run("python", "-c", script)
    assert done.returncode == 0, done.stderr
    tops, walked = done.stdout.splitlines()
    loaded = set(tops.split())
    assert {"peertrain", "torch", "aio_pika", "faststream"} <= loaded
    assert SERVICE_MODULES & loaded == set()
    assert "peertrain.peer.runtime" in walked.split()
    assert [m for m in walked.split() if "testing" in m.split(".")] == []


def test_client_install_holds_the_cli_without_service_side_packages_or_torch(
    client: Installed,
) -> None:
    assert client.packages["peertrain-client"] == _version("libs/client/pyproject.toml")
    assert SERVICE_SIDE & set(client.packages) == set()
    assert "torch" not in client.packages and "faststream" not in client.packages
    done = client.run("peertrain", "--help")
    assert done.returncode == 0, done.stderr
    assert "login" in done.stdout
