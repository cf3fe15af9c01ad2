"""Prometheus metrics shared by every service, and helpers to expose them.

Label values stay bounded: services, event types, queue names and outcomes only;
never ids of users, peers, jobs or events.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "APPEND_CONFLICTS",
    "DEAD_LETTERED",
    "EVENTS_APPENDED",
    "EVENTS_CONSUMED",
    "EVENTS_PUBLISHED",
    "HTTP_REQUESTS",
    "HTTP_REQUEST_DURATION",
    "OUTBOX_LAG",
    "OUTBOX_PENDING",
    "OUTBOX_UNROUTABLE",
    "OUTBOX_UNROUTED",
    "POSITION_CLAIMS_LOST",
    "REFUSED_MESSAGES",
]

EVENTS_APPENDED = Counter(
    "peertrain_events_appended_total", "Events appended to the log", ["producer"]
)
APPEND_CONFLICTS = Counter(
    "peertrain_append_conflicts_total",
    "Appends refused because another writer had moved the stream (the caller reads on "
    "and decides again)",
    ["producer"],
)
POSITION_CLAIMS_LOST = Counter(
    "peertrain_position_claims_lost_total",
    "Global log positions another process claimed first (the claimer looks further up)",
)
EVENTS_PUBLISHED = Counter(
    "peertrain_events_published_total", "Events confirmed by the broker", ["producer"]
)
OUTBOX_UNROUTABLE = Counter(
    "peertrain_outbox_unroutable_total",
    "Publishes returned as unroutable or not confirmed (the events stay in the outbox)",
    ["producer"],
)
OUTBOX_UNROUTED = Counter(
    "peertrain_outbox_unrouted_total",
    "Events that stayed unroutable for the relay's grace period: kept in the log only",
    ["producer"],
)
OUTBOX_PENDING = Gauge(
    "peertrain_outbox_pending",
    "Events waiting in the outbox after the last relay pass",
    ["producer"],
)
OUTBOX_LAG = Histogram(
    "peertrain_outbox_lag_seconds",
    "Time from append to broker confirmation",
    ["producer"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
EVENTS_CONSUMED = Counter(
    "peertrain_events_consumed_total",
    "Events handled by a subscriber, by outcome (applied, duplicate, failed, rejected, passed_on)",
    ["queue", "outcome"],
)
DEAD_LETTERED = Counter(
    "peertrain_events_rejected_total",
    "Messages rejected without requeue (they go to the queue's dead-letter queue)",
    ["queue"],
)
REFUSED_MESSAGES = Counter(
    "peertrain_peer_messages_refused_total",
    "Peer messages refused (dropped) by reason: malformed_key, bad_token, bad_body, ...",
    ["queue", "reason"],
)
HTTP_REQUESTS = Counter(
    "peertrain_http_requests_total", "HTTP requests", ["service", "method", "route", "status"]
)
HTTP_REQUEST_DURATION = Histogram(
    "peertrain_http_request_duration_seconds",
    "HTTP request latency",
    ["service", "method", "route"],
)
