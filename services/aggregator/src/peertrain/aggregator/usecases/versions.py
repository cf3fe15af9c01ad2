"""Model versions: v0 from ``job.configured``, v<r> from ``round.closed``, evaluation, export.

:func:`reconcile` brings a job's model stream up to what its job stream asks for, in
order, and does nothing already on record: a redelivered event, a restart or a second
trigger finds the work done. Outputs are bit-identical whatever path produced them (the
running accumulator or a rebuild from the included objects), because the strategies
give the same bits for the same set of updates.

A synchronous round's version is made as soon as the holder's running sum has an
update for every task the round gave out (:func:`build_early`), while the orchestrator
closes the round: at ``round.closed`` it is only appended, when the round includes
exactly those updates unclipped (otherwise it is made again, as before).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from peertrain.aggregator.domain import (
    JobMemory,
    UpdateRefused,
    clip_factors,
    clip_scale,
    codes,
)
from peertrain.aggregator.domain.buffered import staleness_factor
from peertrain.aggregator.metrics import (
    AGGREGATION_SECONDS,
    EVALUATION_SECONDS,
    MODEL_VERSIONS,
    ROUND_INPUTS_MISSING,
    observe_evaluation,
    observe_round_bytes,
)
from peertrain.common.blobs import BlobNotFound
from peertrain.common.events import RecordedEvent
from peertrain.common.events.models import (
    Lineage,
    ModelDiverged,
    ModelEvaluated,
    ModelExported,
    ModelVersionCreated,
    model_key,
    server_state_key,
)
from peertrain.common.events.training import IncludedUpdate, JobConfigured, RoundClosed
from peertrain.ml.weights import state_to_bytes

from .numerics import (
    RoundWork,
    State,
    clipped,
    evaluate_state,
    final_files,
    initial_state,
    load_holdout,
    load_state,
    new_strategy,
    non_finite,
)
from .storage import accepted_delta, model_state, server_state, sha256_hex

if TYPE_CHECKING:
    import torch

    from ..application import AggregatorApp

__all__ = ["StoredVersion", "begin_work", "build_early", "final_keys", "reconcile", "work_key"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class StoredVersion:
    """A round's version, stored, not yet on record (made early: before its
    ``round.closed``)."""

    round: int
    attempt: int
    keys: frozenset[str]
    """The updates it sums (:func:`work_key`)."""
    state: State
    key: str
    sha256: str
    size: int
    strategy: str
    server_state_key: str | None


def work_key(key: str, sha256: str) -> str:
    """The accumulator key of an update: its object and its content."""
    return f"{key}#{sha256}"


async def begin_work(
    app: AggregatorApp, state: JobMemory, round_: int, attempt: int, base_version: int
) -> tuple[RoundWork, State]:
    """Start folding a round attempt on top of model version ``base_version``, with the
    server state stored after it; returns the work and that version's tensors."""
    assert state.configured is not None
    base = await model_state(app, state, base_version)
    server = await server_state(app, state, base_version)
    work = await asyncio.to_thread(
        RoundWork.begin,
        state.configured,
        round_,
        attempt,
        base,
        server_state=server,
        spill_dir=app.settings.work_dir,
    )
    return work, base


def final_keys(job_id: str) -> tuple[str, str]:
    """Where ``final.pt`` and ``final.safetensors`` go."""
    return f"models/{job_id}/final.pt", f"models/{job_id}/final.safetensors"


async def reconcile(app: AggregatorApp, state: JobMemory, cause: RecordedEvent | None) -> None:
    """Do whatever model work the job's log asks for and the model stream lacks."""
    cfg = state.configured
    if cfg is None:
        return
    if 0 not in state.versions:
        await _initial(app, state, cfg, cause)
    for closed in state.rounds_to_aggregate():
        if state.diverged:
            break  # the job fails: nothing is built on a non-finite version
        if closed.round in state.versions:
            continue
        if closed.round - 1 not in state.versions:
            log.error("round closed before its base version exists", round=closed.round)
            break
        await _aggregate(app, state, cfg, closed, cause)
    for version in sorted(state.versions):
        if not state.versions[version].assessed:
            await _evaluate(app, state, cfg, version, cause)
    if cfg.rounds in state.versions and state.exported is None and not state.diverged:
        await _export(app, state, cfg, cause)
    if state.ended is not None:
        app.forget(state.job_id)


