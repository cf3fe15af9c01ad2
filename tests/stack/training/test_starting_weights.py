"""A job starts from weights the user uploaded: version 0 is them, bit for bit; weights
that do not fit the model are refused at the job's creation, each bad tensor named;
files that are not weights are refused at the upload, nothing of them run.

The user trains on the contract suite's digits (64 features, 10 classes) with an MLP;
the weights are that model's, built and saved with plain torch as a researcher would
(``torch.save(model.state_dict())``).
"""

from __future__ import annotations

import hashlib
import io
import pickle
from typing import Any

import pytest
import torch
from safetensors.torch import load as load_safetensors
from test_contract import digits
from training_support import (
    Platform,
    colour_images_zip,
    create_job,
    dataset,
    finished,
    peers_active,
)

from peertrain.common.blobs import BlobStore
from peertrain.common.settings import ServiceSettings
from peertrain.ml.weights import state_to_bytes
from peertrain.ml.zoo import build_model

pytestmark = [pytest.mark.stack]

MODEL = {"arch": "mlp", "hidden": [24]}
FEATURES = {"input_size": 64, "num_classes": 10}


def _pt(state: dict[str, torch.Tensor]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


async def _upload(http: Any, data: bytes, name: str) -> Any:
    return await http.post(
        "/api/models/weights",
        content=data,
        params={"name": name},
        headers={"Content-Type": "application/octet-stream"},
    )


class _Boom:
    def __reduce__(self) -> tuple[Any, ...]:
        return (print, ("this must never run",))


async def test_a_job_starts_from_uploaded_weights_bit_for_bit(
    platform: Platform, http: Any
) -> None:
    dataset_id = await digits(platform)
    peers = [platform.peer(n).peer_id for n in ("p0", "p1")]
    await peers_active(platform, peers)
    mine = build_model(MODEL, FEATURES, seed=4242).state_dict()
    r = await _upload(http, _pt(mine), "mine.pt")
    assert r.status_code == 201, r.text
    uploaded = r.json()
    assert [t["name"] for t in uploaded["tensors"]] == list(mine)
    assert uploaded["parameters"] == sum(t.numel() for t in mine.values())

    body = {
        "name": "from-weights",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "training": {"rounds": 1},
        "init_weights": uploaded["weights_id"],
    }
    job_id = await create_job(platform, body)
    job = await finished(platform, job_id, timeout=300)
    assert job["state"] == "completed", job
    assert job["init_weights"]["weights_id"] == uploaded["weights_id"]
    versions = (await http.get(f"/api/models/{job_id}")).json()["versions"]
    settings = ServiceSettings(s3_bucket=platform.bucket)
    async with BlobStore(settings.blob_store_config()) as blobs:
        v0 = load_safetensors(await blobs.get_bytes(versions[0]["key"]))
    assert v0.keys() == mine.keys()
    for name, tensor in mine.items():  # bit for bit
        assert v0[name].dtype == tensor.dtype and torch.equal(v0[name], tensor), name
    assert versions[0]["sha256"] == hashlib.sha256(state_to_bytes(mine)).hexdigest()


async def test_weights_that_do_not_fit_the_model_are_refused_naming_each_tensor(
    platform: Platform, http: Any
) -> None:
    dataset_id = await digits(platform)
    peers = [platform.peer("p0").peer_id]
    await peers_active(platform, peers)
    other = build_model({"arch": "mlp", "hidden": [16]}, FEATURES, seed=1).state_dict()
    other["layers.0.weight"] = other["layers.0.weight"].half()  # a wrong dtype too
    other["extra.bias"] = torch.zeros(3)
    del other["layers.2.bias"]
    r = await _upload(http, state_to_bytes(other), "other.safetensors")
    assert r.status_code == 201, r.text
    body = {
        "name": "misfit",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": MODEL,
        "init_weights": r.json()["weights_id"],
    }
    r = await http.post("/api/jobs", json=body)
    assert r.status_code == 422, r.text
    problems = {p["loc"]: p["msg"] for p in r.json()["error"]["detail"]}
    assert "F16[24, 64]" not in str(problems)  # the model's shape is [24, 64], F32
    assert problems["init_weights.layers.0.weight"] == (
        "F16[16, 64] uploaded, the model has F32[24, 64]"
    )
    assert problems["init_weights.layers.0.bias"] == "F32[16] uploaded, the model has F32[24]"
    assert problems["init_weights.layers.2.weight"] == (
        "F32[10, 16] uploaded, the model has F32[10, 24]"
    )
    assert problems["init_weights.layers.2.bias"].startswith("missing: the model has F32[10]")
    assert problems["init_weights.extra.bias"].startswith("unexpected")
    r = await http.post("/api/jobs", json={**body, "init_weights": "nope"})
    assert r.status_code == 422 and "no weights 'nope'" in r.text, r.text


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (pickle.dumps({"w": _Boom()}), "more than tensors"),
        (_pt({"w": torch.zeros(2)})[:50], "not a readable .pt file"),
        (b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}xxxxxx", "safetensors"),
        (_pt({"w": torch.tensor([1.0, float("nan")])}), "NaN"),
        (_pt([torch.zeros(2)]), "not a state dict"),
        (b"", "empty"),
    ],
    ids=["pickle-with-code", "truncated", "malformed", "nan", "a-list", "empty"],
)
async def test_files_that_are_not_weights_are_refused_and_nothing_runs(
    platform: Platform, http: Any, data: bytes, says: str
) -> None:
    r = await _upload(http, data, "bad")
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "weights_invalid"
    assert says in r.json()["error"]["message"], r.text
    for log in platform.base.glob("aggregator*.log"):
        assert "this must never run" not in log.read_text(errors="replace")


