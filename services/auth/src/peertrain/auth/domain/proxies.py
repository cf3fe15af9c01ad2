"""Who the caller is behind the gateway: the client address that throttling keys on.

A request reaches auth through the gateway, which sets ``X-Real-IP`` to the address it
was called from (replacing whatever the client sent) and appends that address to
``X-Forwarded-For``. Proxies in front of the gateway (an ingress controller) are the
gateway's own business: it takes the client's address from them (nginx's realip, as the
Helm chart configures it). Only proxies the operator names are believed (addresses or
CIDR blocks); from anyone else the headers count for nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["TrustedProxies", "parse_address"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_address(value: str | None) -> str | None:
    """``value`` as a normalised IP address, or None when it is not one."""
    if not value:
        return None
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return str(address)


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    """The proxies whose forwarding headers are believed.

    Examples
    --------
    >>> proxies = TrustedProxies.of(["10.0.0.0/8"])
    >>> proxies.client("10.1.2.3", forwarded_for="198.51.100.9, 203.0.113.7", real_ip="203.0.113.7")
    '203.0.113.7'
    >>> proxies.client("10.1.2.3", forwarded_for="198.51.100.9, 203.0.113.7, 10.4.5.6")
    '203.0.113.7'
    >>> proxies.client("203.0.113.7", forwarded_for="198.51.100.9")
    '203.0.113.7'
    """

    networks: tuple[Network, ...]

    @classmethod
    def of(cls, entries: Iterable[str]) -> TrustedProxies:
        """From addresses and CIDR blocks (``"127.0.0.1"``, ``"10.0.0.0/8"``).

        Raises
        ------
        ValueError
            When an entry is neither.
        """
        return cls(tuple(ipaddress.ip_network(e.strip(), strict=False) for e in entries))

    def __contains__(self, address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return any(ip.version == net.version and ip in net for net in self.networks)

    def client(
        self, peer: str | None, *, forwarded_for: str = "", real_ip: str | None = None
    ) -> str:
        """The client's address, for a connection from ``peer`` with these headers.

        The headers count only when ``peer`` is a trusted proxy. Then ``X-Real-IP``, the
        address the gateway itself was called from, is the client: a client may write
        anything into ``X-Forwarded-For``, and one on the gateway's own address (the
        local stack's 127.0.0.1) would pass for a proxy in it. Without ``X-Real-IP``
        (another proxy), the chain ``X-Forwarded-For`` + ``peer`` is walked from the
        right past trusted proxies; the first other hop is the client, the left-most
        when every hop is trusted, and a hop that is not an address ends the walk at
        the trusted proxy right of it (whoever wrote it is not believed).
        """
        address = parse_address(peer)
        if address is None:
            return peer or "unknown"
        if address not in self:
            return address
        if real := parse_address(real_ip):
            return real
        hops = [h for h in forwarded_for.split(",") if h.strip()] if forwarded_for else []
        client = address
        for hop in reversed(hops):
            parsed = parse_address(hop)
            if parsed is None:
                return client
            client = parsed
            if parsed not in self:
                return parsed
        return client
