"""``peertrain predict`` on the raw MNIST CSV gives the job's reported holdout accuracy.

The demo's data and model (MNIST 10k as uploaded, an MLP), kept short: 2 peers, 2 rounds.
The downloaded ``final.pt`` is used by the real CLI in a fresh process, on the very
``.csv.gz`` that was uploaded, with ``--holdout``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_mnist import mnist, mnist_job
from training_support import Platform, create_job, finished, mnist_csv_gz, peers_active

pytestmark = [pytest.mark.stack]


async def test_predict_on_the_raw_csv_matches_the_reported_holdout_accuracy(
    platform: Platform, http: Any, tmp_path: Path
) -> None:
    dataset_id = await mnist(platform)
    peers = [platform.peer(f"p{i}").peer_id for i in range(2)]
    await peers_active(platform, peers)
    job_id = await create_job(platform, mnist_job(dataset_id, peers, rounds=2))
    job = await finished(platform, job_id)
    assert job["state"] == "completed", job
    rounds = (await http.get(f"/api/jobs/{job_id}/metrics")).json()["rounds"]
    reported = rounds[-1]["accuracy"]

    r = await http.get(f"/api/models/{job_id}/final", params={"format": "pt"})
    assert r.status_code == 200, r.text
    model, data = tmp_path / "model.pt", tmp_path / "mnist-10k.csv.gz"
    model.write_bytes(r.content)
    data.write_bytes(mnist_csv_gz())
    args = ["predict", str(data), "--model", str(model), "--holdout", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "peertrain.client.cli", *args, "-o", str(tmp_path / "p.csv")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps({"job": job_id, "reported": reported, "predict": summary["accuracy"]}))
    assert summary["rows"] == 2000
    assert abs(summary["accuracy"] - reported) * 100 <= 0.5
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "row,prediction,label" and len(lines) == 2001
