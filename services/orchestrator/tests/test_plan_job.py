"""Planning a job (``plan_job``) and the running-jobs quota: every refusal, and what an
accepted request turns into. Pure: a :class:`Directory` filled by hand, no stack."""

from __future__ import annotations

from itertools import count
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic import ValidationError

from peertrain.common.errors import QuotaExceeded
from peertrain.common.events import NewEvent
from peertrain.common.events.datasets import FeatureSpec as DataFeatures
from peertrain.common.events.models import ModelVersionCreated
from peertrain.common.events.peers import PEER_PROTOCOL
from peertrain.common.events.training import JobCancelled, JobCreated, ModelSource, ShardingSpec
from peertrain.common.security import Principal
from peertrain.orchestrator.domain import Job
from peertrain.orchestrator.domain.directory import DatasetInfo, Directory, PeerInfo
from peertrain.orchestrator.domain.errors import (
    DatasetNotFound,
    DatasetNotReady,
    JobRequestInvalid,
    NotEnoughPeers,
    PeersUnavailable,
)
from peertrain.orchestrator.domain.job_request import JobRequest
from peertrain.orchestrator.domain.request import check_running_quota, plan_job

USER = Principal("u1", frozenset({"user"}), "t", 0, 0)
ADMIN = Principal("root", frozenset({"user", "admin"}), "t", 0, 0)
FEATURES = {
    "kind": "table",
    "input_shape": [4],
    "input_size": 4,
    "classes": ["a", "b"],
    "columns": [{"name": "x", "type": "numeric", "offset": 0, "width": 4}],
    "label_column": "y",
}


def peer(peer_id: str, owner: str | None = "u1", **state: Any) -> PeerInfo:
    """A usable peer of ``owner`` unless ``state`` says otherwise."""
    fields: dict[str, Any] = {"registered": True, "online": True, "memory_gb": 8.0, **state}
    return PeerInfo(peer_id, owner_id=owner, **fields)


def directory(*peers: PeerInfo, **dataset: Any) -> Directory:
    """Dataset ``d1`` (validated, 100 training rows, the caller's) and ``peers``."""
    d = Directory()
    fields: dict[str, Any] = {
        "owner_id": "u1",
        "state": "validated",
        "feature_spec": FEATURES,
        "train_rows": 100,
        "classes": ("a", "b"),
        **dataset,
    }
    if isinstance(fields["feature_spec"], dict):
        fields["feature_spec"] = DataFeatures.model_validate(fields["feature_spec"])
    d.datasets["d1"] = DatasetInfo("d1", **fields)
    d.peers.update((p.peer_id, p) for p in peers)
    return d


def request(**body: Any) -> JobRequest:
    return JobRequest.model_validate({"name": "j", "dataset_id": "d1", **body})


def plan(d: Directory, who: Principal = USER, **body: Any) -> JobCreated:
    return plan_job("j1", request(**body), who, d)


# -- accepted ------------------------------------------------------------------------


def test_named_peers_keep_their_order_and_the_sharding_seed_is_the_training_seed() -> None:
    d = directory(peer("p2"), peer("p1"), peer("p3", "other", shared=True))
    created = plan(
        d,
        peers=["p3", "p1", "p2"],
        training={"rounds": 3, "seed": 7},
        sharding={"strategy": "dirichlet", "alpha": 0.3},
    )
    assert created.job_id == "j1"
    assert created.owner_id == "u1"
    assert created.dataset_id == "d1"
    assert created.peers == ("p3", "p1", "p2")
    assert created.sharding == ShardingSpec(strategy="dirichlet", alpha=0.3, seed=7)


def test_an_admin_may_use_anyones_dataset_and_unshared_peers() -> None:
    d = directory(peer("p1", "stranger"), owner_id="stranger")
    assert plan(d, ADMIN, peers=["p1"]).peers == ("p1",)
    assert plan(d, ADMIN, selection={"count": 1}).peers == ("p1",)


def test_a_selection_skips_peers_that_cannot_work_and_ranks_the_callers_own_first() -> None:
    d = directory(
        peer("a-offline", online=False),
        peer("b-unregistered", registered=False),
        peer("c-disabled", disabled=True),
        peer("d-strangers-unshared", "stranger"),
        peer("e-shared", "other", shared=True, memory_gb=32.0),
        peer("f-own", memory_gb=1.0),
    )
    assert plan(d, selection={"count": 2}).peers == ("f-own", "e-shared")