async def _put(app: AggregatorApp, key: str, data: bytes, content_type: str) -> str:
    await app.blobs.put_bytes(key, data, content_type=content_type)
    return sha256_hex(data)


async def _version_zero(app: AggregatorApp, cfg: JobConfigured) -> bytes:
    """Fresh weights, or those the job starts from: another job's model version
    (``init_from``) or uploaded weights (``init_weights``), bit for bit.

    The orchestrator checked they exist and are this model's tensors; should their
    object be gone or changed all the same (an operator), the job starts from fresh
    weights, logged: it must not wait for the aggregator forever.
    """
    source = cfg.init_from or cfg.init_weights
    if source is not None:
        try:
            data = await app.blobs.get_bytes(source.key)
            if sha256_hex(data) != source.sha256:
                raise UpdateRefused(codes.WRONG_TENSORS, f"{source.key} changed since")
            return await asyncio.to_thread(initial_state, cfg, data)
        except (BlobNotFound, UpdateRefused) as exc:
            log.error(
                "the source model version cannot be used: fresh weights instead",
                job_id=cfg.job_id,
                source=source.key,
                error=str(exc),
            )
    return await asyncio.to_thread(initial_state, cfg)


async def _initial(
    app: AggregatorApp, state: JobMemory, cfg: JobConfigured, cause: RecordedEvent | None
) -> None:
    data = await _version_zero(app, cfg)
    key = model_key(state.job_id, 0)
    sha = await _put(app, key, data, "application/octet-stream")
    strategy = new_strategy(cfg, server_state=None, spill_dir=app.settings.work_dir)
    server_key = None
    if strategy.stateful:
        server_key = server_state_key(state.job_id, 0)
        await _put(app, server_key, strategy.state_bytes(), "application/octet-stream")
    created = ModelVersionCreated(
        job_id=state.job_id,
        version=0,
        key=key,
        sha256=sha,
        size=len(data),
        strategy=strategy.name,
        server_state_key=server_key,
    )
    await app.append(state, [created], causation=cause)
    app.bases[state.job_id] = (0, await asyncio.to_thread(load_state, data))
    MODEL_VERSIONS.labels(kind="initial").inc()
    log.info("initial model stored", job_id=state.job_id, key=key)


async def _rebuild(
    app: AggregatorApp,
    state: JobMemory,
    cfg: JobConfigured,
    closed: RoundClosed,
    scale: dict[int, float],
) -> tuple[RoundWork, list[IncludedUpdate]]:
    """Fold the included updates again from the bucket, one at a time (O(model)), each
    scaled by ``scale[shard]`` when it has one (clipping); returns the work and the
    updates it folded.

    The objects are the aggregator's own content-addressed copies, so they cannot have
    changed; should one be gone or altered all the same (an operator, a broken disk),
    the round is aggregated without it, logged, rather than never: a job must not wait
    for the aggregator forever.
    """
    work, base = await begin_work(app, state, closed.round, closed.attempt, closed.round - 1)
    used: list[IncludedUpdate] = []
    for inc in sorted(closed.included, key=lambda u: u.key):
        rows = state.shard_rows(inc.shard)
        try:
            if rows is None:
                raise UpdateRefused(
                    codes.TASK_MISMATCH, f"shard {inc.shard} is not part of the job"
                )
            delta = await accepted_delta(app, state, inc.key, inc.sha256, base)
        except UpdateRefused as exc:
            ROUND_INPUTS_MISSING.inc()
            log.error("aggregating the round without an update", key=inc.key, problem=exc.message)
            continue
        if inc.shard in scale:
            delta = await asyncio.to_thread(clipped, delta, scale[inc.shard], work.strategy.buffers)
        key = work_key(inc.key, inc.sha256)
        weight = float(rows) * staleness_factor(cfg.aggregation, closed, inc)
        group = str(inc.shard)
        await asyncio.to_thread(work.accumulator.add, delta, weight, key=key, group=group)
        used.append(inc)
    return work, used


