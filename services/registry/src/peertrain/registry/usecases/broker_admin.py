"""Least privilege on RabbitMQ: one broker user per peer, and the peer's own queue.

The management HTTP API is infrastructure (like MongoDB), not another PeerTrain
service. For peer ``<id>`` the registry makes:

* user ``peer-<id>`` (no tags: no management access) with permissions on vhost ``/``:
  configure nothing, write only the exchange ``peertrain.telemetry``, read only the
  queue ``peer.<id>``;
* topic permissions on ``peertrain.telemetry``: publish only with routing keys
  ``peer.<id>.<kind>``;
* the durable quorum queue ``peer.<id>`` bound to ``peertrain.peers`` with
  ``peer.<id>.#``, dead-lettered like every queue.

Passwords are never stored: :meth:`BrokerAdmin.new_password` sets a fresh random one
each time the peer asks (RabbitMQ keeps only its salted hash).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from faststream.rabbit import RabbitBroker

from peertrain.common.bus import PEERS, TELEMETRY, declare_queue
from peertrain.common.events.peers import peer_binding, peer_queue
from peertrain.registry.domain.errors import BrokerUnavailable

__all__ = ["BrokerAdmin", "PeerGrant", "peer_grant", "peer_username"]


def peer_username(peer_id: str) -> str:
    """The broker user of a peer."""
    return f"peer-{peer_id}"


@dataclass(frozen=True)
class PeerGrant:
    """The permission regexes of one peer's broker user."""

    configure: str
    write: str
    read: str
    topic_exchange: str
    topic_write: str
    topic_read: str


def peer_grant(peer_id: str) -> PeerGrant:
    """What peer ``peer_id`` may do on the broker, as RabbitMQ permission regexes."""
    queue = re.escape(peer_queue(peer_id))
    return PeerGrant(
        configure="^$",
        write=f"^{re.escape(TELEMETRY.name)}$",
        read=f"^{queue}$",
        topic_exchange=TELEMETRY.name,
        topic_write=rf"^peer\.{re.escape(peer_id)}\.[a-z_]+$",
        topic_read="^$",
    )


class BrokerAdmin:
    """Provisions peers on RabbitMQ.

    Parameters
    ----------
    http
        A client for the management API (base URL and admin credentials set).
    broker
        The service's broker connection (queues are declared over AMQP).
    vhost
        The virtual host peers live in.
    delivery_limit
        Delivery limit of the peers' queues.
    password_bytes
        Entropy of generated passwords.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        broker: RabbitBroker,
        *,
        vhost: str = "/",
        delivery_limit: int = 5,
        password_bytes: int = 32,
    ) -> None:
        self.http = http
        self.broker = broker
        self.vhost = vhost
        self.delivery_limit = delivery_limit
        self.password_bytes = password_bytes

    async def _call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        try:
            response = await self.http.request(method, "/api" + path, json=body)
        except httpx.HTTPError as exc:
            raise BrokerUnavailable(f"RabbitMQ management API unreachable: {exc!r}") from exc
        if response.status_code >= 400 and response.status_code != 404:
            raise BrokerUnavailable(
                f"RabbitMQ management API answered {response.status_code} to {method} {path}",
                detail=response.text[:300],
            )
        return response

    def _user(self, peer_id: str) -> str:
        return quote(peer_username(peer_id), safe="")

    async def provision(self, peer_id: str) -> None:
        """Make sure the peer's user, permissions and queue exist (idempotent).

        An existing user keeps its password; a new one has none that works until the
        peer asks for credentials.
        """
        vhost = quote(self.vhost, safe="")
        user = self._user(peer_id)
        if (await self._call("GET", f"/users/{user}")).status_code == 404:
            await self._call("PUT", f"/users/{user}", {"password_hash": "", "tags": ""})
        grant = peer_grant(peer_id)
        await self._call(
            "PUT",
            f"/permissions/{vhost}/{user}",
            {"configure": grant.configure, "write": grant.write, "read": grant.read},
        )
        await self._call(
            "PUT",
            f"/topic-permissions/{vhost}/{user}",
            {
                "exchange": grant.topic_exchange,
                "write": grant.topic_write,
                "read": grant.topic_read,
            },
        )
        await declare_queue(
            self.broker,
            peer_queue(peer_id),
            exchange=PEERS,
            routing_keys=[peer_binding(peer_id)],
            delivery_limit=self.delivery_limit,
        )

    async def new_password(self, peer_id: str) -> str:
        """Give the peer's user a fresh random password and return it."""
        password = secrets.token_urlsafe(self.password_bytes)
        await self._call("PUT", f"/users/{self._user(peer_id)}", {"password": password, "tags": ""})
        return password

    async def deprovision(self, peer_id: str) -> None:
        """Delete the peer's user, then close its open connections (idempotent: a user
        or connection already gone is fine). Its queue stays: it may still hold messages.

        Raises
        ------
        BrokerUnavailable
            If the management API could not do it (the caller retries).
        """
        user = self._user(peer_id)
        await self._call("DELETE", f"/users/{user}")
        await self._call("DELETE", f"/connections/username/{user}")
