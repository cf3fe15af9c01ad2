"""The registry's Prometheus metrics (labels stay bounded: never peer ids)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "CATCH_UP_WAIT",
    "HEARTBEATS",
    "HEARTBEAT_FLOODS",
    "HEARTBEAT_LAG",
    "LIVENESS_PAUSED",
    "LOOP_LAG",
    "PEERS",
    "REJECTED_HEARTBEATS",
    "REJECTED_TELEMETRY",
    "REVOCATIONS",
    "TELEMETRY_CONNECTED",
    "TRANSITIONS",
]

HEARTBEATS = Counter("registry_heartbeats_total", "Heartbeats accepted")
REJECTED_HEARTBEATS = Counter(
    "registry_rejected_heartbeats_total",
    "Heartbeats refused (bad or missing token, token of another peer, malformed, over the"
    " peer's rate, unknown tokens over the key's verification budget, removed peer)",
    ["reason"],
)
REJECTED_TELEMETRY = Counter(
    "registry_rejected_telemetry_total",
    "Announce and leaving messages refused (dropped, never dead-lettered)",
    ["reason"],
)
HEARTBEAT_LAG = Histogram(
    "registry_heartbeat_lag_seconds",
    "From a heartbeat's sent_at (peer clock) to the registry's liveness table update",
    buckets=(
        0.001,
        0.0025,
        0.005,
        0.01,
        0.025,
        0.05,
        0.075,
        0.1,
        0.15,
        0.2,
        0.3,
        0.4,
        0.5,
        0.75,
        1.0,
        1.5,
        2.0,
        3.0,
        5.0,
        10.0,
        30.0,
    ),
)
TRANSITIONS = Counter(
    "registry_liveness_transitions_total", "Liveness transitions appended", ["kind"]
)
PEERS = Gauge("registry_peers", "Peers by status", ["status"])
LOOP_LAG = Histogram(
    "registry_event_loop_lag_seconds",
    "How late the sweeper woke up (the event loop was busy, or the process starved)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
CATCH_UP_WAIT = Histogram(
    "registry_catch_up_wait_seconds",
    "Before declaring a peer offline, how long the sweeper waited for the heartbeat"
    " queue to catch up (a backlog, such as a flood of junk, ahead of honest heartbeats)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
LIVENESS_PAUSED = Gauge(
    "registry_liveness_paused",
    "1 while liveness is paused: the heartbeat consumer is disconnected (nobody is"
    " declared offline meanwhile, nor for a grace after it is back)",
)
HEARTBEAT_FLOODS = Counter(
    "registry_heartbeat_floods_total",
    "Floods of refused heartbeats on one peer's key (that peer alone is not judged for"
    " silence while its key floods)",
)
TELEMETRY_CONNECTED = Gauge(
    "registry_telemetry_connected", "1 while the heartbeat consumer is connected"
)
REVOCATIONS = Counter(
    "registry_broker_revocations_total",
    "Deletions of a peer's broker user (removed peer, disabled owner), by outcome",
    ["outcome"],
)
