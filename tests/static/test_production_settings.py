"""Every service refuses the development secrets when ENVIRONMENT=production.

The checks live in ``ServiceSettings.startup_problems`` (shared) and each service's
override; ``create_app`` refuses to build a service whose list is not empty, and
``python -m peertrain.<service>`` then exits 2 before it listens (the auth service's
case runs as a process in tests/stack/test_auth.py). No stack needed: nothing connects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from peertrain.aggregator.app import create_aggregator_app
from peertrain.aggregator.config import AggregatorSettings
from peertrain.auth.app import create_auth_app
from peertrain.auth.config import AuthSettings
from peertrain.dataset.app import create_dataset_app
from peertrain.dataset.config import DatasetSettings
from peertrain.orchestrator.app import create_orchestrator_app
from peertrain.orchestrator.config import OrchestratorSettings
from peertrain.registry.app import create_registry_app
from peertrain.registry.config import RegistrySettings

SERVICES: dict[str, tuple[type[Any], Callable[[Any], Any]]] = {
    "auth": (AuthSettings, create_auth_app),
    "registry": (RegistrySettings, create_registry_app),
    "dataset": (DatasetSettings, create_dataset_app),
    "orchestrator": (OrchestratorSettings, create_orchestrator_app),
    "aggregator": (AggregatorSettings, create_aggregator_app),
}

SAFE = {
    "amqp_url": "amqp://peertrain:Zq8-long-broker-pass@rabbitmq:5672/",
    "s3_access_key": "peertrain-s3",
    "s3_secret_key": "Zq8-long-s3-secret",
    "mongo_url": "mongodb://peertrain:Zq8-long-db-pass@mongo:27017/?replicaSet=rs0",
}
OWN_SAFE: dict[str, dict[str, Any]] = {
    "auth": {"admin_password": "a long and unusual admin password", "signing_key_dir": "/keys"},
    "registry": {"rabbitmq_admin_password": "Zq8-long-broker-pass"},
}


@pytest.mark.parametrize("name", SERVICES)
def test_service_refuses_development_secrets_in_production(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings_type, build = SERVICES[name]
    prefix = f"PEERTRAIN_{name.upper()}_"
    # The built-in defaults, not the local stack's own MinIO keys (deploy/local/env.sh).
    for key in ("S3_ACCESS_KEY", "S3_SECRET_KEY"):
        monkeypatch.delenv(prefix + key, raising=False)
    with pytest.raises(ValueError, match="refusing to start in production mode") as refused:
        build(settings_type(environment="production"))
    for setting in ("AMQP_URL", "S3_ACCESS_KEY", "S3_SECRET_KEY", "MONGO_URL"):
        assert prefix + setting in str(refused.value), setting
    if name == "auth":
        assert "ADMIN_PASSWORD" in str(refused.value)
    if name == "registry":
        assert "RABBITMQ_ADMIN_PASSWORD" in str(refused.value)


@pytest.mark.parametrize("name", SERVICES)
def test_service_builds_in_production_with_real_secrets(name: str) -> None:
    settings_type, build = SERVICES[name]
    settings = settings_type(environment="production", **SAFE, **OWN_SAFE.get(name, {}))
    assert settings.startup_problems() == []
    build(settings)


@pytest.mark.parametrize("name", SERVICES)
def test_development_mode_keeps_the_local_defaults(name: str) -> None:
    settings_type, _ = SERVICES[name]
    assert settings_type(environment="development").startup_problems() == []
