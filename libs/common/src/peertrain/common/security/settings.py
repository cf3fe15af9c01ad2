"""Token settings shared by the issuer (auth) and every verifier (all services)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .claims import DEFAULT_AUDIENCE, DEFAULT_ISSUER

__all__ = ["SecuritySettings"]


class SecuritySettings(BaseSettings):
    """``PEERTRAIN_JWT_*``: the same variables for every service, so all agree.

    Attributes
    ----------
    issuer, audience
        The ``iss`` auth writes and every service requires; likewise ``aud``.
    leeway_s
        Clock skew tolerated on ``exp`` and ``iat``.
    refresh_interval_s
        How often the key set and the disabled users are re-read from the log as a
        safety net (events normally update them at once).
    min_refresh_interval_s
        A token with an unknown ``kid`` triggers a re-read of the log, at most this
        often (forged kids must not turn into a database load).
    """

    model_config = SettingsConfigDict(env_prefix="PEERTRAIN_JWT_", extra="ignore")

    issuer: str = DEFAULT_ISSUER
    audience: str = DEFAULT_AUDIENCE
    leeway_s: int = Field(default=30, ge=0, le=300)
    refresh_interval_s: float = Field(default=60.0, gt=0)
    min_refresh_interval_s: float = Field(default=2.0, ge=0)
