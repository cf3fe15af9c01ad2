"""One-time secrets are used once, however many requests race for them.

FerretDB 1.x runs a conditional update as a query, then a write: of 20 concurrent
``update_one({_id, current: old})`` on one document, up to 9 reported a modification
here. Refresh-token rotation and enrollment-token redemption now claim the secret with
a unique insert first. The use cases run in process, on the real database, with many
calls at once on one connection pool, so that the store sees them interleave.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from peertrain.auth.application import AuthApp
from peertrain.auth.config import AuthSettings
from peertrain.auth.domain.errors import InvalidEnrollmentToken, InvalidRefreshToken
from peertrain.auth.domain.hashing import Argon2Params, PasswordHasher
from peertrain.auth.domain.passwords import PasswordPolicy
from peertrain.auth.store import KeyStore, PeerStore, SessionStore, ThrottleStore, UserStore
from peertrain.auth.usecases import accounts, peers, sessions
from peertrain.auth.usecases import keys as key_cases
from peertrain.common.app import Ports
from peertrain.common.eventlog import EventLog
from peertrain.common.security import ROLE_USER, Principal, Security

RACERS = 20
TRIALS = 4


@pytest.fixture
async def auth(mongo: Any, run_id: str, tmp_path: Path) -> AsyncIterator[AuthApp]:
    db = mongo[f"pt_authclaims_{run_id}_{uuid.uuid4().hex[:6]}"]
    log = EventLog(db)
    await log.ensure_indexes()
    context = AuthApp(
        ports=Ports(log=log),
        settings=AuthSettings(signing_key_dir=tmp_path),
        security=Security(log),
        users=UserStore(db),
        sessions=SessionStore(db),
        throttle=ThrottleStore(db),
        keys=KeyStore(db, tmp_path, cache_s=0),
        peers=PeerStore(db),
        hasher=PasswordHasher(Argon2Params(time_cost=1, memory_kib=8192)),
        policy=PasswordPolicy(frozenset()),
        hash_slots=asyncio.Semaphore(1),
    )
    await context.ensure_indexes()
    await key_cases.ensure_keys(context)
    yield context
    await mongo.drop_database(db.name)


async def _user(auth: AuthApp) -> Any:
    name = f"u{uuid.uuid4().hex[:12]}"
    return await accounts.register(auth, name, f"pass {uuid.uuid4().hex}", address="127.0.0.9")


async def test_concurrent_refreshes_with_one_token_rotate_it_once(auth: AuthApp) -> None:
    user = await _user(auth)
    for _ in range(TRIALS):
        issued = await sessions.start_session(auth, user)
        token = issued.refresh_token
        assert token is not None
        answers = await asyncio.gather(
            *(sessions.refresh(auth, token) for _ in range(RACERS)), return_exceptions=True
        )
        rotated = [a for a in answers if not isinstance(a, BaseException)]
        refused = [a for a in answers if isinstance(a, InvalidRefreshToken)]
        assert len(rotated) == 1 and len(refused) == RACERS - 1, answers


async def test_concurrent_enrollments_with_one_token_make_one_peer(auth: AuthApp) -> None:
    user = await _user(auth)
    owner = Principal(user.id, frozenset({ROLE_USER}), "jti", 0, 0, username=user.username)
    for trial in range(TRIALS):
        _, token = await peers.create_enrollment(auth, owner)
        answers = await asyncio.gather(
            *(peers.enroll(auth, token, f"racer-{trial}") for _ in range(RACERS)),
            return_exceptions=True,
        )
        enrolled = [a for a in answers if not isinstance(a, BaseException)]
        refused = [a for a in answers if isinstance(a, InvalidEnrollmentToken)]
        assert len(enrolled) == 1 and len(refused) == RACERS - 1, answers
    assert len(await auth.peers.list_peers(user.id, limit=100)) == TRIALS
