"""``POST /api/jobs``: turning the request (:class:`.job_request.JobRequest`) into
``job.created``.

Everything is checked against the orchestrator's own projections (the dataset must be
validated and the caller's, the peers online and usable by the caller) and the spec
contract (model, training and aggregation blocks; the model must fit the data and the
parameter budget), so a job that is accepted can run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from peertrain.common.errors import QuotaExceeded
from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.events.training import JobCreated, ModelSource, ShardingSpec
from peertrain.common.events.weights import WeightsSource
from peertrain.common.peers import RANKED_MEMORY_GB, NotEnoughPeers, own_first, pick
from peertrain.common.security import Principal
from peertrain.common.specs import DataShape, SpecInvalid, check_budget
from peertrain.common.specs.shapes import state_shapes

from .directory import Directory, PeerInfo
from .errors import (
    DatasetNotFound,
    DatasetNotReady,
    JobRequestInvalid,
    PeersUnavailable,
)
from .job import Job
from .job_request import JobRequest, PeerSelection

__all__ = ["check_running_quota", "plan_job"]


def _select(request: PeerSelection, usable: list[PeerInfo], who: Principal) -> list[str]:
    f = request.filters
    pool = [
        p
        for p in usable
        if (f.device is None or p.device == f.device)
        and (f.min_memory_gb is None or p.memory_gb >= f.min_memory_gb)
    ]
    picked = pick(pool, request.count, rank=own_first(who.subject, _owner, _rank))
    return [p.peer_id for p in picked]


def _owner(peer: PeerInfo) -> str | None:
    return peer.owner_id


def _rank(peer: PeerInfo) -> tuple[float, float, str]:
    """What the platform measured first (training speed in earlier jobs); only then what
    a peer claims, capped: a stranger's shared peer cannot win every selection by
    announcing absurd specs."""
    return (-(peer.rows_per_s or 0.0), -min(peer.memory_gb, RANKED_MEMORY_GB), peer.peer_id)


def _named_problems(peers: list[str], who: Principal, directory: Directory) -> list[dict[str, str]]:
    """Every named peer that cannot take part, with why."""
    problems: list[dict[str, str]] = []
    for peer_id in peers:
        info = directory.peers.get(peer_id)
        if info is None or info.owner_id is None or not info.usable_by(who):
            problems.append({"peer_id": peer_id, "problem": "unknown"})
        elif info.disabled:
            problems.append({"peer_id": peer_id, "problem": "disabled"})
        elif not info.registered:
            problems.append({"peer_id": peer_id, "problem": "not_registered"})
        elif not info.online:
            problems.append({"peer_id": peer_id, "problem": "offline"})
        elif info.outdated:  # its runtime would drop the tasks: the round would wait
            problems.append({"peer_id": peer_id, "problem": "outdated"})
    return problems


def _model_problems(exc: SpecInvalid) -> list[dict[str, str]]:
    """A model's refusal as problems at their places (a graph's: ``model.nodes.<i>.op``,
    naming the node and the op)."""
    items = exc.detail if isinstance(exc.detail, list) and exc.detail else [{}]
    out = []
    for item in items:
        loc = str(item.get("loc") or "model") if isinstance(item, dict) else "model"
        msg = exc.message if len(items) == 1 else str(item.get("msg", exc.message))
        out.append({"loc": loc if loc.split(".")[0] == "model" else f"model.{loc}", "msg": msg})
    return out


def _augment_problems(request: JobRequest, dataset_spec: FeatureSpec) -> list[dict[str, str]]:
    """``training.augment`` needs images kept as pixels (``ImageEncoding.stored``)."""
    augment = request.training.augment
    if augment is None or augment.does_nothing:
        return []
    image = dataset_spec.image
    if image is not None and image.stored == "uint8":
        if augment.crop_padding > min(image.height, image.width):
            msg = (
                f"crop_padding={augment.crop_padding} is more than the images' "
                f"{image.width}x{image.height} pixels"
            )
            return [{"loc": "training.augment.crop_padding", "msg": msg}]
        return []
    if not image:
        msg = "augmentation is for image datasets; this dataset is a table"
    else:
        msg = (
            "this image dataset was validated before pixels were kept (its training data "
            "holds standardised floats): upload it again to augment it"
        )
    return [{"loc": "training.augment", "msg": msg}]


def _fit_problems(
    request: JobRequest,
    features: DataShape,
    peer_count: int,
    train_rows: int,
    dataset_spec: FeatureSpec,
) -> list[dict[str, str]]:
    """What does not fit together: the model and the data, ``min_peers`` and the peers,
    the rows and the peers; one ``{"loc", "msg"}`` item each (none when it all fits)."""
    problems: list[dict[str, str]] = []
    try:
        check_budget(request.model, features)
    except SpecInvalid as exc:
        problems += _model_problems(exc)
    min_peers = request.aggregation.min_peers
    if min_peers > peer_count:
        msg = f"min_peers={min_peers} is more than the job's {peer_count} peer(s)"
        problems.append({"loc": "aggregation.min_peers", "msg": msg})
    buffer = request.aggregation.buffer_size
    if request.aggregation.is_async and buffer is not None and buffer > peer_count:
        # a version of more updates than peers would mostly be of stale ones
        msg = f"buffer_size={buffer} is more than the job's {peer_count} peer(s)"
        problems.append({"loc": "aggregation.buffer_size", "msg": msg})
    if train_rows < peer_count:
        msg = f"the dataset has {train_rows} training rows: fewer than one per peer"
        problems.append({"loc": "peers", "msg": msg})
    if request.aggregation.verify.enabled and request.training.compression.kind == "topk":
        # a checker's top-k residual is not the checked peer's: the two cannot agree
        msg = (
            "verify cannot check top-k compressed updates (each peer's error feedback "
            "differs); use compression none, fp16 or int8 with verify"
        )
        problems.append({"loc": "aggregation.verify", "msg": msg})
    return (
        problems
        + _over_select_problems(request, peer_count)
        + _augment_problems(request, dataset_spec)
    )


def _over_select_problems(request: JobRequest, peer_count: int) -> list[dict[str, str]]:
    """Whether ``over_select`` fits the job's peers (see
    :meth:`~peertrain.common.specs.AggregationSpec.over_select_problem`)."""
    msg = request.aggregation.over_select_problem(peer_count)
    return [] if msg is None else [{"loc": "aggregation.over_select", "msg": msg}]


def _source(
    request: JobRequest, who: Principal, jobs: Mapping[str, Job], data: FeatureSpec
) -> tuple[ModelSource | None, list[dict[str, str]]]:
    """The model version the job starts from, or why it cannot (``data``: the new
    job's dataset feature spec)."""
    want = request.init_from
    if want is None:
        return None, []
    job = jobs.get(want.job_id)
    if job is None or job.created is None or not job.visible_to(who):
        return None, [{"loc": "init_from.job_id", "msg": f"no job {want.job_id!r}"}]
    problems: list[dict[str, str]] = []
    version = want.version if want.version is not None else max(job.versions, default=None)
    created = job.versions.get(version) if version is not None else None
    if created is None:
        what = f"no model version {version}" if version is not None else "no model version yet"
        problems.append({"loc": "init_from.version", "msg": f"job {want.job_id!r} has {what}"})
    if job.created.model != request.model:
        theirs = job.created.model.model_dump_json()
        msg = f"the model spec differs from job {want.job_id!r}'s: {theirs}"
        problems.append({"loc": "init_from", "msg": msg})
    known = job.configured.feature_spec if job.configured else None
    if known is None or (known.input_shape, known.classes) != (data.input_shape, data.classes):
        msg = f"the data's shape or classes differ from job {want.job_id!r}'s"
        problems.append({"loc": "init_from", "msg": msg})
    if created is None or problems:
        return None, problems
    source = ModelSource(
        job_id=job.job_id, version=created.version, key=created.key, sha256=created.sha256
    )
    return source, []


MAX_WEIGHT_PROBLEMS = 100
"""Mismatched tensors listed one by one; the rest are counted in one more item."""


def _weights(
    request: JobRequest, who: Principal, directory: Directory, features: DataShape
) -> tuple[WeightsSource | None, list[dict[str, str]]]:
    """The uploaded weights the job starts from, or every way they do not fit its model
    (names, shapes and dtypes, against the model's state dict computed from its spec)."""
    want = request.init_weights
    if want is None:
        return None, []
    up = directory.weights.get(want)
    if up is None or not (who.is_admin or up.owner_id == who.subject):
        return None, [{"loc": "init_weights", "msg": f"no weights {want!r}"}]
    try:
        expected = state_shapes(request.model, features)
    except SpecInvalid:
        return None, []  # the model does not fit the data: reported on its own
    got = {t.name: (t.dtype, t.shape) for t in up.tensors}

    def shown(spec: tuple[str, tuple[int, ...]]) -> str:
        return f"{spec[0]}{list(spec[1])}"

    problems = [
        {"loc": f"init_weights.{name}", "msg": f"missing: the model has {shown(expected[name])}"}
        for name in sorted(expected.keys() - got.keys())
    ]
    problems += [
        {"loc": f"init_weights.{name}", "msg": "unexpected: the model has no such tensor"}
        for name in sorted(got.keys() - expected.keys())
    ]
    problems += [
        {
            "loc": f"init_weights.{name}",
            "msg": f"{shown(got[name])} uploaded, the model has {shown(expected[name])}",
        }
        for name in sorted(expected.keys() & got.keys())
        if got[name] != expected[name]
    ]
    if len(problems) > MAX_WEIGHT_PROBLEMS:
        more = len(problems) - MAX_WEIGHT_PROBLEMS
        problems = problems[:MAX_WEIGHT_PROBLEMS]
        problems.append({"loc": "init_weights", "msg": f"and {more} more mismatched tensor(s)"})
    if problems:
        return None, problems
    return WeightsSource(weights_id=up.weights_id, key=up.key, sha256=up.sha256), []


def plan_job(
    job_id: str,
    request: JobRequest,
    who: Principal,
    directory: Directory,
    jobs: Mapping[str, Job] | None = None,
) -> JobCreated:
    """Check ``request`` and make its ``job.created`` (peers in shard order).

    ``jobs``: those a job may start from (``request.init_from``: one of the caller's,
    with the same model spec, on data of the same shape and classes).

    Every problem is reported at once: the peers' (409, each peer with why, and the
    other problems under ``problems``), else the rest (422, one item each).

    Raises
    ------
    DatasetNotFound, DatasetNotReady
        404 / 409 (nothing else can be checked without the dataset).
    PeersUnavailable, NotEnoughPeers
        409, naming every peer and why (and any other problem, in ``problems``).
    JobRequestInvalid
        The pieces do not fit together (422, one ``{"loc", "msg"}`` item each): a model
        that does not fit the data or is over the parameter budget, too few rows for
        the peers, ``min_peers`` above the number of peers. The specs themselves were
        validated with the request.
    """
    model, training, aggregation = request.model, request.training, request.aggregation
    ds = directory.datasets.get(request.dataset_id)
    if ds is None or ds.owner_id is None or not (who.is_admin or ds.owner_id == who.subject):
        raise DatasetNotFound(f"no dataset {request.dataset_id!r}")
    if ds.state != "validated" or ds.feature_spec is None:
        raise DatasetNotReady(
            f"dataset {request.dataset_id!r} is {ds.state}, not validated",
            detail={"state": ds.state},
        )
    features = ds.feature_spec.data_shape
    source, source_problems = _source(request, who, jobs or {}, ds.feature_spec)
    weights, weight_problems = _weights(request, who, directory, features)
    source_problems += weight_problems
    if request.peers is not None:
        peers = list(request.peers)
        unusable = _named_problems(peers, who, directory)
        problems = _fit_problems(request, features, len(peers), ds.train_rows, ds.feature_spec)
        problems += source_problems
        if unusable:
            raise PeersUnavailable(
                f"{len(unusable)} of the named peers cannot take part in a job now",
                detail={"peers": unusable, **({"problems": problems} if problems else {})},
            )
    else:
        assert request.selection is not None
        count = request.selection.count
        problems = (
            _fit_problems(request, features, count, ds.train_rows, ds.feature_spec)
            + source_problems
        )
        usable = [p for p in directory.peers.values() if p.usable and p.usable_by(who)]
        try:
            peers = _select(request.selection, usable, who)
        except NotEnoughPeers as exc:
            if not problems:
                raise
            detail = {**(exc.detail or {}), "problems": problems}
            raise NotEnoughPeers(exc.message, detail=detail) from None
    if problems:
        raise JobRequestInvalid(
            f"the job cannot run as asked ({len(problems)} problem(s))", detail=problems
        )
    return JobCreated(
        job_id=job_id,
        owner_id=who.subject,
        name=request.name,
        dataset_id=request.dataset_id,
        peers=tuple(peers),
        sharding=ShardingSpec(
            strategy=request.sharding.strategy, alpha=request.sharding.alpha, seed=training.seed
        ),
        model=model,
        training=training,
        aggregation=aggregation.for_new_job(),
        init_from=source,
        init_weights=weights,
    )


def check_running_quota(jobs: Iterable[Job], who: Principal, limit: int) -> None:
    """Refuse a new job to a user (not an admin) with ``limit`` jobs not ended.

    Raises
    ------
    QuotaExceeded
        429, with the quota, the limit and the use in ``detail``.
    """
    if who.is_admin:
        return
    running = sum(1 for j in jobs if j.owner_id == who.subject and j.terminal is None)
    if running >= limit:
        raise QuotaExceeded(
            f"{running} of your jobs are still running; the limit is {limit}",
            detail={"quota": "running_jobs", "limit": limit, "used": running},
        )
