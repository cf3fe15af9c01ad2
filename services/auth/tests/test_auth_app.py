"""The auth service's application on in-memory ports, handed events through its
subscription table as the platform's audit queue would.

Its stores live in MongoDB (the stack tests cover them); the events here need none of
them, so the stores stand on a database that is never reached.
"""

from __future__ import annotations

from datetime import UTC, datetime
from unittest.mock import MagicMock

import pytest
from prometheus_client import REGISTRY

from peertrain.auth.application import AUDITED, AUTH_SUBSCRIPTIONS, AuthApp
from peertrain.auth.config import AuthSettings
from peertrain.common.app import Ports, deliver
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import MemoryEventLog
from peertrain.common.events import EventData, NewEvent, RecordedEvent
from peertrain.common.events.training import JobCancelled
from peertrain.common.events.users import USER_REGISTERED, UserRegistered
from peertrain.common.security import Security

START = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def app(clock: ManualClock) -> AuthApp:
    log = MemoryEventLog()
    ports = Ports(log=log, clock=clock)
    return AuthApp.build(ports, MagicMock(), AuthSettings(), Security(log))


def recorded(data: EventData, stream: str, seq: int = 1) -> RecordedEvent:
    return NewEvent.of(data, producer="auth", actor="user-1").stored_as(stream, seq, seq)


def seen(event_type: str) -> float:
    return (
        REGISTRY.get_sample_value("peertrain_auth_security_events_total", {"type": event_type})
        or 0.0
    )


async def test_audited_events_are_counted_by_type_and_others_are_not_heard(app: AuthApp) -> None:
    before = seen(USER_REGISTERED)
    registered = recorded(UserRegistered(user_id="user-1", username="ada"), "user:user-1")
    assert await deliver(AUTH_SUBSCRIPTIONS, app, registered) == 1
    assert seen(USER_REGISTERED) == before + 1
    cancelled = recorded(JobCancelled(job_id="job-1", by="user-1"), "job:job-1")
    assert cancelled.type not in AUDITED
    assert await deliver(AUTH_SUBSCRIPTIONS, app, cancelled) == 0


def test_the_services_time_is_its_clock_to_the_millisecond(
    app: AuthApp, clock: ManualClock
) -> None:
    assert app.now() == START.replace(microsecond=123000)
    clock.advance(1.5)
    assert app.now() == datetime(2026, 3, 1, 12, 0, 1, 623000, tzinfo=UTC)
