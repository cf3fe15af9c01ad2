"""A sharded job's configuration: ``config.json`` for its peers, ``job.configured`` for
the log. Pure: the use case writes the file, then appends the event.

The configuration is where a job's settings that depend on its model and data are
fixed: ``aggregation.max_update_norm``, when the job left it out, is sized for the
model here (:meth:`~peertrain.common.specs.AggregationSpec.sized_for`), so the
aggregator and the simulation read one number."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from peertrain.common.events.tasks import peer_message_key
from peertrain.common.events.training import JobConfigured, ShardPlan
from peertrain.common.specs import state_shapes

from .job import Job

__all__ = ["Configuration", "configure"]


@dataclass(frozen=True)
class Configuration:
    """A sharded job's ``config.json`` and the ``job.configured`` describing it."""

    key: str
    data: bytes
    event: JobConfigured


def configure(
    job: Job, *, bucket: str, exchanges: Mapping[str, str], check_key: int | None = None
) -> Configuration:
    """The configuration of a sharded job (its created and sharded facts), to be
    written at ``key`` before ``event`` is appended. ``check_key``: the job's secret for
    checked work (:attr:`~peertrain.common.events.training.JobConfigured.check_key`; on
    record only, not in ``config.json``)."""
    assert job.created is not None and job.sharded is not None
    created, sharded = job.created, job.sharded
    shards = tuple(
        ShardPlan(
            index=s.index,
            peer_id=s.peer_id,
            key=s.key,
            sha256=s.sha256,
            size=s.size,
            rows=max(1, s.rows or 0),
        )
        for s in sorted(sharded.shards, key=lambda s: s.index)
    )
    rounds = job.rounds_total
    shapes = state_shapes(created.model, sharded.feature_spec.data_shape)
    aggregation = created.aggregation.sized_for(sum(math.prod(s) for _, s in shapes.values()))
    config: dict[str, Any] = {
        "job_id": job.job_id,
        "name": created.name,
        "owner_id": created.owner_id,
        "dataset_id": created.dataset_id,
        "bucket": bucket,
        "rounds": rounds,
        "model": created.model.model_dump(mode="json"),
        "training": created.training.model_dump(mode="json"),
        "aggregation": aggregation.model_dump(mode="json"),
        "sharding": created.sharding.model_dump(mode="json"),
        "feature_spec": sharded.feature_spec.model_dump(mode="json"),
        "exchanges": dict(exchanges),
        "peers": [
            {"peer_id": p, "queue": f"peer.{p}", "task_routing_key": peer_message_key(p, "task")}
            for p in created.peers
        ],
        "shards": [{**s.model_dump(mode="json"), "url": f"s3://{bucket}/{s.key}"} for s in shards],
        "holdout": sharded.holdout.model_dump(mode="json"),
    }
    data = json.dumps(config, indent=2, sort_keys=True).encode()
    key = f"jobs/{job.job_id}/config.json"
    event = JobConfigured(
        job_id=job.job_id,
        config_key=key,
        config_sha256=hashlib.sha256(data).hexdigest(),
        rounds=rounds,
        model=created.model,
        training=created.training,
        aggregation=aggregation,
        feature_spec=sharded.feature_spec,
        shards=shards,
        holdout=sharded.holdout,
        reference_weight=float(sum(s.rows for s in shards)),
        init_from=created.init_from,
        init_weights=created.init_weights,
        check_key=check_key,
    )
    return Configuration(key, data, event)
