"""``peertrain predict`` on the raw MNIST CSV gives the job's reported holdout accuracy.

The demo's data and model (MNIST 10k as uploaded, an MLP), kept short: 2 peers, 2 rounds
(``short_mnist_job``, shared with test_mlflow.py).
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
from training_support import mnist_csv_gz

pytestmark = [pytest.mark.stack]


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
