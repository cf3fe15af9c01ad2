"""Chaos: several jobs run while a seeded schedule kills, stops and hangs the platform.

:func:`run_chaos` runs the whole experiment on a platform from
:func:`training_support.run_platform` (two orchestrators and two aggregators, the
peers' broker link through a :class:`HangingProxy`):

1. the job undisturbed, in :mod:`peertrain.sim` (the platform's weights bit for bit);
2. ``jobs`` jobs at once, each on peers of its own, while faults drawn from ``seed``
   (:mod:`chaos_schedule`) hit RabbitMQ, PostgreSQL, FerretDB, MinIO, the gateway,
   every service instance, the peers (SIGKILL or SIGTERM, then started again) and the
   peers' broker link (hung);
3. once every job has ended (or ``timeout_s``), everything is started again and the
   invariants are checked (:func:`violations`).

Every job runs with ``min_peers`` equal to its peer count, so each round aggregates every
shard, trained with the shard's own seed by whichever peer took it: a job that survives
its faults should end with the undisturbed job's weights (``bit_identical_jobs``); the
invariant asked for is the accuracy within one point.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import torch
from chaos_schedule import Fault, Target, digest, schedule
from contract_specs import HOLDOUT_FRACTION, LABEL_COLUMN, digits_csv
from hanging_proxy import ThreadedProxy
from training_support import (
    Platform,
    dataset,
    final_weights,
    job_events,
    peers_active,
    points_apart,
    run_platform,
    same_weights,
    start_peer,
)

from peertrain import sim
from peertrain.testkit.common import RABBIT_API

__all__ = [
    "ChaosReport",
    "chaos_platform",
    "digits_data",
    "job_body",
    "run_chaos",
    "targets",
    "violations",
]

ROOT = Path(__file__).resolve().parents[3]
STACK = ROOT / "deploy" / "local" / "stack.sh"
STACK_TARGETS = ("rabbitmq", "postgres", "ferretdb", "minio", "gateway")
LINK = "peer-amqp"
ENDED = ("completed", "failed", "cancelled")


@dataclass
class ChaosReport:
    """What a run did and found (``summary()`` is the JSON line ``make chaos`` prints)."""

    seed: int
    jobs: int
    jobs_completed: int = 0
    faults: list[Fault] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    accuracies: dict[str, float | None] = field(default_factory=dict)
    reference_accuracy: float | None = None
    identical: int = 0
    """Jobs whose final weights are the undisturbed simulation's, bit for bit."""

    def summary(self) -> dict[str, Any]:
        """The figures of the run, named as ``make chaos`` prints them."""
        return {
            "seed": self.seed,
            "jobs": self.jobs,
            "jobs_completed": self.jobs_completed,
            "faults_injected": len(self.faults),
            "invariant_violations": len(self.violations),
            "wall_s": round(self.wall_s, 1),
            "faults_digest": digest(self.faults),
            "reference_accuracy": self.reference_accuracy,
            "bit_identical_jobs": self.identical,
        }


def chaos_platform(run_id: str, temp: Any, link: ThreadedProxy) -> Iterator[Platform]:
    """The training platform with two orchestrators and two aggregators, whose registry
    sends peers to RabbitMQ through ``link``."""
    yield from run_platform(
        run_id,
        temp,
        instances=2,
        registry_env={"PEERTRAIN_REGISTRY_PEER_AMQP_URL": f"amqp://127.0.0.1:{link.port}/"},
    )


def digits_data() -> tuple[str, str, bytes]:
    """The anchor task's data (scikit-learn's digits): name, file name, CSV bytes."""
    return "chaos-digits", "digits.csv", digits_csv()


def job_body(dataset_id: str, peers: list[str], rounds: int) -> dict[str, Any]:
    """The anchor task (MLP 64-128-10), one seed; every round needs every shard."""
    return {
        "name": "chaos",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": {"arch": "mlp", "hidden": [128]},
        "training": {
            "rounds": rounds,
            "local_epochs": 1,
            "batch_size": 32,
            "lr": 0.05,
            "optimizer": "sgd",
            "momentum": 0.0,
            "seed": 3,
        },
        "aggregation": {
            "strategy": "fedavg",
            "min_peers": len(peers),
            "round_deadline_s": 120,
        },
        "sharding": {"strategy": "iid"},
    }


