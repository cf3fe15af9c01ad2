"""The runtime's HTTP calls, all through the gateway: enroll, log in, broker access."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from .errors import ApiError
from .identity import BrokerAccess

__all__ = ["ApiError", "IssuedToken", "PeerApi"]


@dataclass(frozen=True)
class IssuedToken:
    """An access token and how long it lives."""

    access_token: str
    expires_in: int


def _raise_for(response: httpx.Response, what: str) -> Any:
    if response.status_code >= 400:
        try:
            message = response.json()["error"]["message"]
        except Exception:
            message = response.text[:200]
        raise ApiError(f"{what}: {response.status_code} {message}", status=response.status_code)
    return response.json()


class PeerApi:
    """Calls to ``{api}/api/auth/...`` and ``{api}/api/registry/...``.

    Parameters
    ----------
    api
        The gateway's base URL, e.g. ``http://127.0.0.1:8080``.
    """

    def __init__(self, api: str, *, timeout_s: float = 15.0) -> None:
        self.api = api.rstrip("/")
        self.timeout_s = timeout_s

    async def _post(self, path: str, what: str, **kwargs: Any) -> Any:
        try:
            async with httpx.AsyncClient(base_url=self.api, timeout=self.timeout_s) as client:
                response = await client.post(path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(f"{what}: cannot reach {self.api}: {exc!r}") from exc
        return _raise_for(response, what)

    async def enroll(self, enrollment_token: str, name: str) -> dict[str, Any]:
        """Redeem an enrollment token: ``peer_id``, ``peer_secret``, ``owner_id``, ``name``."""
        body = {"enrollment_token": enrollment_token, "name": name}
        data: dict[str, Any] = await self._post("/api/auth/peers/enroll", "enrollment", json=body)
        return data

    async def token(self, peer_id: str, peer_secret: str) -> IssuedToken:
        """Log in: a peer access token."""
        body = {"peer_id": peer_id, "peer_secret": peer_secret}
        data = await self._post("/api/auth/peers/token", "login", json=body)
        return IssuedToken(str(data["access_token"]), int(data["expires_in"]))

    async def broker_credentials(self, peer_id: str, access_token: str) -> BrokerAccess:
        """This peer's broker user, with a new password."""
        data = await self._post(
            f"/api/registry/peers/{peer_id}/broker-credentials",
            "broker credentials",
            headers={"Authorization": f"Bearer {access_token}"},
        )
        return BrokerAccess.model_validate(data)

    async def whoami(self, peer_id: str, access_token: str) -> dict[str, Any]:
        """The registry's record of this peer."""
        try:
            async with httpx.AsyncClient(base_url=self.api, timeout=self.timeout_s) as client:
                response = await client.get(
                    f"/api/registry/peers/{peer_id}",
                    headers={"Authorization": f"Bearer {access_token}"},
                )
        except httpx.HTTPError as exc:
            raise ApiError(f"registry: cannot reach {self.api}: {exc!r}") from exc
        data: dict[str, Any] = _raise_for(response, "registry")
        return data
