"""A verifier's security state against its own log: a key set comes from the log, never
from a bus message alone; a removed peer is refused at once (the log in memory)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from jose import jwk, jwt

from peertrain.auth.domain.keys import NewKey, generate_key
from peertrain.auth.domain.tokens import access_claims
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.auth import AUTH_KEYS_STREAM, KeysRotated
from peertrain.common.events.peers import PeerRemoved, peer_stream
from peertrain.common.events.users import UserDisabled
from peertrain.common.security import (
    ACCESS_TOKEN_TYPE,
    DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
    InvalidToken,
    Security,
    SecuritySettings,
    UnknownSigningKey,
)


class Log(MemoryEventLog):
    """The in-memory event log, with a count of the stream reads :class:`Security` makes."""

    stream_reads = 0

    async def read_stream(self, stream: str, *, after_seq: int = 0) -> list[RecordedEvent]:
        self.stream_reads += 1
        return await super().read_stream(stream, after_seq=after_seq)


async def add(log: MemoryEventLog, stream: str, data: EventData) -> RecordedEvent:
    """Append ``data`` at the end of ``stream`` (as auth or the registry would)."""
    new = NewEvent.of(data, producer="auth")
    return (await log.append(stream, [new], expected_version=await log.stream_version(stream)))[0]


def rotated(*keys: NewKey) -> KeysRotated:
    return KeysRotated(keys=tuple(k.jwk for k in keys), active_kid=keys[0].kid)


def foreign(seq: int, *keys: NewKey) -> RecordedEvent:
    """A key set of another log (a test's auth on the same broker), at ``seq``."""
    return NewEvent.of(rotated(*keys), producer="auth").stored_as(AUTH_KEYS_STREAM, seq, 10**6)


def token(key: NewKey, subject: str = "user-1", **claims: Any) -> str:
    roles = claims.pop("roles", ("user",))
    body = access_claims(
        subject=subject,
        roles=roles,
        issuer=DEFAULT_ISSUER,
        audience=DEFAULT_AUDIENCE,
        now=int(time.time()),
        ttl_s=900,
        **claims,
    )
    head = {"kid": key.kid, "typ": ACCESS_TOKEN_TYPE}
    return str(jwt.encode(body, jwk.construct(key.private_pem, "RS256"), "RS256", headers=head))


@pytest.fixture(scope="module")
def keys() -> list[NewKey]:
    return [generate_key() for _ in range(5)]


async def started(log: Log, **settings: Any) -> Security:
    security = Security(log, SecuritySettings(**settings))
    await security.refresh()
    return security


async def test_a_foreign_key_set_on_the_bus_never_replaces_the_logs(keys: list[NewKey]) -> None:
    log = Log()
    await add(log, AUTH_KEYS_STREAM, rotated(keys[0]))
    security = await started(log)
    signed = token(keys[0])
    assert security.verify(signed).subject == "user-1"
    # Another auth's set, next in seq: what the old handler installed as it came.
    await security.on_event(foreign(2, *keys[1:5]))
    assert security.keys.kids == {keys[0].kid} and security.keys.version == 1
    assert (await security.authenticate(signed)).subject == "user-1"
    # The log's own next set still comes in from its event.
    real = await add(log, AUTH_KEYS_STREAM, rotated(keys[1], keys[0]))
    await security.on_event(real)
    assert security.keys.kids == {keys[0].kid, keys[1].kid} and security.keys.version == 2
    assert (await security.authenticate(token(keys[1]))).subject == "user-1"


async def test_an_unknown_kid_rereads_every_key_set_and_repairs_a_wrong_one(
    keys: list[NewKey],
) -> None:
    log = Log()
    await add(log, AUTH_KEYS_STREAM, rotated(keys[0]))
    security = await started(log, min_refresh_interval_s=0)
    security.keys.replace([k.jwk.model_dump() for k in keys[1:5]], version=7)  # gone wrong
    signed = token(keys[0])
    with pytest.raises(UnknownSigningKey):
        security.verify(signed)
    assert (await security.authenticate(signed)).subject == "user-1"  # re-read, repaired
    assert security.keys.kids == {keys[0].kid} and security.keys.version == 1


async def test_an_unknown_kid_rereads_at_most_once_per_interval(keys: list[NewKey]) -> None:
    log = Log()
    await add(log, AUTH_KEYS_STREAM, rotated(keys[0]))
    security = await started(log, min_refresh_interval_s=3600)
    reads = log.stream_reads
    for _ in range(20):
        with pytest.raises(InvalidToken):
            await security.authenticate(token(keys[3]))
    assert log.stream_reads == reads  # refreshed at start: forged kids cost no read


async def test_a_duplicate_or_older_key_set_message_costs_no_read(keys: list[NewKey]) -> None:
    log = Log()
    first = await add(log, AUTH_KEYS_STREAM, rotated(keys[0]))
    await add(log, AUTH_KEYS_STREAM, rotated(keys[1], keys[0]))
    security = await started(log)
    reads = log.stream_reads
    await security.on_event(first)
    await security.on_event(foreign(2, keys[4]))
    assert log.stream_reads == reads and security.keys.version == 2


async def test_a_removed_peer_is_refused_at_once_and_after_a_restart(keys: list[NewKey]) -> None:
    log = Log()
    await add(log, AUTH_KEYS_STREAM, rotated(keys[0]))
    security = await started(log)
    peer = token(keys[0], subject="peer-1", roles=("peer",), owner="user-1")
    other = token(keys[0], subject="peer-2", roles=("peer",), owner="user-1")
    assert security.verify(peer).subject == "peer-1"
    removed = await add(log, peer_stream("peer-1"), PeerRemoved(peer_id="peer-1"))
    await security.on_event(removed)
    with pytest.raises(InvalidToken):
        security.verify(peer)
    assert security.verify(other).subject == "peer-2"
    assert security.verify(token(keys[0], subject="peer-1")).subject == "peer-1"  # a user
    restarted = await started(log)  # from the log alone
    with pytest.raises(InvalidToken):
        restarted.verify(peer)
    assert restarted.verify(other).subject == "peer-2"


async def test_a_disabled_user_refuses_their_peers_too(keys: list[NewKey]) -> None:
    log = Log()
    await add(log, AUTH_KEYS_STREAM, rotated(keys[0]))
    security = await started(log)
    await add(log, "user:user-1", UserDisabled(user_id="user-1"))
    await security.refresh()
    with pytest.raises(InvalidToken):
        security.verify(token(keys[0], subject="peer-1", roles=("peer",), owner="user-1"))
