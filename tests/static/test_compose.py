"""Static checks of docker-compose.yml (no Docker engine needed).

The compose file is the stack for users with Docker; the native stack
(deploy/local/stack.sh) uses the same ports and credentials, so the services' defaults
work against both. These tests keep the two from drifting apart.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ONE_SHOT_LABEL = "peertrain.one-shot"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict), "docker-compose.yml is not a mapping"
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    svcs = compose.get("services")
    assert isinstance(svcs, dict) and svcs, "no services in docker-compose.yml"
    return svcs


def labels(svc: dict[str, Any]) -> dict[str, str]:
    """A service's labels, whichever of the two compose syntaxes it uses."""
    raw = svc.get("labels") or {}
    if isinstance(raw, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in raw)
    return {str(k): str(v) for k, v in raw.items()}


def environment(svc: dict[str, Any]) -> dict[str, str]:
    raw = svc.get("environment") or {}
    if isinstance(raw, list):
        return dict(item.split("=", 1) for item in raw)
    return {str(k): str(v) for k, v in raw.items()}


def published(svc: dict[str, Any]) -> set[tuple[int, int]]:
    """(host port, container port) pairs, from short ("9000:9000") or long syntax."""
    pairs = set()
    for port in svc.get("ports") or []:
        if isinstance(port, dict):
            pairs.add((int(port["published"]), int(port["target"])))
        else:
            *_, host, container = str(port).split(":")
            pairs.add((int(host), int(container.split("/")[0])))
    return pairs


def is_one_shot(svc: dict[str, Any]) -> bool:
    return labels(svc).get(ONE_SHOT_LABEL) == "true"


def test_infrastructure_services_present(services: dict[str, dict[str, Any]]) -> None:
    assert {"mongo", "rabbitmq", "minio", "minio-init"} <= services.keys()
    assert services["mongo"]["image"].startswith("mongo:7")
    assert "management" in services["rabbitmq"]["image"]


def test_every_long_running_service_has_a_healthcheck(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, svc in services.items():
        if is_one_shot(svc):
            continue
        check = svc.get("healthcheck")
        assert check, f"{name} has no healthcheck"
        assert not check.get("disable"), f"{name} disables its healthcheck"
        test = check.get("test")
        assert test and test != ["NONE"], f"{name} has an empty healthcheck test"


def test_one_shot_services_really_are(services: dict[str, dict[str, Any]]) -> None:
    """A container exempted from healthchecks must exit, and others wait for its success."""
    one_shots = {name for name, svc in services.items() if is_one_shot(svc)}
    assert one_shots == {"minio-init"}
    for name in one_shots:
        assert str(services[name].get("restart", "no")) == "no", f"{name} restarts"


def test_original_ports(services: dict[str, dict[str, Any]]) -> None:
    assert (27017, 27017) in published(services["mongo"])
    assert {(5672, 5672), (15672, 15672)} <= published(services["rabbitmq"])
    assert {(9000, 9000), (9001, 9001)} <= published(services["minio"])


def test_original_credentials(services: dict[str, dict[str, Any]]) -> None:
    rabbit = environment(services["rabbitmq"])
    assert rabbit["RABBITMQ_DEFAULT_USER"] == "admin"
    assert rabbit["RABBITMQ_DEFAULT_PASS"] == "admin"
    minio = environment(services["minio"])
    assert minio["MINIO_ROOT_USER"] == "minioadmin"
    assert minio["MINIO_ROOT_PASSWORD"] == "minioadmin"


def test_bucket_init_creates_the_bucket(services: dict[str, dict[str, Any]]) -> None:
    init = services["minio-init"]
    command = " ".join(map(str, init.get("entrypoint") or [])) + " " + str(init.get("command", ""))
    assert "peertrain" in command
    assert "minioadmin:minioadmin@minio:9000" in " ".join(environment(init).values())
    assert init["depends_on"]["minio"]["condition"] == "service_healthy"


def test_named_volumes(compose: dict[str, Any], services: dict[str, dict[str, Any]]) -> None:
    declared = set((compose.get("volumes") or {}).keys())
    for name in ("mongo", "rabbitmq", "minio"):
        sources = {str(v).split(":", 1)[0] for v in services[name].get("volumes") or []}
        assert sources & declared, f"{name} keeps its data outside a named volume"


def test_service_template_anchor(compose: dict[str, Any]) -> None:
    """Later services take `<<: *service`: it must wait for the stack and be checked."""
    template = compose["x-service"]
    assert set(template["depends_on"]) == {"mongo", "rabbitmq", "minio-init"}
    assert template["healthcheck"]["test"]
    assert set(compose["x-stack"]) == {"mongo-url", "amqp-url", "s3-endpoint"}


def docker_compose_unavailable() -> str | None:
    """Why `docker compose` cannot run here, or None when it can."""
    if shutil.which("docker") is None:
        return "the docker client is not installed"
    try:
        done = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker compose version` failed: {exc}"
    if done.returncode != 0:
        return f"`docker compose version` failed: {(done.stderr or done.stdout).strip()}"
    return None


def test_docker_compose_config() -> None:
    """`docker compose config -q` validates the file (needs the client, not an engine)."""
    reason = docker_compose_unavailable()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
