"""PeerTrain in a few lines: log in, upload a CSV, train on two peers, download the model.

Run against the local stack (``make up``) with enrolled, running peers::

    PEERTRAIN_USER=ada PEERTRAIN_PASSWORD='a long password' \
        python examples/quickstart.py iris.csv
"""

from __future__ import annotations

import os
import sys

from peertrain.client import Client


def main(csv_path: str) -> int:
    with Client() as pt:  # $PEERTRAIN_API, else the API of `peertrain login`, else :8080
        pt.login(os.environ["PEERTRAIN_USER"], os.environ["PEERTRAIN_PASSWORD"])

        dataset_id = pt.upload_dataset(
            csv_path, progress=lambda sent, total: print(f"\rupload {sent}/{total} B", end="")
        )
        dataset = pt.wait_for_dataset(dataset_id)  # raises DatasetRejected with the reason
        print(f"\ndataset {dataset_id}: {dataset.get('rows')} rows, {dataset.get('classes')}")

        job_id = pt.create_job(
            {
                "name": "quickstart",
                "dataset_id": dataset_id,
                "selection": {"count": 2},
                "model": {"arch": "mlp"},
                "training": {"rounds": 5, "local_epochs": 1, "batch_size": 32, "lr": 0.05},
                "aggregation": {"strategy": "fedavg", "min_peers": 2},
                "sharding": {"strategy": "iid"},
            }
        )
        for progress in pt.watch_job(job_id, interval=2.0):
            latest = progress.job.get("latest") or {}
            print(
                f"{progress.state:<10} round {latest.get('round', '-')} "
                f"accuracy {latest.get('accuracy', '-')}"
            )
        if progress.state != "completed":
            print(f"job {job_id} ended {progress.state}: {progress.job.get('error')}")
            return 1
        print("saved", pt.download_model(job_id, "quickstart.pt"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "iris.csv"))
