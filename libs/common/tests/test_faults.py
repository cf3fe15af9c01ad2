"""Telling an outage from a failure that repeats."""

from __future__ import annotations

from aiormq.exceptions import AMQPConnectionError
from pymongo.errors import AutoReconnect, DuplicateKeyError, OperationFailure

from peertrain.common.blobs import BlobStoreUnavailable
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
