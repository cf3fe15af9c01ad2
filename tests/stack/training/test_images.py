"""Images at their own sizes, labelled by a CSV, kept as pixels, augmented on the peers.

A user zips photos of three shapes (landscape, portrait, square) with ``labels.csv``
naming each file and its class, and asks for 16x16 (cropped to keep the aspect ratio).
The dataset keeps uint8 pixels: the shards the peers download are 4 times smaller
than floats. A job augments every batch (random crop with padding, flip, brightness)
on two real peers and still learns the classes.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

import numpy as np
import pytest
from training_support import Platform, create_job, dataset, finished, peers_active

from peertrain.common.blobs import BlobStore
from peertrain.common.settings import ServiceSettings

pytestmark = [pytest.mark.stack]

SHAPES = ((48, 32), (32, 48), (40, 40))


def _photos(classes: int = 3, per_class: int = 24, seed: int = 1) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(seed)
    colours = rng.uniform(40, 215, size=(classes, 3))
    out = io.BytesIO()
    lines = ["file,label"]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for c in range(classes):
            for n in range(per_class):
                w, h = SHAPES[n % len(SHAPES)]
                pixels = colours[c] + rng.normal(0, 30, size=(h, w, 3))
                png = io.BytesIO()
                Image.fromarray(pixels.clip(0, 255).astype(np.uint8), "RGB").save(png, "PNG")
                name = f"photos/{c * per_class + n:04}.png"
                zf.writestr(name, png.getvalue())
                lines.append(f"{name},kind{c}")
        zf.writestr("labels.csv", "\n".join(lines) + "\n")
    return out.getvalue()


async def test_photos_of_any_shape_train_from_pixels_with_augmentation(
    platform: Platform, http: Any
) -> None:
    fields = {"image_size": "16x16", "image_fit": "crop"}
    dataset_id = await dataset(platform, "photos", "photos.zip", _photos(), **fields)
    spec = (await http.get(f"/api/datasets/{dataset_id}")).json()
    assert spec["input_shape"] == [3, 16, 16] and spec["classes"] == ["kind0", "kind1", "kind2"]
    assert spec["image"]["stored"] == "uint8" and spec["image"]["fit"] == "crop"
    assert spec["rows"] == 72

    peers = [platform.peer(f"p{i}").peer_id for i in range(2)]
    await peers_active(platform, peers)
    augment = {"crop_padding": 2, "hflip": True, "color_jitter": {"brightness": 0.1}}
    body = {
        "name": "photos-augmented",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": {"arch": "cnn"},
        "training": {"rounds": 4, "batch_size": 8, "lr": 0.05, "momentum": 0.9, "augment": augment},
    }
    job_id = await create_job(platform, body)
    job = await finished(platform, job_id, timeout=600)
    assert job["state"] == "completed", job
    rounds = (await http.get(f"/api/jobs/{job_id}/metrics")).json()["rounds"]
    assert rounds[-1]["accuracy"] >= 0.8, [r["accuracy"] for r in rounds]

    settings = ServiceSettings(s3_bucket=platform.bucket)
    async with BlobStore(settings.blob_store_config()) as blobs:
        raw = await blobs.get_bytes(f"jobs/{job_id}/shards/0.npz")
    with np.load(io.BytesIO(raw), allow_pickle=False) as shard:
        x = shard["X"]
    assert x.dtype == np.uint8 and x.shape[1:] == (3, 16, 16)  # pixels, as sent to the peer
    assert len(raw) < x.shape[0] * 3 * 16 * 16 * 4 / 3  # well under floats' size

    r = await http.post("/api/jobs", json={**body, "training": {"augment": {"crop_padding": 17}}})
    assert r.status_code == 422, r.text
    [problem] = r.json()["error"]["detail"]
    assert problem["loc"] == "training.augment.crop_padding", problem
