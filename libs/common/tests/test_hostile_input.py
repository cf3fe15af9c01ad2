"""What peers send is refused at decode when the store cannot hold it or it is not a
number; a failing message never holds a queue; each peer has a budget of its own."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from peertrain.common.bus.failures import (
    HOLD_S,
    OUTAGE_BUDGET_S,
    DeadLetter,
    Failure,
    Outage,
    Retry,
    SetAside,
    decide,
)
from peertrain.common.bus.rate import Bound, SenderBudget
from peertrain.common.bus.redrive import origin
from peertrain.common.events.peers import Announce, Heartbeat, Leaving
from peertrain.common.events.tasks import (
    TaskAcceptedBody,
    TaskFailedBody,
    TaskProgressBody,
    UpdateAnnounced,
)
from peertrain.common.text import has_nul, refuse_nul

REF: dict[str, Any] = {"task_id": "t", "job_id": "j", "round": 1, "attempt": 1, "shard": 0}
SPECS: dict[str, Any] = {
    "os": "linux",
    "python_version": "3.11",
    "cpu_model": "x",
    "cpu_cores": 4,
    "cpu_threads": 8,
    "ram_gb": 16.0,
    "disk_free_gb": 100.0,
    "peertrain_version": "1",
}
UPDATE: dict[str, Any] = {**REF, "key": "k", "sha256": "0" * 64, "size": 1, "samples": 1}
PROGRESS: dict[str, Any] = {
    **REF,
    "epoch": 1,
    "epochs": 1,
    "loss": 0.5,
    "accuracy": 0.5,
    "samples": 1,
    "duration_s": 0.1,
}


# -- NUL -------------------------------------------------------------------------------


def test_a_nul_is_found_however_deep_and_in_keys() -> None:
    assert has_nul("a\x00b") and has_nul(b"\x00")
    assert has_nul({"a": [1, {"b": ("c", "d\x00")}]})
    assert has_nul({"k\x00": 1})
    assert not has_nul({"a": [1, 2.0, None, {"b": "c"}]})
    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    assert has_nul(deep)  # too deep to look at: refused, not recursed into
    with pytest.raises(ValueError, match="NUL"):
        refuse_nul(["\x00"])


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (TaskAcceptedBody, {**REF, "job_id": "x\x00n"}),
        (UpdateAnnounced, {**UPDATE, "key": "a\x00"}),
        (TaskFailedBody, {**REF, "error": "boom", "traceback": "\x00"}),
        (TaskProgressBody, {**PROGRESS, "task_id": "\x00"}),
        (
            Announce,
            {
                "session": "s",
                "seq": 1,
                "sent_at": 1.0,
                "interval_s": 1,
                "specs": {**SPECS, "os": "l\x00"},
            },
        ),
        (Leaving, {"session": "s", "seq": 1, "sent_at": 1.0, "reason": "\x00"}),
        (TaskAcceptedBody, {**REF, "unknown\x00": 1}),  # even a field nobody reads
    ],
)
def test_a_peer_message_holding_a_nul_is_refused_at_decode(model: Any, body: Any) -> None:
    with pytest.raises(ValidationError, match="NUL"):
        model.model_validate_json(json.dumps(body))


# -- numbers ---------------------------------------------------------------------------

EPOCH = {"epoch": 1, "loss": 0.5, "accuracy": 0.5, "samples": 10, "duration_s": 0.1}
"""An earlier epoch of a progress report."""


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (TaskProgressBody, {**PROGRESS, "loss": math.nan}),
        (TaskProgressBody, {**PROGRESS, "accuracy": math.inf}),
        (TaskProgressBody, {**PROGRESS, "duration_s": math.inf}),
        (TaskProgressBody, {**PROGRESS, "duration_s": -1}),
        (TaskProgressBody, {**PROGRESS, "accuracy": 1.5}),
        (TaskProgressBody, {**PROGRESS, "loss": -0.1}),
        (TaskProgressBody, {**PROGRESS, "samples": 2**64}),
        (TaskProgressBody, {**PROGRESS, "earlier": [{**EPOCH, "duration_s": -1}]}),
        (TaskProgressBody, {**PROGRESS, "earlier": [{**EPOCH, "epoch": 0}]}),
        (TaskProgressBody, {**PROGRESS, "earlier": [{**EPOCH, "accuracy": math.inf}]}),
        (TaskProgressBody, {**PROGRESS, "earlier": [EPOCH] * 1001}),
        (UpdateAnnounced, {**UPDATE, "train_loss": -math.inf}),
        (UpdateAnnounced, {**UPDATE, "train_accuracy": math.nan}),
        (UpdateAnnounced, {**UPDATE, "duration_s": math.nan}),
        (UpdateAnnounced, {**UPDATE, "size": 2**63}),
        (TaskAcceptedBody, {**REF, "round": 10**30}),
        (Heartbeat, {"session": "s", "seq": 1, "sent_at": math.nan, "interval_s": 1}),
        (Heartbeat, {"session": "s", "seq": 1, "sent_at": 1.0, "interval_s": math.inf}),
        (Heartbeat, {"session": "s", "seq": 2**64, "sent_at": 1.0, "interval_s": 1}),
        (
            Announce,
            {
                "session": "s",
                "seq": 1,
                "sent_at": 1.0,
                "interval_s": 1,
                "specs": {**SPECS, "ram_gb": math.inf},
            },
        ),
    ],
)
def test_non_finite_or_out_of_range_peer_numbers_are_refused(model: Any, body: Any) -> None:
    wire = json.dumps(body)  # Python writes NaN and Infinity literals, as a hostile peer may
    with pytest.raises(ValidationError):
        model.model_validate_json(wire)


def test_a_peer_building_a_diverged_metric_sends_null_as_before() -> None:
    body = TaskProgressBody(**{**PROGRESS, "loss": math.nan, "accuracy": math.inf})
    assert body.loss is None and body.accuracy is None
    wire = body.model_dump_json()
    assert TaskProgressBody.model_validate_json(wire) == body
    update = UpdateAnnounced(**{**UPDATE, "train_loss": math.inf})
    assert update.train_loss is None


def test_honest_messages_still_parse() -> None:
    assert TaskProgressBody.model_validate_json(json.dumps(PROGRESS)).loss == 0.5
    assert UpdateAnnounced.model_validate_json(json.dumps(UPDATE)).size == 1
    announce = {"session": "s", "seq": 1, "sent_at": 1.0, "interval_s": 1, "specs": SPECS}
    assert Announce.model_validate_json(json.dumps(announce)).specs.ram_gb == 16.0


def test_specs_say_the_runtimes_protocol_and_a_newer_runtimes_extra_fields_are_dropped() -> None:
    """A runtime that names no protocol is from before it was announced (1); fields a
    newer runtime adds are dropped, so it still comes online on this registry."""
    bare = {"session": "s", "seq": 1, "sent_at": 1.0, "interval_s": 1, "specs": SPECS}
    assert Announce.model_validate_json(json.dumps(bare)).specs.protocol == 1
    newer = {**bare, "specs": {**SPECS, "protocol": 7, "npu_count": 2}}
    specs = Announce.model_validate_json(json.dumps(newer)).specs
    assert specs.protocol == 7 and "npu_count" not in specs.model_dump()
    with pytest.raises(ValidationError):  # still bounded
        Announce.model_validate_json(json.dumps({**bare, "specs": {**SPECS, "protocol": 0}}))


# -- failing messages ------------------------------------------------------------------


def _fail(*, transient: bool, deliveries: int = 0, tries: int = 1, held_s: float = 0) -> Failure:
    return Failure(transient, deliveries, tries, held_s)


def test_a_failure_that_repeats_is_set_aside_at_once_never_retried_in_place() -> None:
    outage = Outage()
    for deliveries in range(5):
        decision = decide(
            _fail(transient=False, deliveries=deliveries), outage, delivery_limit=5, now=0
        )
        assert isinstance(decision, SetAside)
    assert isinstance(
        decide(_fail(transient=False, deliveries=5), outage, delivery_limit=5, now=0), DeadLetter
    )
    assert outage.since is None  # no outage for it


def test_an_outage_holds_the_line_and_never_spends_the_last_delivery() -> None:
    outage = Outage()
    first = decide(_fail(transient=True, deliveries=1), outage, delivery_limit=1, now=10.0)
    assert isinstance(first, Retry) and first.delay_s > 0
    later = decide(
        _fail(transient=True, deliveries=1, tries=30, held_s=600), outage, delivery_limit=1, now=610
    )
    assert isinstance(later, Retry) and later.delay_s <= 5.0
    over = decide(
        _fail(transient=True, held_s=OUTAGE_BUDGET_S),
        outage,
        delivery_limit=1,
        now=10 + OUTAGE_BUDGET_S,
    )
    assert isinstance(over, DeadLetter)


def test_a_message_failing_transiently_alone_is_set_aside_once_per_outage() -> None:
    outage = Outage()
    assert isinstance(decide(_fail(transient=True), outage, delivery_limit=5, now=0), Retry)
    probe = decide(
        _fail(transient=True, tries=9, held_s=HOLD_S), outage, delivery_limit=5, now=HOLD_S
    )
    assert isinstance(probe, SetAside)
    # the next message fails too: an outage, held, never set aside again
    nxt = decide(
        _fail(transient=True, tries=9, held_s=2 * HOLD_S), outage, delivery_limit=5, now=2 * HOLD_S
    )
    assert isinstance(nxt, Retry)
    # the next message passed: the outage is over, a new one may probe again
    outage.passed()
    again = decide(
        _fail(transient=True, tries=9, held_s=HOLD_S), outage, delivery_limit=5, now=3 * HOLD_S
    )
    assert isinstance(again, SetAside)


# -- per-sender budget -----------------------------------------------------------------


def test_a_sender_over_its_budget_is_refused_and_the_others_are_not() -> None:
    budget = SenderBudget(Bound(rate=10, burst=20), Bound(rate=1e6, burst=1e6))
    admitted = sum(budget.admit("hostile", 100, now=0.0) for _ in range(1000))
    assert admitted == 20
    assert all(budget.admit(f"honest{i}", 100, now=0.0) for i in range(50))
    assert not budget.admit("hostile", 100, now=0.05)
    assert budget.admit("hostile", 100, now=0.2)  # refills at its rate


def test_bytes_are_budgeted_too_and_memory_is_bounded() -> None:
    budget = SenderBudget(Bound(rate=1000, burst=1000), Bound(rate=100, burst=1000), max_senders=10)
    assert budget.admit("p", 1000, now=0.0)
    assert not budget.admit("p", 1, now=0.0)
    assert budget.admit("p", 100, now=1.0)
    for i in range(100):
        budget.admit(f"s{i}", 1, now=2.0)
    assert len(budget) == 10


# -- redrive ---------------------------------------------------------------------------


def test_redrive_finds_the_first_publish_in_x_death() -> None:
    headers = {
        "x-death": [
            {"queue": "b", "exchange": "peertrain.dlx", "routing-keys": ["b.dlq"], "count": 1},
            {"queue": "a", "exchange": "peertrain.telemetry", "routing-keys": [b"peer.p.update"]},
        ]
    }
    assert origin(headers, "a") == ("peertrain.telemetry", "peer.p.update")
    assert origin({}, "a") == ("", "a")
    assert origin({"x-death": "junk"}, "a") == ("", "a")
