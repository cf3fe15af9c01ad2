"""The auth service's settings (``PEERTRAIN_AUTH_*``) and its start-up safety checks."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from peertrain.common.settings import ServiceSettings

from .domain.passwords import PasswordPolicy
from .domain.proxies import TrustedProxies

__all__ = ["DEFAULT_ADMIN_PASSWORD", "DEFAULT_SIGNING_KEY_DIR", "AuthSettings"]

DEFAULT_ADMIN_PASSWORD = "peertrain-dev-admin"  # noqa: S105 (development only; refused elsewhere)
DEFAULT_SIGNING_KEY_DIR = Path(".var/auth/keys")


class AuthSettings(ServiceSettings):
    """Everything the auth service reads from its environment.

    Token issuer, audience and leeway are shared with every verifier and come from
    ``PEERTRAIN_JWT_*`` (see :class:`peertrain.common.security.SecuritySettings`).
    """

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_AUTH_", extra="ignore")

    service_name: str = "auth"
    port: int = 8001
    api_prefix: str = "/api/auth"

    admin_username: str = "admin"
    admin_password: SecretStr = SecretStr(DEFAULT_ADMIN_PASSWORD)
    signing_key_dir: Path = DEFAULT_SIGNING_KEY_DIR
    """Private signing keys, one PEM file per key id (mode 0600); never in events."""

    access_ttl_s: int = Field(default=900, ge=30, le=900)
    refresh_ttl_s: int = Field(default=14 * 24 * 3600, ge=60)
    enrollment_ttl_s: int = Field(default=3600, ge=60, le=7 * 24 * 3600)

    login_max_failures: int = Field(default=5, ge=1)
    """Failed logins per (username, client address) in one window; a success clears them."""
    login_max_failures_per_address: int = Field(default=20, ge=1)
    """Failed logins per client address in one window, whatever the usernames (spraying)."""
    login_window_s: int = Field(default=900, ge=1)
    register_max_per_address: int = Field(default=10, ge=1)
    """Registrations (each costs an Argon2 hash) per client address in one window."""
    register_window_s: int = Field(default=3600, ge=1)
    trusted_proxies: Annotated[list[str], NoDecode] = ["127.0.0.1"]
    """Addresses and CIDR blocks of the proxies in front of auth (the gateway) whose
    ``X-Real-IP`` (or, without it, ``X-Forwarded-For``) is believed; comma separated or a
    JSON list (``PEERTRAIN_AUTH_TRUSTED_PROXIES=172.30.80.10,10.0.0.0/8``). Throttling
    keys on the client address they name (:class:`~.domain.proxies.TrustedProxies`)."""

    argon2_time_cost: int = Field(default=2, ge=1)
    argon2_memory_kib: int = Field(default=32768, ge=8192)
    argon2_parallelism: int = Field(default=1, ge=1)
    hash_concurrency: int = Field(default=2, ge=1)
    """Password hashes computed at once (each holds ``argon2_memory_kib`` of memory)."""

    signer_cache_s: float = Field(default=30.0, ge=0)
    """How long an instance keeps using the active key it loaded (rotation by another
    instance reaches it within this time; retiring keys stay published that much longer)."""
    max_published_keys: int = Field(default=8, ge=2)
    housekeeping_interval_s: float = Field(default=30.0, gt=0)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _valid_proxies(cls, value: list[str]) -> list[str]:
        TrustedProxies.of(value)  # ValueError names the entry that is not an address
        return value

    @cached_property
    def proxies(self) -> TrustedProxies:
        """:attr:`trusted_proxies`, parsed (once: it is asked on every login)."""
        return TrustedProxies.of(self.trusted_proxies)

    def startup_problems(self) -> list[str]:
        """Why this configuration must not run (empty in development mode).

        The development secrets of :class:`ServiceSettings` in production, and outside
        development the admin password and the signing key directory.
        """
        if self.environment == "development":
            return []
        problems = super().startup_problems()
        password = self.admin_password.get_secret_value()
        if not password or password == DEFAULT_ADMIN_PASSWORD:
            problems.append("PEERTRAIN_AUTH_ADMIN_PASSWORD is empty or the development default")
        elif weak := PasswordPolicy().problems(password, username=self.admin_username):
            problems.append(f"PEERTRAIN_AUTH_ADMIN_PASSWORD is too weak: {'; '.join(weak)}")
        if Path(self.signing_key_dir) == DEFAULT_SIGNING_KEY_DIR:
            problems.append("PEERTRAIN_AUTH_SIGNING_KEY_DIR is the development default")
        return problems