async def build_early(app: AggregatorApp, state: JobMemory) -> None:
    """Make the open round's version now if the holder's running sum has an update for
    every task the round gave out, unclipped, in a synchronous job without checks: the
    round closes complete on exactly these (:meth:`JobMemory.complete_inputs`), and its
    ``round.closed`` then only appends the version (see :func:`_aggregate`).

    The version's objects go to their keys at once; nothing reads them before its
    ``model.version_created``, and a round that closes otherwise makes them again.
    """
    cfg, work = state.configured, app.rounds.get(state.job_id)
    if cfg is None or work is None:
        return
    spec = cfg.aggregation
    if spec.is_async or spec.verify.share > 0:
        return  # rounds that close on what the orchestrator alone weighs
    inputs = state.complete_inputs(work.round, work.attempt)
    if inputs is None or clip_scale({a.shard: a.norm for a in inputs}, spec):
        return
    keys = frozenset(work_key(a.key, a.sha256) for a in inputs)
    if keys != work.keys():
        return
    del app.rounds[state.job_id]
    try:
        new_state = await asyncio.to_thread(work.accumulator.finish)
    finally:
        work.close()
    app.early[state.job_id] = await _store(app, state, work, new_state, keys)
    log.info("model version made before its round closed", round=work.round)


async def _aggregate(
    app: AggregatorApp,
    state: JobMemory,
    cfg: JobConfigured,
    closed: RoundClosed,
    cause: RecordedEvent | None,
) -> None:
    started = time.perf_counter()
    wanted = {work_key(u.key, u.sha256) for u in closed.included}
    scale = clip_factors(state, closed, cfg.aggregation)
    early = app.early.pop(state.job_id, None)
    if (
        early is not None
        and not scale
        and (early.round, early.attempt) == (closed.round, closed.attempt)
        and early.keys == wanted
    ):
        made = early
        used, path = list(closed.included), "early"
    else:
        made, used, path = await _make(app, state, cfg, closed, scale)
    included = sorted(used, key=lambda u: u.shard)
    created = ModelVersionCreated(
        job_id=state.job_id,
        version=closed.round,
        key=made.key,
        sha256=made.sha256,
        size=made.size,
        strategy=made.strategy,
        server_state_key=made.server_state_key,
        lineage=Lineage(
            parent_version=closed.round - 1,
            peers=tuple(u.peer_id for u in included),
            updates=tuple(u.key for u in included),
            shards=tuple(u.shard for u in included),
        ),
    )
    await app.append(state, [created], causation=cause)
    app.bases[state.job_id] = (closed.round, made.state)
    AGGREGATION_SECONDS.labels(path=path).observe(time.perf_counter() - started)
    MODEL_VERSIONS.labels(kind="round").inc()
    observe_round_bytes(state.job_id, _included_bytes(state, closed))
    log.info(
        "model version stored",
        job_id=state.job_id,
        version=closed.round,
        updates=len(included),
        path=path,
    )


async def _make(
    app: AggregatorApp,
    state: JobMemory,
    cfg: JobConfigured,
    closed: RoundClosed,
    scale: dict[int, float],
) -> tuple[StoredVersion, list[IncludedUpdate], str]:
    """Make a closed round's version: from the running sum when it holds exactly the
    included updates, unclipped; else rebuilt from the bucket. Returns it (stored), the
    updates it sums and the path taken."""
    wanted = {work_key(u.key, u.sha256) for u in closed.included}
    work = app.rounds.pop(state.job_id, None)
    path = "running"
    if scale:  # the running sum folded them unclipped
        log.info("clipping updates", round=closed.round, scale=_rounded_scale(scale))
    if (
        scale
        or work is None
        or (work.round, work.attempt) != (closed.round, closed.attempt)
        or (work.keys() != wanted)
    ):
        if work is not None:
            work.close()
        path = "clipped" if scale else "rebuilt"
        work, used = await _rebuild(app, state, cfg, closed, scale)
    else:
        used = list(closed.included)
    try:
        if used:
            new_state = await asyncio.to_thread(work.accumulator.finish)
        else:  # nothing left to aggregate: the model carries over unchanged
            new_state = dict(await model_state(app, state, closed.round - 1))
    finally:
        work.close()
    keys = frozenset(work_key(u.key, u.sha256) for u in used)
    return await _store(app, state, work, new_state, keys), used, path


async def _store(
    app: AggregatorApp, state: JobMemory, work: RoundWork, new_state: State, keys: frozenset[str]
) -> StoredVersion:
    """Store the version ``work``'s round makes (and the strategy's server state after
    it, if it keeps one)."""
    data = await asyncio.to_thread(state_to_bytes, new_state)
    key = model_key(state.job_id, work.round)
    sha = await _put(app, key, data, "application/octet-stream")
    server_key = None
    if work.strategy.stateful:
        server_key = server_state_key(state.job_id, work.round)
        await _put(app, server_key, work.strategy.state_bytes(), "application/octet-stream")
    return StoredVersion(
        work.round,
        work.attempt,
        keys,
        new_state,
        key,
        sha,
        len(data),
        work.strategy.name,
        server_key,
    )