def test_selection_filters_pick_by_device_and_memory() -> None:
    d = directory(
        peer("cpu-big", device="cpu", memory_gb=64.0),
        peer("gpu-small", device="cuda", memory_gb=4.0),
        peer("gpu-big", device="cuda", memory_gb=24.0),
    )
    filters = {"device": "cuda", "min_memory_gb": 8}
    assert plan(d, selection={"count": 1, "filters": filters}).peers == ("gpu-big",)
    assert plan(d, selection={"count": 2, "filters": {"device": "cuda"}}).peers == (
        "gpu-big",
        "gpu-small",
    )


# -- refusals: peers ---------------------------------------------------------------


def test_named_peers_that_cannot_take_part_are_all_named_with_the_reason() -> None:
    d = directory(
        peer("ok"),
        peer("strangers", "stranger"),  # exists, but not the caller's to see
        peer("ghost", None),  # only heard of (online), never enrolled
        peer("off", online=False),
        peer("new", registered=False),
        peer("banned", disabled=True, shared=True),
        peer("old", protocol=PEER_PROTOCOL - 1),  # its runtime would drop the tasks
        peer("current", protocol=PEER_PROTOCOL),
    )
    names = ["ok", "nobody", "strangers", "ghost", "off", "new", "banned", "old", "current"]
    with pytest.raises(PeersUnavailable) as refused:
        plan(d, peers=names)
    assert refused.value.status_code == 409
    assert refused.value.detail == {
        "peers": [
            {"peer_id": "nobody", "problem": "unknown"},
            {"peer_id": "strangers", "problem": "unknown"},
            {"peer_id": "ghost", "problem": "unknown"},
            {"peer_id": "off", "problem": "offline"},
            {"peer_id": "new", "problem": "not_registered"},
            {"peer_id": "banned", "problem": "disabled"},
            {"peer_id": "old", "problem": "outdated"},
        ]
    }


def test_a_selection_larger_than_the_usable_matching_peers_is_refused() -> None:
    d = directory(
        peer("p1"),
        peer("p2", device="cuda"),
        peer("off", online=False),
        peer("strangers", "stranger"),
        peer("old", protocol=1),  # announced an older task protocol: never selected
    )
    with pytest.raises(NotEnoughPeers) as refused:
        plan(d, selection={"count": 3})
    assert refused.value.detail == {"requested": 3, "available": 2}
    with pytest.raises(NotEnoughPeers) as refused:
        plan(d, selection={"count": 2, "filters": {"device": "cuda"}})
    assert refused.value.detail == {"requested": 2, "available": 1}


