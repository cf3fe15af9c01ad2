"""Heartbeat benchmark: one registry process consuming many simulated peers.

    python benchmarks/heartbeats.py [--peers 25000] [--interval 5] [--duration 30]

Simulated peers are coroutines in this process (not one process each), every one with
its own valid peer access token, heartbeating on ``peertrain.telemetry`` with routing
key ``peer.<id>.heartbeat`` exactly as the runtime does. They are enrolled, registered
and online in a throw-away event log, so the registry (``python -m peertrain.registry``
with that log, started here) sees steady state: no transitions, just heartbeats.

``heartbeats_per_s``: heartbeats the registry accepted per second, over a window of at
least ``--duration`` seconds after a warm-up (from its ``registry_heartbeats_total``).
``liveness_lag_p99_ms``: 99th percentile from a heartbeat's ``sent_at`` to the update
of the registry's liveness table, the in-memory part of its read model that the API
answers from (``registry_heartbeat_lag_seconds``, interpolated in its bucket). The
stored copy of last-seen times is written every few seconds by design.

Also: ``drain_per_s``, how fast the registry works through ``--prefill`` heartbeats
queued before it started (its capacity with no publisher competing for the CPU), and
``cpu_cores_used`` per process and for the whole machine over the window (a busy
machine explains a low rate; cores / rate is the cost of one heartbeat).

Then a second window with ``--junk`` (2,000) invalid-token heartbeats/s on top (forged
signatures on the honest peers' own routing keys, see :class:`Junk`):
``junk_per_s``, ``heartbeats_per_s_under_junk``, ``liveness_lag_p99_ms_under_junk``
(and p50, rejections, CPU, ``went_offline_under_junk``: liveness transitions to offline
during that window, which must stay 0).

Goal on this 2-core machine (shared by RabbitMQ, FerretDB, the registry and these
publishers): 5,000 heartbeats/s (25,000 peers at 5 s) with a p99 lag <= 1,000 ms, with
and without the junk. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psutil
from heartbeat_fleet import (
    PREFILL_TTL_S,
    Fleet,
    Junk,
    forged_token,
    prefill,
    queue_depth,
    seed_log,
    sign_tokens,
)

from peertrain.auth.domain.keys import generate_key
from peertrain.common.ids import new_id
from peertrain.common.settings import ServiceSettings
from peertrain.testkit.common import RABBIT_API, free_port
from peertrain.testkit.registry import registry_process

ROOT = Path(__file__).resolve().parents[1]
AMQP = ServiceSettings().amqp_url.get_secret_value()
MONGO = ServiceSettings().mongo_url
MGMT = RABBIT_API  # this lane's (PEERTRAIN_PORT_OFFSET)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def drain_rate(port: int, count: int) -> float:
    """How fast the registry works through ``count`` queued heartbeats."""
    first: float | None = None
    while True:
        done = scrape(port).get("registry_heartbeats_total", 0.0)
        now = time.monotonic()
        if first is None and done > 0:
            first, first_done = now, done
        if done >= 0.98 * count and first is not None:
            return (done - first_done) / max(now - first, 1e-6)
        await asyncio.sleep(0.2)


# -- reading the registry's metrics ---------------------------------------------------------


def scrape(port: int) -> dict[str, float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"^(registry_\w*)(\{[^}]*\})? ([0-9.e+-]+)$", line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def quantile_ms(
    before: dict[str, float],
    after: dict[str, float],
    q: float = 0.99,
    metric: str = "registry_heartbeat_lag_seconds",
) -> float | None:
    """A quantile of a histogram's growth between two scrapes (interpolated)."""
    buckets: list[tuple[float, float]] = []
    for name, value in after.items():
        m = re.match(rf'{metric}_bucket\{{le="([^"]+)"\}}', name)
        if m:
            le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
            buckets.append((le, value - before.get(name, 0.0)))
    buckets.sort()
    if not buckets or buckets[-1][1] <= 0:
        return None
    target = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= target:
            if le == float("inf"):
                return lower * 1000
            share = (target - below) / (count - below) if count > below else 1.0
            return (lower + (le - lower) * share) * 1000
        lower, below = le, count
    return None


