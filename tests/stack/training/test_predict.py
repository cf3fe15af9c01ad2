"""``peertrain predict`` on the raw MNIST CSV gives the job's reported holdout accuracy,
with the final model and with any model version downloaded like it.

The demo's data and model (MNIST 10k as uploaded, an MLP), kept short: 2 peers, 2 rounds
(``short_mnist_job``, shared with test_mlflow.py).
The downloaded ``final.pt`` is used by the real CLI in a fresh process, on the very
``.csv.gz`` that was uploaded, with ``--holdout``. Versions (a number, or ``best``) are
downloaded through the SDK, which checks each file's announced sha256, from a completed
job and from one cancelled midway (which has no final model).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from test_contract import digits
from training_support import GATEWAY, Platform, create_job, finished, mnist_csv_gz, wait_for

from peertrain.client import AsyncClient
from peertrain.ml.export import load

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))

from contract_specs import CASES

pytestmark = [pytest.mark.stack]


def _predict(model: Path, data: Path, out: Path) -> dict[str, Any]:
    """``peertrain predict --holdout --json`` in a fresh process; its summary."""
    args = ["predict", str(data), "--model", str(model), "--holdout", "--json", "-o", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "peertrain.client.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def _weights(path: Path) -> list[torch.Tensor]:
    """The tensors of a downloaded model as ``peertrain.ml.export.load`` rebuilds it."""
    model, _ = load(path)
    return list(model.state_dict().values())


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(map(torch.equal, a, b))


def _sdk(platform: Platform) -> AsyncClient:
    assert platform.auth is not None and platform.auth.tokens is not None
    return AsyncClient(GATEWAY, tokens=platform.auth.tokens, timeout=120)


async def test_predict_on_the_raw_csv_matches_the_reported_holdout_accuracy(
    short_mnist_job: str, http: Any, tmp_path: Path
) -> None:
    job_id = short_mnist_job
    rounds = (await http.get(f"/api/jobs/{job_id}/metrics")).json()["rounds"]
    reported = rounds[-1]["accuracy"]

    r = await http.get(f"/api/models/{job_id}/final", params={"format": "pt"})
    assert r.status_code == 200, r.text
    model, data = tmp_path / "model.pt", tmp_path / "mnist-10k.csv.gz"
    model.write_bytes(r.content)
    data.write_bytes(mnist_csv_gz())
    summary = _predict(model, data, tmp_path / "p.csv")
    print(json.dumps({"job": job_id, "reported": reported, "predict": summary["accuracy"]}))
    assert summary["rows"] == 2000
    assert abs(summary["accuracy"] - reported) * 100 <= 0.5
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "row,prediction,label" and len(lines) == 2001


async def test_every_version_and_the_best_download_like_the_final_model(
    short_mnist_job: str, platform: Platform, http: Any, tmp_path: Path
) -> None:
    job_id = short_mnist_job
    found = (await http.get(f"/api/models/{job_id}")).json()
    accuracy = {v["version"]: v["evaluation"]["accuracy"] for v in found["versions"]}
    assert found["latest_version"] == 2 and found["final"]["version"] == 2
    assert accuracy[found["best_version"]] == max(accuracy.values())

    final = tmp_path / "final.pt"
    async with _sdk(platform) as pt:
        await pt.download_model(job_id, final)
        got = {v: await pt.download_model(job_id, tmp_path / f"{v}.pt", version=v) for v in (1, 2)}
        best = await pt.download_model(job_id, tmp_path / "best.pt", version="best")
    assert _same(_weights(got[2]), _weights(final))  # the last version is the final model
    assert not _same(_weights(got[1]), _weights(final))
    assert _same(_weights(best), _weights(got[found["best_version"]]))

    r = await http.get(f"/api/models/{job_id}/versions/best", params={"format": "safetensors"})
    assert r.status_code == 200 and r.headers["x-model-version"] == str(found["best_version"])
    assert r.headers["x-content-sha256"] == hashlib.sha256(r.content).hexdigest()
    assert r.headers["content-disposition"].endswith(f'-v{found["best_version"]}.safetensors"')
    r = await http.get(f"/api/models/{job_id}/versions/9")
    assert r.status_code == 404 and r.json()["error"]["code"] == "version_not_found"

    data = tmp_path / "mnist-10k.csv.gz"
    data.write_bytes(mnist_csv_gz())
    summary = _predict(got[1], data, tmp_path / "p1.csv")  # a version predicts as final.pt does
    assert abs(summary["accuracy"] - accuracy[1]) * 100 <= 0.5


async def test_a_cancelled_jobs_versions_download_though_it_has_no_final_model(
    platform: Platform, http: Any, tmp_path: Path
) -> None:
    dataset_id = await digits(platform)
    spec = CASES["fedavg-iid"].spec()
    spec["training"] = {**spec["training"], "rounds": 30}
    peers = [platform.peer(f"p{i}").peer_id for i in range(2)]
    body = {"name": "cancelled midway", "dataset_id": dataset_id, "peers": peers, **spec}
    job_id = await create_job(platform, body)

    async def evaluated() -> bool:
        versions = (await http.get(f"/api/models/{job_id}")).json()["versions"]
        return sum(v["evaluation"] is not None for v in versions) >= 3

    await wait_for(evaluated, timeout=300, what="versions 0..2 evaluated")
    r = await http.post(f"/api/jobs/{job_id}/cancel")
    assert r.status_code == 202, r.text
    assert (await finished(platform, job_id, timeout=300))["state"] == "cancelled"
    r = await http.get(f"/api/models/{job_id}/final")
    assert r.status_code == 409 and r.json()["error"]["code"] == "final_not_exported"

    found = (await http.get(f"/api/models/{job_id}")).json()
    last, best = found["latest_version"], found["best_version"]
    assert last >= 2 and best is not None
    async with _sdk(platform) as pt:
        got = await pt.download_model(job_id, tmp_path / "last.pt", version=last)
        as_st = await pt.download_model(
            job_id, tmp_path / "last.st", version=last, fmt="safetensors"
        )
        top = await pt.download_model(job_id, tmp_path / "best.pt", version="best")
        again = await pt.download_model(job_id, tmp_path / "b.pt", version=best)
    assert _same(_weights(got), _weights(as_st))
    assert _same(_weights(top), _weights(again))
    r = await http.get(f"/api/models/{job_id}/versions/{last}")
    assert r.headers["content-disposition"] == f'attachment; filename="cancelled-midway-v{last}.pt"'