@pytest.mark.parametrize(
    "body",
    [
        {},  # neither peers nor a selection
        {"peers": ["p1"], "selection": {"count": 1}},  # both
        {"peers": []},
        {"peers": ["p1", "p1"]},
        {"selection": {"count": 0}},
        {"selection": {"count": 1, "filters": {"device": "tpu"}}},
        {"selection": {"count": 1, "filters": {"min_memory_gb": -1}}},
        {"selection": {"count": 1, "filters": {"colour": "red"}}},
        {"selection": {"count": 1, "extra": True}},
    ],
)
def test_a_malformed_choice_of_peers_is_refused_before_planning(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        request(**body)


def test_min_peers_above_the_number_of_peers_is_refused() -> None:
    d = directory(peer("p1"), peer("p2"))
    with pytest.raises(JobRequestInvalid) as refused:
        plan(d, peers=["p1", "p2"], aggregation={"min_peers": 3})
    assert refused.value.status_code == 422
    assert plan(d, peers=["p1", "p2"], aggregation={"min_peers": 2}).peers == ("p1", "p2")


def test_fewer_training_rows_than_peers_is_refused() -> None:
    d = directory(peer("p1"), peer("p2"), peer("p3"), train_rows=2)
    with pytest.raises(JobRequestInvalid):
        plan(d, selection={"count": 3})
    assert plan(d, selection={"count": 2}).peers == ("p1", "p2")


# -- refusals: dataset and specs ---------------------------------------------------


@pytest.mark.parametrize("dataset_id", ["d1", "nope"])
def test_an_unknown_or_someone_elses_dataset_is_not_found(dataset_id: str) -> None:
    d = directory(peer("p1"), owner_id="stranger")
    with pytest.raises(DatasetNotFound):
        plan(d, peers=["p1"], dataset_id=dataset_id)


def test_a_dataset_only_heard_of_is_not_found() -> None:
    d = directory(peer("p1"), owner_id=None)
    with pytest.raises(DatasetNotFound):
        plan(d, ADMIN, peers=["p1"])


@pytest.mark.parametrize("state", ["validating", "rejected", "deleted"])
def test_a_dataset_that_is_not_validated_is_not_ready(state: str) -> None:
    d = directory(peer("p1"), state=state, feature_spec=None)
    with pytest.raises(DatasetNotReady) as refused:
        plan(d, peers=["p1"])
    assert refused.value.detail == {"state": state}


@pytest.mark.parametrize(
    "body",
    [
        {"model": {"arch": "transformer"}},
        {"model": {"arch": "mlp", "hidden": [0]}},
        {"training": {"rounds": 0}},
        {"training": {"colour": "red"}},
        {"aggregation": {"strategy": "nonesuch"}},
    ],
)
def test_an_invalid_spec_is_refused_by_the_request_schema(body: dict[str, Any]) -> None:
    """The job request's specs are typed: the HTTP edge answers 422 before any plan."""
    with pytest.raises(ValidationError):
        request(**body)


@pytest.mark.parametrize(
    "body",
    [
        {"model": {"arch": "cnn"}},  # the dataset is a table, not images
        {"model": {"arch": "mlp", "hidden": [16_384] * 8}},  # over the parameter budget
    ],
)
def test_a_spec_that_does_not_fit_the_data_is_refused(body: dict[str, Any]) -> None:
    d = directory(peer("p1"))
    with pytest.raises(JobRequestInvalid) as refused:
        plan(d, peers=["p1"], **body)
    assert refused.value.status_code == 422
    [problem] = refused.value.detail
    assert problem["loc"] in ("model", "model.arch") and problem["msg"]  # where it is


def test_every_problem_is_reported_at_once_with_the_peers_first() -> None:
    d = directory(peer("p1"), peer("off", online=False), train_rows=1)
    body: dict[str, Any] = {"model": {"arch": "cnn"}, "aggregation": {"min_peers": 3}}
    with pytest.raises(PeersUnavailable) as refused:
        plan(d, peers=["nobody", "off"], **body)
    detail = refused.value.detail
    assert detail["peers"] == [
        {"peer_id": "nobody", "problem": "unknown"},
        {"peer_id": "off", "problem": "offline"},
    ]
    assert [p["loc"] for p in detail["problems"]] == [
        "model.arch",
        "aggregation.min_peers",
        "peers",
    ]
    with pytest.raises(JobRequestInvalid) as invalid:
        plan(d, peers=["p1"], **body)
    assert [p["loc"] for p in invalid.value.detail] == ["model.arch", "aggregation.min_peers"]
    with pytest.raises(NotEnoughPeers) as short:
        plan(d, selection={"count": 2}, **body)
    assert short.value.detail["requested"] == 2
    assert [p["loc"] for p in short.value.detail["problems"]] == [
        "model.arch",
        "aggregation.min_peers",
        "peers",
    ]


# -- the running-jobs quota --------------------------------------------------------

JOB_NUMBERS = count(1)


def job(owner: str, *, ended: bool = False) -> Job:
    j = Job(f"{owner}-{next(JOB_NUMBERS)}")
    events: list[Any] = [
        JobCreated(
            job_id=j.job_id,
            owner_id=owner,
            name="j",
            dataset_id="d1",
            peers=("p1",),
            sharding=ShardingSpec(),
            model={"arch": "logreg"},
            training={},
            aggregation={},
        )
    ]
    if ended:
        events.append(JobCancelled(job_id=j.job_id, by=owner))
    for seq, data in enumerate(events, start=1):
        j.apply(NewEvent.of(data, producer="test").stored_as(f"job:{j.job_id}", seq, seq))
    return j


def test_the_running_jobs_quota_counts_only_the_callers_jobs_not_ended() -> None:
    jobs = [job("u1"), job("u1", ended=True), job("other"), job("other")]
    check_running_quota(jobs, USER, limit=2)
    jobs.append(job("u1"))
    with pytest.raises(QuotaExceeded) as refused:
        check_running_quota(jobs, USER, limit=2)
    assert refused.value.detail == {"quota": "running_jobs", "limit": 2, "used": 2}
    check_running_quota(jobs, ADMIN, limit=0)  # admins have no quota


# -- starting from another job's model version ----------------------------------------


def source_job(owner: str = "u1", model: dict[str, Any] | None = None) -> Job:
    """Job ``src`` of ``owner``: an MLP on ``FEATURES``, model versions 0 to 3."""
    job = Job("src")
    job.created = JobCreated(
        job_id="src",
        owner_id=owner,
        name="src",
        dataset_id="d0",
        peers=("p1",),
        model=model or {"arch": "mlp"},
    )
    job.configured = cast(Any, SimpleNamespace(feature_spec=DataFeatures.model_validate(FEATURES)))
    for v in range(4):
        job.versions[v] = ModelVersionCreated(
            job_id="src",
            version=v,
            key=f"models/src/v{v}.safetensors",
            sha256=f"{v}" * 64,
            size=1,
            strategy="fedavg",
        )
    return job


def test_a_job_starts_from_another_jobs_version_its_newest_by_default() -> None:
    d, jobs = directory(peer("p1")), {"src": source_job()}
    created = plan_job("j1", request(peers=["p1"], init_from={"job_id": "src"}), USER, d, jobs)
    assert created.init_from == ModelSource(
        job_id="src", version=3, key="models/src/v3.safetensors", sha256="3" * 64
    )
    older = request(peers=["p1"], init_from={"job_id": "src", "version": 1})
    assert plan_job("j1", older, USER, d, jobs).init_from.version == 1  # type: ignore[union-attr]
    assert plan(d, peers=["p1"]).init_from is None


@pytest.mark.parametrize(
    ("jobs", "init_from", "body", "loc"),
    [
        ({}, {"job_id": "src"}, {}, "init_from.job_id"),
        ({"src": source_job("stranger")}, {"job_id": "src"}, {}, "init_from.job_id"),
        ({"src": source_job()}, {"job_id": "src", "version": 9}, {}, "init_from.version"),
        ({"src": source_job()}, {"job_id": "src"}, {"model": {"arch": "logreg"}}, "init_from"),
    ],
)
def test_a_source_that_cannot_be_used_is_a_problem_named_with_the_rest(
    jobs: dict[str, Job], init_from: dict[str, Any], body: dict[str, Any], loc: str
) -> None:
    d = directory(peer("p1"))
    req = request(peers=["p1"], init_from=init_from, aggregation={"min_peers": 2}, **body)
    with pytest.raises(JobRequestInvalid) as refused:
        plan_job("j1", req, USER, d, jobs)
    assert [p["loc"] for p in refused.value.detail] == ["aggregation.min_peers", loc]


def test_a_source_on_data_of_another_shape_is_refused() -> None:
    other = {**FEATURES, "classes": ["a", "b", "c"]}
    d = directory(peer("p1"), feature_spec=other)
    with pytest.raises(JobRequestInvalid) as refused:
        plan_job("j1", request(peers=["p1"], init_from={"job_id": "src"}), USER, d,
                 {"src": source_job()})  # fmt: skip
    assert "shape or classes differ" in refused.value.detail[0]["msg"]


def _images(stored: str | None) -> dict[str, Any]:
    image = {"mode": "L", "channels": 1, "height": 8, "width": 8, "mean": [0.5], "std": [0.2]}
    if stored is not None:
        image["stored"] = stored
    return {
        "kind": "images",
        "input_shape": [1, 8, 8],
        "input_size": 64,
        "classes": ["a", "b"],
        "image": image,
        "label_column": "class",
    }


@pytest.mark.parametrize(
    ("features", "augment", "where", "says"),
    [
        (FEATURES, {"hflip": True}, "training.augment", "table"),
        (_images(None), {"hflip": True}, "training.augment", "upload it again"),
        (_images("uint8"), {"crop_padding": 9}, "training.augment.crop_padding", "8x8"),
    ],
)
def test_augmentation_is_refused_where_it_cannot_apply(
    features: dict[str, Any], augment: dict[str, Any], where: str, says: str
) -> None:
    d = directory(peer("p1"), feature_spec=features)
    with pytest.raises(JobRequestInvalid) as refused:
        plan(d, peers=["p1"], training={"augment": augment})
    [problem] = refused.value.detail
    assert problem["loc"] == where and says in problem["msg"], problem


def test_augmentation_of_images_kept_as_pixels_is_planned() -> None:
    d = directory(peer("p1"), feature_spec=_images("uint8"))
    augment = {"crop_padding": 2, "hflip": True, "color_jitter": {"brightness": 0.2}}
    created = plan(d, peers=["p1"], training={"augment": augment})
    assert created.training.augment is not None and created.training.augment.crop_padding == 2
