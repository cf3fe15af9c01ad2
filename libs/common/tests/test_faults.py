"""Telling an outage from a failure that repeats."""

from __future__ import annotations

import pytest
from aiormq.exceptions import AMQPConnectionError
from faststream.exceptions import NackMessage
from prometheus_client import REGISTRY
from pymongo.errors import AutoReconnect, DuplicateKeyError, OperationFailure
from structlog.testing import capture_logs

from peertrain.common.blobs import BlobStoreUnavailable
from peertrain.common.bus.handling import handle_messages
from peertrain.common.eventlog import ConcurrencyError
from peertrain.common.faults import is_transient


def test_dependencies_away_are_transient() -> None:
    ferretdb_without_postgres = OperationFailure(
        "[msg_insert.go:168] failed to connect to `user=postgres database=ferretdb`: "
        "dial tcp 127.0.0.1:54320: connect: connection refused",
        code=1,
    )
    for exc in (
        AutoReconnect("gone"),
        ferretdb_without_postgres,
        ConnectionRefusedError(),
        TimeoutError(),
        AMQPConnectionError("closed"),
        BlobStoreUnavailable("s3 away"),
    ):
        assert is_transient(exc), exc


def test_failures_that_repeat_are_not() -> None:
    for exc in (
        ValueError("bug"),
        KeyError("x"),
        DuplicateKeyError("dup"),
        OperationFailure("unsupported Unicode escape sequence", code=1),
    ):
        assert not is_transient(exc), exc


def test_the_cause_counts() -> None:
    try:
        try:
            raise AutoReconnect("gone")
        except AutoReconnect as inner:
            raise RuntimeError("appending failed") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


async def test_a_message_that_lost_every_retry_to_other_appends_is_logged_as_contention() -> None:
    """A handler that lost each of its retries to other instances' appends fails its
    message (tried again later): contention, said in a line, not a traceback at ERROR."""

    async def contended(_: object) -> None:
        raise ConcurrencyError("job:j1", 35)

    async def broken(_: object) -> None:
        raise ValueError("a bug")

    for handler, level, event in (
        (contended, "warning", "the stream kept moving; the message is tried again"),
        (broken, "error", "handler failed"),
    ):
        with capture_logs() as logs, pytest.raises(Exception):  # noqa: B017 - both kinds
            await handle_messages("q", handler)(None)  # type: ignore[arg-type]
        assert [(e["log_level"], e["event"]) for e in logs] == [(level, event)]
        assert ("exc_info" in logs[0]) is (level == "error")


async def test_a_message_handed_back_to_its_queue_is_counted_not_logged_as_a_failure() -> None:
    """A handler that passes a message on to another instance (``NackMessage``, from
    ``security.PassOn``) made a decision: counted as ``passed_on``, nothing logged."""

    async def elsewhere(_: object) -> None:
        raise NackMessage(requeue=True)

    before = _consumed("passed_on")
    with capture_logs() as logs, pytest.raises(NackMessage):
        await handle_messages("q", elsewhere)(None)  # type: ignore[arg-type]
    assert logs == []
    assert _consumed("passed_on") == before + 1


def _consumed(outcome: str) -> float:
    sample = REGISTRY.get_sample_value(
        "peertrain_events_consumed_total", {"queue": "q", "outcome": outcome}
    )
    return sample or 0.0
