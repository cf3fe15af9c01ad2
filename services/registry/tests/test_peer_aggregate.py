"""The peer aggregate: folding events, deciding new ones, and the directory's guards."""

from __future__ import annotations

from datetime import UTC, datetime

from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.peers import (
    DeviceSpecs,
    PeerEnrolled,
    PeerSettingsChanged,
    PeerWentOffline,
    PeerWentOnline,
    parse_telemetry_key,
    telemetry_key,
)
from peertrain.registry.directory import Applied, PeerDirectory
from peertrain.registry.domain.peer import (
    PeerRecord,
    apply,
    decide_offline,
    decide_online,
    decide_registered,
    decide_settings,
    decide_specs,
    specs_changed,
)

SPECS = DeviceSpecs(
    os="Linux",
    python_version="3.11",
    cpu_model="x",
    cpu_cores=4,
    cpu_threads=8,
    ram_gb=16,
    disk_free_gb=100,
    peertrain_version="0.1.0",
)


def recorded(data: object, seq: int, peer: str = "p", position: int | None = None) -> RecordedEvent:
    new = NewEvent.of(data, producer="test")  # type: ignore[arg-type]
    return new.stored_as(f"peer:{peer}", seq, position or seq)


def enrolled(peer: str = "p") -> RecordedEvent:
    return recorded(PeerEnrolled(peer_id=peer, owner_id="u", name="box"), 1, peer)


def fold(*events: RecordedEvent) -> PeerRecord:
    record = PeerRecord(peer_id="p")
    for e in events:
        record = apply(record, e)
    return record


def test_registration_is_decided_once_and_only_for_enrolled_peers() -> None:
    assert decide_registered(PeerRecord(peer_id="p")) == []
    record = fold(enrolled())
    [registered] = decide_registered(record)
    record = fold(enrolled(), recorded(registered, 2))
    assert record.registered and record.queue == "peer.p" and record.owner_id == "u"
    assert decide_registered(record) == []


def test_specs_updates_ignore_small_disk_changes() -> None:
    record = fold(enrolled())
    [first] = decide_specs(record, SPECS)
    record = apply(record, recorded(first, 2))
    assert decide_specs(record, SPECS) == []
    assert decide_specs(record, SPECS.model_copy(update={"disk_free_gb": 99.5})) == []
    assert decide_specs(record, SPECS.model_copy(update={"disk_free_gb": 50})) != []
    assert specs_changed(SPECS, SPECS.model_copy(update={"ram_gb": 32}))


def test_online_offline_decisions_follow_the_log() -> None:
    record = fold(enrolled())
    [online] = decide_online(record, 1.0)
    record = apply(record, recorded(online, 2))
    assert record.online and record.interval_s == 1.0
    assert decide_online(record, 1.0) == []
    seen = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    [offline] = decide_offline(record, "left", seen)
    assert isinstance(offline, PeerWentOffline) and offline.reason == "left"
    record = apply(record, recorded(offline, 3))
    assert not record.online and record.offline_reason == "left"
    assert record.last_seen == seen.replace(microsecond=123000)  # BSON precision
    assert decide_offline(record, "missed_heartbeats", seen) == []


def test_settings_are_decided_only_on_change() -> None:
    record = fold(enrolled())
    assert decide_settings(record, shared=False, disabled=None) == []
    [changed] = decide_settings(record, shared=True, disabled=None)
    assert changed == PeerSettingsChanged(peer_id="p", shared=True, disabled=False)


def test_directory_folds_in_order_and_reports_gaps_and_duplicates() -> None:
    d = PeerDirectory()
    assert d.apply(enrolled()) is Applied.APPLIED
    assert d.apply(enrolled()) is Applied.DUPLICATE
    late = recorded(PeerWentOnline(peer_id="p", interval_s=1.0), 3)
    assert d.apply(late) is Applied.GAP
    assert d.apply(late, strict=False) is Applied.APPLIED
    assert d.position == 3
    assert [r.peer_id for r in d.take_dirty()] == ["p"]
    assert d.take_dirty() == []
    assert d.apply(recorded(PeerEnrolled(peer_id="x", owner_id="u", name="n"), 1, "x")) is (
        Applied.APPLIED
    )
    other = PeerDirectory()
    d.replace_with(other)
    assert len(d) == 0 and d.position == 0


def test_telemetry_routing_keys() -> None:
    key = telemetry_key("0193-abc", "heartbeat")
    assert key == "peer.0193-abc.heartbeat"
    assert parse_telemetry_key(key) == ("0193-abc", "heartbeat")
    assert parse_telemetry_key("peer.a.b.heartbeat") is None
    assert parse_telemetry_key("job.x.heartbeat") is None
    assert parse_telemetry_key("peer..heartbeat") is None