async def _holdout(
    app: AggregatorApp, job_id: str, cfg: JobConfigured
) -> tuple[torch.Tensor, torch.Tensor]:
    """The job's holdout, fetched, checked against its recorded sha256 and decoded once
    per job (every version is evaluated on it)."""
    kept = app.holdouts.get(job_id)
    if kept is not None and kept[0] == cfg.holdout.sha256:
        return kept[1], kept[2]
    data = await app.blobs.get_bytes(cfg.holdout.key)
    if sha256_hex(data) != cfg.holdout.sha256:
        raise RuntimeError(f"the holdout {cfg.holdout.key} does not have its recorded sha256")
    x, y = await asyncio.to_thread(load_holdout, data)
    app.holdouts[job_id] = (cfg.holdout.sha256, x, y)
    return x, y


async def _evaluate(
    app: AggregatorApp,
    state: JobMemory,
    cfg: JobConfigured,
    version: int,
    cause: RecordedEvent | None,
) -> None:
    started = time.perf_counter()
    holdout = await _holdout(app, state.job_id, cfg)
    tensors = await model_state(app, state, version)
    why = await asyncio.to_thread(non_finite, tensors)
    metrics = None
    if why is None:
        metrics = await asyncio.to_thread(
            evaluate_state,
            cfg,
            tensors,
            holdout,
            device=app.settings.eval_device,
            batch_size=app.settings.eval_batch_size,
            threads=app.settings.eval_threads,
        )
        if not math.isfinite(metrics["loss"]):
            why = f"has a non-finite loss on the holdout ({metrics['loss']})"
    if why is not None or metrics is None:
        # a non-finite number cannot be stored as a metric (nor should a job end green
        # on it): the version is marked, and the orchestrator fails the job
        diverged = ModelDiverged(job_id=state.job_id, version=version, reason=why or "")
        await app.append(state, [diverged], causation=cause)
        log.warning("model version diverged", job_id=state.job_id, version=version, why=why)
        return
    evaluated = ModelEvaluated(
        job_id=state.job_id,
        version=version,
        loss=metrics["loss"],
        accuracy=metrics["accuracy"],
        per_class_accuracy=tuple(metrics["per_class_accuracy"]),
        samples=metrics["samples"],
    )
    await app.append(state, [evaluated], causation=cause)
    EVALUATION_SECONDS.observe(time.perf_counter() - started)
    observe_evaluation(state.job_id, version, metrics["loss"], metrics["accuracy"])
    log.info("model evaluated", job_id=state.job_id, version=version, **_rounded(metrics))


def _rounded_scale(scale: dict[int, float]) -> dict[str, float]:
    return {str(shard): round(f, 4) for shard, f in sorted(scale.items())}


def _included_bytes(state: JobMemory, closed: RoundClosed) -> int:
    """Bytes of the accepted updates a closed round aggregates (as recorded on accept)."""
    sizes = (state.accepted_of(closed, u) for u in closed.included)
    return sum(a.size for a in sizes if a is not None)


def _rounded(metrics: object) -> dict[str, float]:
    assert isinstance(metrics, dict)
    return {k: round(float(metrics[k]), 4) for k in ("loss", "accuracy")}


async def _export(
    app: AggregatorApp, state: JobMemory, cfg: JobConfigured, cause: RecordedEvent | None
) -> None:
    version = cfg.rounds
    tensors = await model_state(app, state, version)
    pt, st = await asyncio.to_thread(final_files, cfg, tensors)
    pt_key, st_key = final_keys(state.job_id)
    pt_sha = await _put(app, pt_key, pt, "application/octet-stream")
    st_sha = await _put(app, st_key, st, "application/octet-stream")
    exported = ModelExported(
        job_id=state.job_id,
        version=version,
        pt_key=pt_key,
        pt_sha256=pt_sha,
        safetensors_key=st_key,
        safetensors_sha256=st_sha,
    )
    await app.append(state, [exported], causation=cause)
    MODEL_VERSIONS.labels(kind="final").inc()
    log.info("final model exported", job_id=state.job_id, version=version)
