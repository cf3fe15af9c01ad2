"""How jobs look over HTTP (plain JSON-able dicts, built from the in-memory state)."""

from __future__ import annotations

from typing import Any

from peertrain.common.events import RecordedEvent

from ..domain import Job, Round, Task

__all__ = ["event_view", "job_detail", "job_metrics", "job_summary"]


def _latest(job: Job) -> dict[str, Any] | None:
    if not job.evaluations:
        return None
    version = max(job.evaluations)
    ev = job.evaluations[version]
    return {"round": version, "version": version, "loss": ev.loss, "accuracy": ev.accuracy}


def _current_round(job: Job) -> int | None:
    return job.current.round if job.current is not None else None


def job_summary(job: Job) -> dict[str, Any]:
    """One line of ``GET /api/jobs``."""
    assert job.created is not None
    latest = _latest(job)
    return {
        "job_id": job.job_id,
        "name": job.created.name,
        "state": job.state,
        "dataset_id": job.created.dataset_id,
        "rounds": job.rounds_total,
        "current_round": _current_round(job),
        "peers": len(job.created.peers),
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "accuracy": latest["accuracy"] if latest else None,
        "loss": latest["loss"] if latest else None,
    }


def _task(task: Task) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "round": task.round,
        "attempt": task.attempt,
        "shard": task.shard,
        "peer_id": task.peer_id,
        "state": task.state,
        "device": task.device,
        "assigned_at": task.assigned_at,
        "deadline": task.deadline,
        "reassigned_from": task.reassigned_from,
        "error": task.error,
        "traceback": task.traceback,
    }


def _round(rnd: Round) -> dict[str, Any]:
    return {
        "round": rnd.round,
        "attempt": rnd.attempt,
        "state": rnd.state,
        "model_version": rnd.model_version,
        "opened_at": rnd.opened_at,
        "deadline": rnd.deadline,
        "closed_at": rnd.closed_at,
        "close_reason": rnd.close_reason,
        "accepted": sorted(rnd.accepted),
    }


def job_detail(job: Job) -> dict[str, Any]:
    """``GET /api/jobs/{id}``: state, current round, peers and tasks, latest metrics."""
    assert job.created is not None
    created = job.created
    # every task of the current round, plus failed/rejected ones of earlier rounds
    tasks = [
        _task(t)
        for rnd in job.rounds.values()
        for t in rnd.tasks.values()
        if rnd is job.current or t.state in ("failed", "rejected")
    ]
    return {
        **job_summary(job),
        "owner_id": created.owner_id,
        "peers": list(created.peers),
        "model": created.model.model_dump(mode="json"),
        "training": created.training.model_dump(mode="json"),
        "aggregation": created.aggregation.model_dump(mode="json"),
        "sharding": created.sharding.model_dump(mode="json"),
        "config_key": job.configured.config_key if job.configured else None,
        "round": _round(job.current) if job.current else None,
        "tasks": tasks,
        "latest": _latest(job),
        "final_version": job.exported.version if job.exported else None,
        "error": job.error,
        "error_code": job.error_code,
        "rejected_updates": [r.model_dump(mode="json") for r in job.rejected],
    }


def job_metrics(job: Job) -> dict[str, Any]:
    """``GET /api/jobs/{id}/metrics``: per round (holdout), per peer per epoch (training)."""
    closed = {rnd.round: rnd for rnd in job.rounds.values() if rnd.state == "closed"}
    rounds = []
    initial = job.evaluations.get(0)
    for version in sorted(v for v in job.evaluations if v > 0):
        ev = job.evaluations[version]
        rnd = closed.get(version)
        rounds.append(
            {
                "round": version,
                "version": version,
                "loss": ev.loss,
                "accuracy": ev.accuracy,
                "per_class_accuracy": list(ev.per_class_accuracy),
                "samples": ev.samples,
                "duration_s": (
                    (rnd.closed_at - rnd.opened_at).total_seconds()
                    if rnd is not None and rnd.closed_at is not None
                    else None
                ),
                "peers": len(rnd.accepted) if rnd is not None else None,
            }
        )
    peers = [
        {
            "peer_id": p.peer_id,
            "round": p.round,
            "shard": p.shard,
            "task_id": p.task_id,
            "epoch": p.epoch,
            "epochs": p.epochs,
            "loss": p.loss,
            "accuracy": p.accuracy,
            "samples": p.samples,
            "duration_s": p.duration_s,
        }
        for p in job.progress
    ]
    return {
        "job_id": job.job_id,
        "initial": (
            {"version": 0, "loss": initial.loss, "accuracy": initial.accuracy} if initial else None
        ),
        "rounds": rounds,
        "peers": peers,
    }


def event_view(event: RecordedEvent) -> dict[str, Any]:
    """One event of ``GET /api/jobs/{id}/events``."""
    return {
        "id": event.id,
        "type": event.type,
        "occurred_at": event.occurred_at,
        "stream": event.stream,
        "seq": event.seq,
        "position": event.position,
        "producer": event.producer,
        "actor": event.actor,
        "data": event.payload_dict(),
    }
