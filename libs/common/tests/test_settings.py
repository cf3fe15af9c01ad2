"""ServiceSettings.startup_problems: production refuses the development secrets."""

from __future__ import annotations

import pytest
from pydantic_settings import SettingsConfigDict

from peertrain.common.app.factory import create_app
from peertrain.common.settings import ServiceSettings


class ToySettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_TOY_", extra="ignore")
    service_name: str = "toy"


SAFE = {
    "amqp_url": "amqp://peertrain:Zq8-long-broker-pass@rabbitmq:5672/",
    "s3_access_key": "peertrain-s3",
    "s3_secret_key": "Zq8-long-s3-secret",
    "mongo_url": "mongodb://peertrain:Zq8-long-db-pass@m0,m1,m2/?replicaSet=rs0&authSource=admin",
}


def test_development_defaults_are_fine_outside_production() -> None:
    assert ToySettings(environment="development").startup_problems() == []
    assert ToySettings(environment="test").startup_problems() == []


def test_production_refuses_every_development_default() -> None:
    problems = ToySettings(environment="production").startup_problems()
    assert [p.split(" ")[0] for p in problems] == [
        "PEERTRAIN_TOY_AMQP_URL",
        "PEERTRAIN_TOY_S3_ACCESS_KEY",
        "PEERTRAIN_TOY_S3_SECRET_KEY",
        "PEERTRAIN_TOY_MONGO_URL",
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("amqp_url", "amqp://admin:admin@rabbitmq:5672/"),
        ("amqp_url", "amqp://rabbitmq:5672/"),
        ("s3_access_key", "minioadmin"),
        ("s3_secret_key", "minioadmin"),
        ("mongo_url", "mongodb://mongo:27017/"),
        ("mongo_url", "mongodb://admin:admin@mongo:27017/"),
    ],
)
def test_production_refuses_one_development_secret(field: str, value: str) -> None:
    settings = ToySettings(environment="production", **{**SAFE, field: value})
    [problem] = settings.startup_problems()
    assert problem.startswith(f"PEERTRAIN_TOY_{field.upper()} ")


def test_production_accepts_real_secrets_and_x509() -> None:
    assert ToySettings(environment="production", **SAFE).startup_problems() == []
    x509 = "mongodb://m0/?authMechanism=MONGODB-X509&tls=true"
    assert (
        ToySettings(environment="production", **{**SAFE, "mongo_url": x509}).startup_problems()
        == []
    )


def test_create_app_refuses_to_build_a_service_with_development_secrets() -> None:
    with pytest.raises(ValueError, match=r"refusing to start in production mode: .*AMQP_URL"):
        create_app(ToySettings(environment="production"))
    create_app(ToySettings(environment="production", **SAFE))


def test_queues_are_named_under_the_prefix_or_else_the_service_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ToySettings().queue("audit") == "toy.audit"
    monkeypatch.setenv("PEERTRAIN_TOY_QUEUE_PREFIX", "toy-run7")
    assert ToySettings().queue("audit") == "toy-run7.audit"