def cleanup(namespace: str, *dbs: str) -> None:
    with httpx.Client(base_url=MGMT, auth=("admin", "admin"), timeout=10) as mgmt:
        r = mgmt.get("/queues/%2F", params={"columns": "name"})
        for q in r.json() if r.status_code == 200 else []:
            if q["name"].startswith(namespace + "."):
                mgmt.delete(f"/queues/%2F/{q['name']}")
    from pymongo import MongoClient

    with MongoClient(MONGO) as client:
        for db in dbs:
            client.drop_database(db)


# -- main ------------------------------------------------------------------------------------


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU seconds used so far by each named process (and its threads)."""
    out: dict[str, float] = {}
    for name, pid in pids.items():
        try:
            times = psutil.Process(pid).cpu_times()
            out[name] = times.user + times.system
        except psutil.Error:
            out[name] = 0.0
    return out


def machine_busy() -> float:
    """CPU seconds the whole machine spent busy so far."""
    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0))


async def window(
    args: argparse.Namespace,
    port: int,
    fleet: Fleet,
    namespace: str,
    pids: dict[str, int],
    junk: Junk | None = None,
) -> dict[str, Any]:
    """Rates, lags and CPU over one window of ``--duration`` seconds."""
    before, t0, sent0 = scrape(port), time.monotonic(), fleet.sent
    junk0 = junk.sent if junk else 0
    cpu0, busy0 = cpu_seconds(pids), machine_busy()
    samples: list[float] = []
    last, last_t = before.get("registry_heartbeats_total", 0.0), t0
    while time.monotonic() - t0 < args.duration:
        await asyncio.sleep(5)
        now = scrape(port)
        total, t = now.get("registry_heartbeats_total", 0.0), time.monotonic()
        samples.append((total - last) / (t - last_t))
        log(
            f"consumed {samples[-1]:,.0f}/s, sent {fleet.sent:,}"
            + (f", junk {junk.sent:,}" if junk else "")
            + f", backlog {queue_depth(namespace + '.heartbeats'):,}"
        )
        last, last_t = total, t
    after, t1, sent1 = scrape(port), time.monotonic(), fleet.sent
    cpu1, busy1 = cpu_seconds(pids), machine_busy()
    window_s = t1 - t0
    accepted = after.get("registry_heartbeats_total", 0.0) - before.get(
        "registry_heartbeats_total", 0.0
    )
    rejected = sum(v for k, v in after.items() if k.startswith("registry_rejected")) - sum(
        v for k, v in before.items() if k.startswith("registry_rejected")
    )
    offline = after.get('registry_liveness_transitions_total{kind="went_offline"}', 0.0) - (
        before.get('registry_liveness_transitions_total{kind="went_offline"}', 0.0)
    )
    lag = quantile_ms(before, after)
    p50 = quantile_ms(before, after, 0.5)
    loop_p99 = quantile_ms(before, after, 0.99, "registry_event_loop_lag_seconds")
    return {
        "heartbeats_per_s": round(accepted / window_s, 1),
        "liveness_lag_p99_ms": round(lag, 1) if lag is not None else None,
        "liveness_lag_p50_ms": round(p50, 1) if p50 is not None else None,
        "event_loop_lag_p99_ms": round(loop_p99, 1) if loop_p99 is not None else None,
        "sent_per_s": round((sent1 - sent0) / window_s, 1),
        "junk_per_s": round(((junk.sent if junk else 0) - junk0) / window_s, 1),
        "min_5s_rate": round(min(samples), 1) if samples else None,
        "window_s": round(window_s, 1),
        "backlog_at_end": queue_depth(namespace + ".heartbeats"),
        "rejected": rejected,
        "went_offline": offline,
        "cpu_cores_used": {k: round((cpu1[k] - cpu0[k]) / window_s, 2) for k in pids}
        | {"machine": round((busy1 - busy0) / window_s, 2)},
    }


async def measure(
    args: argparse.Namespace,
    port: int,
    fleet: Fleet,
    namespace: str,
    pids: dict[str, int],
    junk: Junk,
) -> dict[str, Any]:
    """One window with honest heartbeats only, then one with ``--junk`` per second too."""
    publishing = asyncio.create_task(fleet.run())
    junking: asyncio.Task[None] | None = None
    try:
        await asyncio.sleep(args.warmup)
        clean = await window(args, port, fleet, namespace, pids)
        under: dict[str, Any] = {}
        if junk.rate > 0:
            log(f"junk: {junk.rate:,.0f} invalid-token heartbeats/s from now on")
            junking = asyncio.create_task(junk.run())
            await asyncio.sleep(args.junk_settle)
            under = await window(args, port, fleet, namespace, pids, junk)
    finally:
        fleet.stopping.set()
        junk.stopping.set()
        for task in (publishing, junking):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
    result = {
        **{k: v for k, v in clean.items() if k != "junk_per_s"},
        "peers": args.peers,
        "interval_s": args.interval,
    }
    if under:
        result |= {
            "junk_per_s": under["junk_per_s"],
            "heartbeats_per_s_under_junk": under["heartbeats_per_s"],
            "liveness_lag_p99_ms_under_junk": under["liveness_lag_p99_ms"],
            "liveness_lag_p50_ms_under_junk": under["liveness_lag_p50_ms"],
            "rejected_under_junk": under["rejected"],
            "went_offline_under_junk": under["went_offline"],
            "backlog_at_end_under_junk": under["backlog_at_end"],
            "cpu_cores_used_under_junk": under["cpu_cores_used"],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peers", type=int, default=25_000)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=30.0, help="measured window (s)")
    parser.add_argument(
        "--prefill",
        type=int,
        default=100_000,
        help="heartbeats queued before the registry starts: its drain rate, alone",
    )
    parser.add_argument(
        "--warmup", type=float, default=20.0, help="first sight of every token, then steady"
    )
    parser.add_argument(
        "--junk",
        type=float,
        default=2000.0,
        help="invalid-token heartbeats/s in the second window (0: no second window)",
    )
    parser.add_argument(
        "--junk-settle", type=float, default=5.0, help="junk before its window starts (s)"
    )
    args = parser.parse_args()

    run = uuid.uuid4().hex[:8]
    db, namespace = f"pt_bench_hb_{run}", f"registry.bench{run}"
    peers = [new_id() for _ in range(args.peers)]
    owner = new_id()
    key = generate_key()
    started = time.perf_counter()
    asyncio.run(seed_log(db, peers, owner, args.interval, key))
    log(f"seeded {args.peers:,} peers (3 events each) in {time.perf_counter() - started:.1f}s")
    started = time.perf_counter()
    tokens = sign_tokens(peers, owner, key)
    log(f"signed {len(tokens):,} tokens in {time.perf_counter() - started:.1f}s")

    port = free_port()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-heartbeats-"))
    registry = registry_process(
        mongo_db=db,
        log_dir=log_dir,
        namespace=namespace,
        port=port,
        extra_env={
            "PEERTRAIN_REGISTRY_LOG_LEVEL": "WARNING",
            "PEERTRAIN_REGISTRY_HEARTBEAT_TTL_S": str(PREFILL_TTL_S),
        },
    )
    result: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "peertrain.registry", "replay"],
            env=registry.env,
            capture_output=True,
            text=True,
            check=True,
        )
        replay_s = time.perf_counter() - started
        log(f"replay (read model rebuilt from the log): {replay_s:.1f}s {done.stdout.strip()}")
        if args.prefill:
            asyncio.run(prefill(namespace, peers, tokens, args.prefill))
            log(f"prefilled {args.prefill:,} heartbeats before the registry started")
        started = time.perf_counter()
        registry.start(timeout=300)
        log(f"registry ready in {time.perf_counter() - started:.1f}s on port {port}")
        if args.prefill:
            drain = asyncio.run(drain_rate(port, args.prefill))
            log(f"drained the backlog at {drain:,.0f} heartbeats/s (no publishers running)")
        fleet = Fleet(peers, tokens, args.interval)
        assert registry.proc is not None
        pids = {"registry": registry.proc.pid, "publishers": os.getpid()}
        rabbit = subprocess.run(
            ["bash", str(ROOT / "deploy/local/stack.sh"), "pid", "rabbitmq"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if rabbit.isdigit():
            pids["rabbitmq"] = int(rabbit)
        junk = Junk(peers, forged_token(peers[0], owner, key.kid), args.junk, args.interval)
        result = asyncio.run(measure(args, port, fleet, namespace, pids, junk))
        result["replay_s"] = round(replay_s, 1)
        if args.prefill:
            result["drain_per_s"] = round(drain, 1)
    finally:
        registry.stop()
        log(f"registry log: {registry.log_path}")
        # FerretDB finishes a write whose client died; dropping a database under it can
        # leave a broken file behind, so let in-flight writes land first.
        time.sleep(3)
        cleanup(namespace, db, f"{db}_registry")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
