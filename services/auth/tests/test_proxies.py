"""Which address throttling keys on: trusted proxies, CIDR blocks, forged headers."""

from __future__ import annotations

import pytest

from peertrain.auth.config import AuthSettings
from peertrain.auth.domain.proxies import TrustedProxies

GATEWAY = "172.30.80.10"
COMPOSE = TrustedProxies.of([GATEWAY])
CLUSTER = TrustedProxies.of(["10.0.0.0/8", "fd00::/8"])


def test_behind_the_gateway_each_client_has_its_own_address() -> None:
    """The gateway appends its caller: two clients, two keys (not the gateway's one)."""
    first = COMPOSE.client(GATEWAY, forwarded_for="203.0.113.7", real_ip="203.0.113.7")
    second = COMPOSE.client(GATEWAY, forwarded_for="198.51.100.2", real_ip="198.51.100.2")
    assert (first, second) == ("203.0.113.7", "198.51.100.2")


def test_a_client_cannot_choose_its_address_through_the_gateway() -> None:
    """The gateway replaces X-Real-IP and appends to what the client wrote in XFF."""
    got = COMPOSE.client(GATEWAY, forwarded_for="10.9.9.9, 203.0.113.7", real_ip="203.0.113.7")
    assert got == "203.0.113.7"


def test_a_client_on_the_gateways_own_address_cannot_choose_one_either() -> None:
    """The local stack: client and gateway both on 127.0.0.1, a trusted address."""
    local = TrustedProxies.of(["127.0.0.1"])
    got = local.client("127.0.0.1", forwarded_for="203.0.113.9, 127.0.0.1", real_ip="127.0.0.1")
    assert got == "127.0.0.1"


def test_an_untrusted_hop_cannot_spoof_forwarding_headers() -> None:
    """Connected straight to auth (a peer container, the host's published port)."""
    for peer in ("172.30.80.11", "203.0.113.7"):
        assert COMPOSE.client(peer, forwarded_for="198.51.100.2", real_ip="198.51.100.2") == peer


def test_without_x_real_ip_a_chain_of_trusted_proxies_is_walked_to_the_first_other_hop() -> None:
    """Proxies that only append to XFF (both in the pod network): the client is left."""
    got = CLUSTER.client("10.1.0.5", forwarded_for="192.0.2.1, 203.0.113.7, 10.2.0.9")
    assert got == "203.0.113.7"
    assert CLUSTER.client("fd00::5", forwarded_for="2001:db8::1") == "2001:db8::1"


def test_when_every_hop_is_trusted_the_left_most_is_the_client() -> None:
    assert CLUSTER.client("10.1.0.5", forwarded_for="10.3.0.1, 10.2.0.9") == "10.3.0.1"


def test_x_real_ip_from_the_gateway_comes_first() -> None:
    assert COMPOSE.client(GATEWAY, real_ip="203.0.113.7") == "203.0.113.7"
    assert COMPOSE.client(GATEWAY, real_ip="not an address") == GATEWAY
    assert COMPOSE.client(GATEWAY, forwarded_for="198.51.100.2", real_ip="10.0.0.1") == ("10.0.0.1")


def test_a_hop_that_is_not_an_address_stops_at_the_trusted_proxy_right_of_it() -> None:
    assert CLUSTER.client("10.1.0.5", forwarded_for="203.0.113.7, garbage, 10.2.0.9") == (
        "10.2.0.9"
    )


def test_ipv4_mapped_addresses_are_their_ipv4_selves() -> None:
    assert COMPOSE.client(f"::ffff:{GATEWAY}", forwarded_for="::ffff:203.0.113.7") == (
        "203.0.113.7"
    )


def test_a_peer_that_is_no_address_is_kept_as_it_is() -> None:
    assert COMPOSE.client("testclient") == "testclient"
    assert COMPOSE.client(None) == "unknown"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("172.30.80.10", ["172.30.80.10"]),
        ("172.30.80.10, 10.0.0.0/8", ["172.30.80.10", "10.0.0.0/8"]),
        ('["127.0.0.1", "10.0.0.0/8"]', ["127.0.0.1", "10.0.0.0/8"]),
    ],
)
def test_the_setting_takes_a_comma_list_or_json(
    raw: str, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEERTRAIN_AUTH_TRUSTED_PROXIES", raw)
    settings = AuthSettings()
    assert settings.trusted_proxies == expected
    assert "10.1.2.3" in settings.proxies or "10.0.0.0/8" not in expected


def test_the_setting_refuses_what_is_not_an_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEERTRAIN_AUTH_TRUSTED_PROXIES", "gateway")
    with pytest.raises(ValueError, match="gateway"):
        AuthSettings()


def test_the_default_trusts_only_the_local_gateway() -> None:
    proxies = AuthSettings.model_fields["trusted_proxies"].default
    assert proxies == ["127.0.0.1"]