def undisturbed(body: dict[str, Any], dataset_id: str, peers: int) -> sim.SimResult:
    """The same job in :mod:`peertrain.sim` on one torch thread, as the test peers train:
    the platform's weights bit for bit when nothing is lost (tests/stack/training/
    test_contract.py), so the reference costs seconds, not a platform job."""
    threads = torch.get_num_threads()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "digits.csv"
            path.write_bytes(digits_csv())
            data = sim.load_data(
                path,
                label_column=LABEL_COLUMN,
                holdout_fraction=HOLDOUT_FRACTION,
                dataset_id=dataset_id,
            )
            return sim.run(body, data, peers=peers, device="cpu", threads=1)
    finally:
        torch.set_num_threads(threads)


def targets(platform: Platform, peer_names: list[str]) -> list[Target]:
    """Everything the schedule may hit on this platform, in a fixed order."""
    return [
        *(Target(name, "stack") for name in STACK_TARGETS),
        *(Target(name, "service") for name in sorted(platform.services)),
        *(Target(name, "peer") for name in peer_names),
        Target(LINK, "link"),
    ]


def say(line: str) -> None:
    """Progress on stderr (pytest -s, make chaos)."""
    print(f"[chaos {time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def _stack(action: str, name: str) -> None:
    done = subprocess.run(
        ["bash", str(STACK), action, name], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"stack.sh {action} {name}: {done.stdout}\n{done.stderr}")


class Injector:
    """Carries faults out and undoes them (blocking calls run in threads)."""

    def __init__(self, platform: Platform, proxy: ThreadedProxy) -> None:
        self.platform = platform
        self.proxy = proxy
        self.errors: list[str] = []
        self._locks: dict[str, asyncio.Lock] = {}

    async def hit(self, fault: Fault) -> None:
        """Disturb the fault's target, wait out its down time, bring it back.

        A target still coming back from its previous fault (a restart can take longer
        than the schedule planned) is hit once it is back, not while it starts."""
        async with self._locks.setdefault(fault.target, asyncio.Lock()):
            say(f"fault {fault.index}: {fault.action} {fault.target} for {fault.down_s} s")
            try:
                await asyncio.to_thread(self._down, fault)
                await asyncio.sleep(fault.down_s)
            finally:
                await self._back(fault)

    async def _back(self, fault: Fault, *, give_up_s: float = 600) -> None:
        """Start the target again, retrying: a store may need another that is still away
        (FerretDB needs PostgreSQL)."""
        deadline = time.monotonic() + give_up_s
        while True:
            try:
                await asyncio.to_thread(self._up, fault)
                say(f"fault {fault.index}: {fault.target} back")
                return
            except Exception as exc:
                say(f"fault {fault.index}: {fault.target} not back yet: {str(exc)[-300:]}")
                if time.monotonic() > deadline:
                    self.errors.append(f"fault {fault.index}: {fault.target} never came back")
                    return
                await asyncio.sleep(2)

    def _down(self, fault: Fault) -> None:
        kind, name, action = fault.kind, fault.target, fault.action
        if kind == "stack":
            _stack("kill" if action == "kill" else "stop", name)
        elif kind == "service":
            service = self.platform.services[name]
            service.kill() if action == "kill" else service.stop()
        elif kind == "peer":
            peer = self.platform.peers[name]
            peer.kill() if action == "kill" else peer.stop()
        else:
            self.proxy.hang()

    def _up(self, fault: Fault) -> None:
        kind, name = fault.kind, fault.target
        if kind == "stack":
            _stack("start", name)
        elif kind == "service":
            self.platform.services[name].start(timeout=180)
        elif kind == "peer":
            start_peer(self.platform.peers[name], mode=None, env=None, threads=1)
        else:
            self.proxy.release()


async def _poll(url: str, platform: Platform) -> dict[str, Any] | None:
    """GET through the gateway, ``None`` while the platform cannot answer."""
    try:
        async with platform.client() as http:
            r = await http.get(url)
    except Exception:  # the gateway, auth or the store is away: ask again later
        return None
    return r.json() if r.status_code == 200 else None


async def _ended(platform: Platform, job_ids: list[str], timeout_s: float) -> dict[str, Any]:
    """Each job's view once it has ended (or as last seen when ``timeout_s`` ran out)."""
    deadline = time.monotonic() + timeout_s
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        for job_id in job_ids:
            if seen.get(job_id, {}).get("state") in ENDED:
                continue
            body = await _poll(f"/api/jobs/{job_id}", platform)
            if body is not None:
                seen[job_id] = body
        if all(seen.get(j, {}).get("state") in ENDED for j in job_ids):
            break
        await asyncio.sleep(2)
    return seen


def violations(job_id: str, job: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """What in one job's view and lineage breaks the invariants (empty: none)."""
    found: list[str] = []
    tag = f"job {job_id[-8:]}"
    if job.get("state") != "completed":
        found.append(f"{tag}: ended {job.get('state')!r}: {job.get('error')}")
    ids = Counter(e["id"] for e in events)
    found += [f"{tag}: event {i} twice in the log" for i, n in ids.items() if n > 1]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_type.setdefault(e["type"], []).append(e["data"])

    def once(kind: str, key: Any) -> None:
        counts = Counter(key(d) for d in by_type.get(kind, []))
        found.extend(f"{tag}: {kind} {k} {n} times" for k, n in counts.items() if n > 1)

    once("update.accepted", lambda d: d["task_id"])
    once("round.opened", lambda d: (d["round"], d["attempt"]))
    once("round.closed", lambda d: d["round"])
    once("model.version_created", lambda d: d["version"])
    once("model.evaluated", lambda d: d["version"])
    terminal = [e for e in events if e["type"] in ("job.completed", "job.failed", "job.cancelled")]
    if len(terminal) > 1:
        found.append(f"{tag}: {len(terminal)} terminal events")
    # every accepted update of a closed round attempt is folded into that round's version,
    # once; none of another attempt is
    closed = {(d["round"], d["attempt"]): d for d in by_type.get("round.closed", [])}
    versions = {d["version"] for d in by_type.get("model.version_created", [])}
    included = Counter(inc["task_id"] for d in closed.values() for inc in d["included"])
    found += [f"{tag}: update {t} folded {n} times" for t, n in included.items() if n > 1]
    for d in by_type.get("update.accepted", []):
        close = closed.get((d["round"], d["attempt"]))
        if close is None:
            continue  # its attempt failed, or it came after the close: never aggregated
        if not any(inc["task_id"] == d["task_id"] for inc in close["included"]):
            found.append(f"{tag}: accepted update {d['task_id']} left out of round {d['round']}")
    found += [f"{tag}: round {r} closed, no version {r}" for r, _ in closed if r not in versions]
    return found


async def run_chaos(
    platform: Platform,
    *,
    seed: int,
    jobs: int,
    peers_per_job: int,
    rounds: int,
    proxy: ThreadedProxy,
    job_body: Any,
    data: tuple[str, str, bytes],
    timeout_s: float = 1800,
    max_gap_s: float = 10.0,
) -> ChaosReport:
    """The experiment (see the module's docstring)."""
    report = ChaosReport(seed=seed, jobs=jobs)
    dataset_id = await dataset(
        platform, *data, label_column=LABEL_COLUMN, holdout_fraction=str(HOLDOUT_FRACTION)
    )

    async def start_job(names: list[str]) -> str:
        peers = [platform.peer(n).peer_id for n in names]
        await peers_active(platform, peers)
        async with platform.client() as http:
            r = await http.post("/api/jobs", json=job_body(dataset_id, peers, rounds))
            assert r.status_code == 201, r.text
            return str(r.json()["job_id"])

    reference = await asyncio.to_thread(
        undisturbed,
        job_body(dataset_id, [f"p{i}" for i in range(peers_per_job)], rounds),
        dataset_id,
        peers_per_job,
    )
    report.reference_accuracy = reference.rounds[-1].accuracy if reference.rounds else None
    names = [[f"j{j}p{i}" for i in range(peers_per_job)] for j in range(jobs)]
    job_ids = [await start_job(group) for group in names]
    injector = Injector(platform, proxy)
    faults = schedule(
        seed,
        targets(platform, [n for group in names for n in group]),
        min_gap_s=max_gap_s / 5,
        max_gap_s=max_gap_s,
    )
    started = time.monotonic()
    running: set[asyncio.Task[None]] = set()

    async def inject() -> None:
        for fault in faults:
            await asyncio.sleep(max(0.0, started + fault.at_s - time.monotonic()))
            report.faults.append(fault)
            task = asyncio.create_task(injector.hit(fault))
            running.add(task)
            task.add_done_callback(running.discard)

    injecting = asyncio.create_task(inject())
    try:
        seen = await _ended(platform, job_ids, timeout_s)
    finally:
        injecting.cancel()
        await asyncio.gather(*running, return_exceptions=True)  # everything back up
        report.wall_s = time.monotonic() - started
    report.violations += injector.errors
    async with platform.client() as http:
        for job_id in job_ids:
            job = seen.get(job_id, {"state": "unknown"})
            report.accuracies[job_id] = (job.get("latest") or {}).get("accuracy")
            report.jobs_completed += job.get("state") == "completed"
            report.violations += violations(job_id, job, await job_events(http, job_id))
            if job.get("state") == "completed":
                weights = await final_weights(platform, job_id)
                report.identical += same_weights(weights, reference.state_dict)
            accuracy, ref = report.accuracies[job_id], report.reference_accuracy
            if accuracy is not None and ref is not None and points_apart(accuracy, ref) > 1:
                report.violations.append(
                    f"job {job_id[-8:]}: accuracy {accuracy:.4f}, undisturbed {ref:.4f}"
                )
    report.violations += await _queues_left(platform, [n for group in names for n in group])
    return report


async def _queues_left(
    platform: Platform, peer_names: list[str], timeout_s: float = 120
) -> list[str]:
    """The platform's queues (dead-letter queues too) that never drain once it settles.

    A queue counts as drained when it is seen empty once: heartbeats keep arriving, so a
    live queue is rarely empty at the moment one looks. The queues of an instance that is
    gone (no consumer: its feed, and the orchestrator's ``tasks``) are left out: they
    hold copies of events every live instance heard too (the job's new holder resends
    the open round's tasks), and the broker deletes them ``feed_expires_s`` after their
    instance went away.
    """
    peer_queues = {f"peer.{platform.peers[name].peer_id}" for name in peer_names}
    deadline = time.monotonic() + timeout_s
    drained: set[str] = set()
    waiting: dict[str, int] = {}
    while time.monotonic() < deadline:
        async with httpx.AsyncClient(base_url=RABBIT_API, auth=("admin", "admin")) as mgmt:
            r = await mgmt.get("/queues/%2F", params={"columns": "name,messages,consumers"})
        r.raise_for_status()
        for q in r.json():
            name, messages = q["name"], int(q.get("messages") or 0)
            ours = any(name.startswith(pre + ".") for pre in platform.queue_prefixes)
            if not ours and name.removesuffix(".dlq") not in peer_queues:
                continue
            per_instance = ".feed." in name or ".tasks." in name
            if per_instance and not name.endswith(".dlq") and not q.get("consumers"):
                continue  # a gone instance's copy of the events; it expires
            if messages == 0:
                drained.add(name)
            else:
                waiting[name] = messages
        waiting = {name: n for name, n in waiting.items() if name not in drained}
        if not waiting:
            return []
        await asyncio.sleep(1)
    return [f"queue {q} holds {n} message(s)" for q, n in sorted(waiting.items())]
