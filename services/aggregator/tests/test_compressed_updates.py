"""Compressed updates at the aggregator, driven through ``on_peer`` as the platform does:
decoded before any check, recorded with their bytes, hostile encodings refused."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from peertrain.aggregator.domain import codes
from peertrain.aggregator.usecases.numerics import load_state, state_nbytes
from peertrain.common.events.datasets import ArtifactRef
from peertrain.common.events.models import ModelVersionCreated, UpdateAccepted, UpdateRejected
from peertrain.common.events.training import IncludedUpdate, JobCreated, RoundClosed
from peertrain.common.specs import CompressionSpec
from peertrain.ml.weights import state_to_bytes
from peertrain.ml.weights.compression import compress_update, decode_update

from .conftest import JOB, configured, opened, task
from .test_application import HOLDOUT_KEY, Platform, _holdout

INT8 = CompressionSpec(kind="int8")
TOPK = CompressionSpec(kind="topk", ratio=0.1)


async def _configure(platform: Platform, compression: CompressionSpec) -> dict[str, torch.Tensor]:
    """A job whose updates travel as ``compression``, round 1 open with two tasks; its
    version 0."""
    holdout = _holdout()
    await platform.blobs.put_bytes(HOLDOUT_KEY, holdout)
    ref = ArtifactRef(key=HOLDOUT_KEY, sha256=hashlib.sha256(holdout).hexdigest(), size=1)
    cfg = configured()
    training = cfg.training.model_copy(update={"compression": compression})
    model = cfg.model.model_copy(update={"hidden": (512,)})  # bytes that outweigh a header
    await platform.job_event(
        JobCreated(job_id=JOB, owner_id="u1", name="n", dataset_id="d", peers=("p0", "p1"))
    )
    await platform.job_event(
        cfg.model_copy(update={"holdout": ref, "training": training, "model": model})
    )
    await platform.job_event(opened())
    return load_state(await platform.blobs.get_bytes(f"models/{JOB}/v0.safetensors"))


def _delta(base: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    return {k: 0.01 * torch.randn(v.shape, generator=g) for k, v in base.items()}


@pytest.fixture
def platform(tmp_path: Path) -> Platform:
    return Platform(tmp_path)


@pytest.mark.parametrize("rebuilt", [False, True], ids=["running-sum", "rebuilt"])
@pytest.mark.parametrize("spec", [INT8, TOPK], ids=["int8", "topk"])
async def test_a_compressed_update_is_decoded_recorded_with_its_bytes_and_folded(
    platform: Platform, spec: CompressionSpec, rebuilt: bool
) -> None:
    """Folded as it arrives, or decoded again from the aggregator's copy when the round
    is rebuilt at its close (another instance checked it): the same version."""
    base = await _configure(platform, spec)
    t0 = task(0, "p0")
    await platform.job_event(t0)
    delta = _delta(base)
    encoded = compress_update(delta, spec).tensors
    data = state_to_bytes(encoded)
    await platform.upload(t0, data)
    accepted = (await platform.model_events())[-1]
    assert isinstance(accepted, UpdateAccepted), accepted
    assert accepted.compression == spec.kind
    assert accepted.size == len(data)
    assert accepted.dense_size == state_nbytes(base)
    assert accepted.size < accepted.dense_size

    inc = IncludedUpdate(
        shard=0, peer_id="p0", task_id=t0.task_id, key=accepted.key, sha256=accepted.sha256
    )
    if rebuilt:  # as if another instance had checked it: no running sum (nor version) here
        platform.app.let_go(JOB)
    await platform.job_event(
        RoundClosed(job_id=JOB, round=1, attempt=1, reason="deadline", included=(inc,))
    )
    created = next(
        e
        for e in await platform.model_events()
        if isinstance(e, ModelVersionCreated) and e.version == 1
    )
    v1 = load_state(await platform.blobs.get_bytes(created.key))
    sent = decode_update(encoded, base, spec)
    # FedAvg of one update: the version is the base plus what the peer sent, decoded
    assert all(torch.allclose(v1[k], base[k] + sent[k]) for k in base)


def _out_of_range(encoded: dict[str, torch.Tensor]) -> None:
    name = next(k for k in encoded if k.endswith(".__idx__"))
    encoded[name] = encoded[name].clone().fill_(1 << 30)


def _bad_scale(encoded: dict[str, torch.Tensor]) -> None:
    name = next(k for k in encoded if k.endswith(".__scale__"))
    encoded[name] = torch.full_like(encoded[name], float("inf"))


@pytest.mark.parametrize(
    ("spec", "tamper"),
    [(TOPK, _out_of_range), (INT8, _bad_scale), (INT8, None)],
    ids=["topk-index-out-of-range", "int8-infinite-scale", "int8-job-sent-float32"],
)
async def test_a_hostile_encoding_is_refused_with_a_code_and_a_strike(
    platform: Platform, spec: CompressionSpec, tamper: object
) -> None:
    base = await _configure(platform, spec)
    t0 = task(0, "p0")
    await platform.job_event(t0)
    if tamper is None:
        encoded = _delta(base)  # the dense delta, not what the job asked for
    else:
        encoded = compress_update(_delta(base), spec).tensors
        tamper(encoded)  # type: ignore[operator]
    await platform.upload(t0, state_to_bytes(encoded))
    rejected = (await platform.model_events())[-1]
    assert isinstance(rejected, UpdateRejected), rejected
    assert rejected.code == codes.BAD_ENCODING
    assert rejected.strike
    assert "compressed update refused" in rejected.reason


async def test_the_size_cap_follows_the_jobs_encoding(platform: Platform) -> None:
    """A top-k 1% job's update may weigh what 1% of the values and the header do, not
    what the dense model does."""
    spec = CompressionSpec(kind="topk", ratio=0.01)
    settings = platform.app.settings
    platform.app.settings = settings.model_copy(update={"update_slack_bytes": 4096})
    base = await _configure(platform, spec)
    t0 = task(0, "p0")
    await platform.job_event(t0)
    dense = state_to_bytes(_delta(base))
    assert len(dense) > state_nbytes(base, spec) + platform.app.settings.update_slack_bytes
    await platform.upload(t0, dense)
    rejected = (await platform.model_events())[-1]
    assert isinstance(rejected, UpdateRejected) and rejected.code == codes.TOO_LARGE
