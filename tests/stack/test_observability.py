"""Every PromQL expression of the Grafana dashboards returns data from the real services.

The five services run as in the training tests (tests/stack/training/training_support.py),
a tiny job trains on scikit-learn's digits (logistic regression, 2 peers, 2 rounds), one
peer leaves (churn), and a Prometheus of this test's own (Debian's binary, on a free port,
scraping every second with the job names of deploy/prometheus/prometheus.yml) scrapes
the services and RabbitMQ. Then each expression of deploy/grafana/dashboards/*.json is
evaluated and must return a non-empty result, and every metric it names must be one the
targets export (so ``... or vector(0)`` cannot hide a misspelt metric).
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent / "training"))

from training_support import (
    Platform,
    create_job,
    dataset,
    finished,
    peers_active,
    run_platform,
    wait_for,
)

from peertrain.testkit.common import scrape_targets_dir, stack_port

pytestmark = [pytest.mark.stack]

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "deploy" / "grafana" / "dashboards"
PROMETHEUS_YML = ROOT / "deploy" / "prometheus" / "prometheus.yml"
SCRAPED = {
    *("auth", "registry", "dataset", "orchestrator", "aggregator"),
    *("rabbitmq", "rabbitmq-queues"),
}
# What Grafana would substitute: a rate window of 4 scrapes at least, every job.
VARIABLES = {"$__rate_interval": "30s", "$job_id": ".*"}
METRIC = re.compile(r"\b((?:peertrain|registry|rabbitmq)_[a-zA-Z0-9_]+)")
SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_created")


def dashboard_expressions() -> list[tuple[str, str, str]]:
    """(dashboard, panel title, expression) for every query of every dashboard."""
    found = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                found.append((path.stem, panel["title"], target["expr"]))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Prometheus of our own, scraping the local services every second."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("Debian's prometheus is not installed (deploy/local/install.sh)")
    base = tmp_path_factory.mktemp("prometheus")
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["scrape_configs"] = [j for j in config["scrape_configs"] if j["job_name"] in SCRAPED]
    assert {j["job_name"] for j in config["scrape_configs"]} == SCRAPED
    for job in config["scrape_configs"]:  # this lane's ports (make test runs two)
        for sd in job.get("file_sd_configs", []):  # more instances: where tests list them
            sd["files"] = [str(scrape_targets_dir() / Path(f).name) for f in sd["files"]]
            sd["refresh_interval"] = "1s"
        for group in job["static_configs"]:
            group["targets"] = [
                f"{host}:{stack_port(int(port))}"
                for host, port in (t.rsplit(":", 1) for t in group["targets"])
            ]
    (base / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (base / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={base / 'prometheus.yml'}",
            f"--storage.tsdb.path={base / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        with httpx.Client(timeout=2) as http:  # one client: each costs an SSL context
            while True:
                try:
                    if http.get(f"{url}/-/ready").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert process.poll() is None, (base / "prometheus.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "prometheus did not become ready"
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="module")
def platform(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    # two of each: every instance's metrics must reach the dashboards
    yield from run_platform(f"obs{run_id}", tmp_path_factory, instances=2)


def digits_csv() -> bytes:
    """scikit-learn's digits (1797 rows, 8x8 pixels) as ``label,p0..p63``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    table = np.concatenate([digits.target[:, None], digits.data.astype(np.int64)], axis=1)
    out = io.StringIO()
    out.write("label," + ",".join(f"p{i}" for i in range(64)) + "\n")
    np.savetxt(out, table, fmt="%d", delimiter=",")
    return out.getvalue().encode()


async def train_and_churn(platform: Platform) -> None:
    """A tiny job on two peers, then one peer leaves (a went_offline transition)."""
    dataset_id = await dataset(
        platform, "digits", "digits.csv", digits_csv(), label_column="label",
        holdout_fraction="0.2",
    )  # fmt: skip
    peers = [platform.peer(f"o{i}").peer_id for i in range(2)]
    await peers_active(platform, peers)
    job_id = await create_job(
        platform,
        {
            "name": "digits-logreg",
            "dataset_id": dataset_id,
            "peers": peers,
            "model": {"arch": "logreg"},
            "training": {"rounds": 2, "local_epochs": 1, "batch_size": 32, "lr": 0.05, "seed": 3},
            "aggregation": {"strategy": "fedavg", "min_peers": 2, "round_deadline_s": 120},
            "sharding": {"strategy": "iid"},
        },
    )
    job = await finished(platform, job_id, timeout=150)
    assert job["state"] == "completed", job
    platform.peers["o1"].stop()

    async with platform.client() as http:

        async def offline() -> bool:
            r = await http.get(f"/api/registry/peers/{peers[1]}")
            return r.status_code == 200 and r.json().get("status") == "offline"

        await wait_for(offline, timeout=30, what="the stopped peer offline")


def query(prometheus: httpx.Client, expr: str) -> list[Any]:
    r = prometheus.get("/api/v1/query", params={"query": expr})
    assert r.status_code == 200, f"{expr}: {r.text}"
    result: list[Any] = r.json()["data"]["result"]
    return result


def exported_metrics(prometheus: httpx.Client) -> set[str]:
    """Metric names the targets declared (metadata) or have samples of."""
    names = set(prometheus.get("/api/v1/metadata").json()["data"])
    names |= set(prometheus.get("/api/v1/label/__name__/values").json()["data"])
    return names


def base_name(metric: str, known: set[str]) -> str:
    if metric in known:
        return metric
    for suffix in SUFFIXES:
        if metric.endswith(suffix) and metric.removesuffix(suffix) in known:
            return metric.removesuffix(suffix)
    return metric


async def test_every_dashboard_expression_has_data(platform: Platform, prometheus: str) -> None:
    expressions = dashboard_expressions()
    assert len(expressions) >= 30, "the dashboards lost their queries"
    await train_and_churn(platform)
    api = httpx.Client(base_url=prometheus, timeout=10)

    def missing() -> list[str]:
        gaps = []
        for board, title, expr in expressions:
            concrete = expr
            for var, value in VARIABLES.items():
                concrete = concrete.replace(var, value)
            if not query(api, concrete):
                gaps.append(f"{board} / {title}: {concrete}")
        return gaps

    # Scrapes are every second; give the last ones (the peer's departure) a few.
    with api:
        deadline = time.monotonic() + 30
        gaps = missing()
        while gaps and time.monotonic() < deadline:
            await asyncio.sleep(2)
            gaps = missing()
        assert not gaps, "dashboard expressions without data:\n  " + "\n  ".join(gaps)
        known = exported_metrics(api)

    unknown = sorted(
        {
            f"{board} / {title}: {name}"
            for board, title, expr in expressions
            for name in METRIC.findall(expr)
            if base_name(name, known) not in known
        }
    )
    assert not unknown, "metrics no target exports:\n  " + "\n  ".join(unknown)