async def test_a_named_resnet18_starts_from_uploaded_weights_bit_for_bit(
    platform: Platform, http: Any
) -> None:
    """torchvision's ResNet-18 by name (CIFAR stem), from a researcher's weights: version
    0 is them; a ResNet-34's weights are refused, the first mismatches named."""
    dataset_id = await dataset(platform, "colours", "colours.zip", colour_images_zip(3, 12))
    peers = [platform.peer("p0").peer_id]
    await peers_active(platform, peers)
    model = {"arch": "torchvision", "name": "resnet18", "cifar_stem": True}
    features = {"image_shape": [3, 32, 32], "num_classes": 3}
    mine = build_model(model, features, seed=99).state_dict()
    r = await _upload(http, _pt(mine), "resnet18.pt")
    assert r.status_code == 201, r.text
    body = {
        "name": "resnet18-from-weights",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": model,
        "training": {"rounds": 1, "batch_size": 16},
        "init_weights": r.json()["weights_id"],
    }
    job_id = await create_job(platform, body)
    job = await finished(platform, job_id, timeout=600)
    assert job["state"] == "completed", job
    versions = (await http.get(f"/api/models/{job_id}")).json()["versions"]
    settings = ServiceSettings(s3_bucket=platform.bucket)
    async with BlobStore(settings.blob_store_config()) as blobs:
        v0 = load_safetensors(await blobs.get_bytes(versions[0]["key"]))
    assert v0.keys() == mine.keys()
    assert all(torch.equal(v0[k], t) and v0[k].dtype == t.dtype for k, t in mine.items())

    other = build_model({**model, "name": "resnet34"}, features).state_dict()
    r = await _upload(http, _pt(other), "resnet34.pt")
    assert r.status_code == 201, r.text
    r = await http.post("/api/jobs", json={**body, "init_weights": r.json()["weights_id"]})
    assert r.status_code == 422, r.text
    problems = {p["loc"]: p["msg"] for p in r.json()["error"]["detail"]}
    assert problems["init_weights.layer1.2.conv1.weight"].startswith("unexpected")
