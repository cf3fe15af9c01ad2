"""Dataset benchmark: a 1 GB CSV uploaded through the gateway, validated, sharded into 16.

    python benchmarks/sharding.py [--size-mb 1024] [--shards 16] [--strategy stratified]

Generates a CSV (16 numeric columns, one categorical column, a 10-class label) under
``.var/bench/``, starts the auth service (tokens) and the dataset service (its own
bucket and queues) as processes, and measures:

``upload_mb_per_s``
    the file streamed through the gateway until the service answers 202;
``validate_mb_per_s``
    upload answered -> ``validated`` (parse, infer, split, encode, store);
``shard_mb_per_s``
    ``job.created`` appended -> ``dataset.sharded`` appended (16 shards + holdout);
``peak_rss_mb``
    the dataset service's peak resident memory over the whole run (sampled every 20 ms,
    its child processes included);
``baseline_mb_per_s``
    pyarrow reading the same file (``pyarrow.csv.read_csv``) and writing it as Parquet,
    in this process, in the same run.

All rates are the CSV's size in MiB over the time taken. The CSV is deleted at the
end. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from pymongo import AsyncMongoClient
from rss import MiB, RssSampler

from peertrain.client import TokenAuth, Tokens
from peertrain.common.bus import OutboxRelay, make_broker
from peertrain.common.eventlog import EventLog
from peertrain.common.events import NewEvent
from peertrain.common.events.datasets import DatasetSharded, sharding_stream
from peertrain.common.events.training import JobCreated, ShardingSpec, job_stream
from peertrain.common.settings import ServiceSettings
from peertrain.common.specs import SHARDING_STRATEGIES
from peertrain.testkit.auth import shared_auth_service
from peertrain.testkit.common import port_holder
from peertrain.testkit.dataset import GATEWAY_URL, running_dataset_service

ROOT = Path(__file__).resolve().parents[1]
AUTH_URL = "http://127.0.0.1:8080/api/auth"
COLOURS = np.array(["red", "green", "blue", "yellow", "black", "white", "cyan", "magenta"])


def log(message: str) -> None:
    print(f"[bench-sharding] {message}", file=sys.stderr, flush=True)


def generate_csv(path: Path, size_bytes: int, seed: int = 0) -> int:
    """Write a CSV of about ``size_bytes``; return its row count."""
    rng = np.random.default_rng(seed)
    batch = 500_000
    rows = 0
    names = [f"f{i}" for i in range(16)] + ["colour", "label"]
    with path.open("wb") as out:
        writer: pcsv.CSVWriter | None = None
        while path.stat().st_size < size_bytes:
            columns: list[pa.Array] = [
                pa.array(np.round(rng.normal(0, 1, batch), 4)) for _ in range(16)
            ]
            columns.append(pa.array(COLOURS[rng.integers(0, len(COLOURS), batch)]))
            columns.append(pa.array(rng.integers(0, 10, batch)))
            table = pa.Table.from_arrays(columns, names=names)
            if writer is None:
                writer = pcsv.CSVWriter(
                    out, table.schema, write_options=pcsv.WriteOptions(quoting_style="none")
                )
            writer.write_table(table)
            out.flush()
            rows += batch
        if writer is not None:
            writer.close()
    return rows


def baseline(path: Path) -> float:
    """Seconds for pyarrow to read the CSV and write it as Parquet."""
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        started = time.perf_counter()
        table = pcsv.read_csv(path)
        pq.write_table(table, Path(tmp) / "baseline.parquet")
        elapsed = time.perf_counter() - started
        del table
    return elapsed


async def multipart(path: Path, boundary: str) -> AsyncIterator[bytes]:
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{path.name}"\r\nContent-Type: text/csv\r\n\r\n'
    )
    yield head.encode()
    with path.open("rb") as f:
        while chunk := await asyncio.to_thread(f.read, 4 * MiB):
            yield chunk
    yield f"\r\n--{boundary}--\r\n".encode()


async def login(http: httpx.AsyncClient) -> tuple[str, TokenAuth]:
    """A new user's id and session (renewed as it expires, as the SDK does)."""
    name, password = f"bench{uuid.uuid4().hex[:10]}", f"pass {uuid.uuid4().hex}"
    r = await http.post(f"{AUTH_URL}/register", json={"username": name, "password": password})
    r.raise_for_status()
    user_id = r.json()["id"]
    r = await http.post(f"{AUTH_URL}/token", data={"username": name, "password": password})
    r.raise_for_status()
    return user_id, TokenAuth(Tokens.from_pair(r.json()), refresh_url=f"{AUTH_URL}/refresh")


async def run(
    csv: Path, size: int, mongo_db: str, shards: int, strategy: str, rss: RssSampler
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=httpx.Timeout(600, connect=10)) as http:
        user_id, session = await login(http)
        http.auth = session
        boundary = uuid.uuid4().hex
        rss.mark("idle")
        started = time.perf_counter()
        r = await http.post(
            f"{GATEWAY_URL}/",
            content=multipart(csv, boundary),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        uploaded = time.perf_counter()
        rss.mark("upload")
        r.raise_for_status()
        dataset_id = r.json()["dataset_id"]
        out["upload_mb_per_s"] = size / MiB / (uploaded - started)
        log(f"uploaded in {uploaded - started:.1f}s; validating")
        while True:
            body = (await http.get(f"{GATEWAY_URL}/{dataset_id}")).json()
            if body["status"] != "validating":
                break
            await asyncio.sleep(0.1)
        validated = time.perf_counter()
        rss.mark("validate")
        if body["status"] != "validated":
            raise RuntimeError(f"the dataset was not validated: {body}")
        out["validate_mb_per_s"] = size / MiB / (validated - uploaded)
        out["rows"] = body["rows"]
        log(f"validated in {validated - uploaded:.1f}s ({body['rows']} rows); sharding")

    settings = ServiceSettings()
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(settings.mongo_url, tz_aware=True)
    broker = make_broker(settings.amqp_url.get_secret_value())
    await broker.connect()
    event_log = EventLog(mongo[mongo_db])
    producer = f"orchestrator-bench-{uuid.uuid4().hex[:6]}"
    relay = OutboxRelay(event_log, broker, producer=producer)
    relay.start()
    try:
        job_id = str(uuid.uuid4())
        job = JobCreated(
            job_id=job_id,
            owner_id=user_id,
            name="bench",
            dataset_id=dataset_id,
            peers=tuple(f"peer-{k}" for k in range(shards)),
            sharding=ShardingSpec.model_validate({"strategy": strategy, "seed": 1}),
        )
        started = time.perf_counter()
        await event_log.append(
            job_stream(job_id), [NewEvent.of(job, producer=producer)], expected_version=0
        )
        # Polls the log: the outcome is appended by another process.
        while not (events := await event_log.read_stream(sharding_stream(job_id))):  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        sharded = time.perf_counter()
        rss.mark("shard")
        if not isinstance(events[0].data, DatasetSharded):
            raise RuntimeError(f"sharding failed: {events[0].data}")
        out["shard_mb_per_s"] = size / MiB / (sharded - started)
        out["train_rows"] = sum(s.rows or 0 for s in events[0].data.shards)
        log(f"sharded into {shards} in {sharded - started:.1f}s")
    finally:
        await relay.stop()
        await broker.stop()
        await mongo.close()
    return out


def wait_for_ports(*ports: int, timeout_s: float = 600) -> None:
    """Wait until nothing listens on ``ports`` (another run may hold them for a while);
    refuse at once when the running platform holds one (it stays until stopped)."""
    deadline = time.monotonic() + timeout_s
    while busy := [h for p in ports if (h := port_holder(p)) is not None]:
        if time.monotonic() > deadline or any(h.platform_service for h in busy):
            held = next((h for h in busy if h.platform_service), busy[0])
            raise SystemExit(held.refusal("bench-sharding"))
        log(f"waiting for ports {[h.port for h in busy]} to be free")
        time.sleep(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--strategy", default="stratified", choices=SHARDING_STRATEGIES)
    parser.add_argument("--keep", action="store_true", help="keep the generated CSV")
    args = parser.parse_args()

    bench_dir = ROOT / ".var" / "bench"
    bench_dir.mkdir(parents=True, exist_ok=True)
    csv = bench_dir / f"sharding-{args.size_mb}mb.csv"
    try:
        if not csv.exists() or csv.stat().st_size < args.size_mb * MiB:
            log(f"generating {args.size_mb} MiB of CSV at {csv}")
            generate_csv(csv, args.size_mb * MiB)
        size_mb = csv.stat().st_size / MiB
        log("baseline: pyarrow read_csv + write Parquet")
        base_s = baseline(csv)
        run_id = uuid.uuid4().hex[:8]
        wait_for_ports(8001, 8003)
        with (
            tempfile.TemporaryDirectory(dir=bench_dir) as tmp,
            shared_auth_service(run_id=f"bench{run_id}", base_dir=Path(tmp)) as auth,
            running_dataset_service(
                mongo_db=auth.mongo_db, run=f"bench-{run_id}", base_dir=Path(tmp)
            ) as (service, _),
            RssSampler(service.pid) as rss,
        ):
            result = asyncio.run(
                run(csv, csv.stat().st_size, auth.mongo_db, args.shards, args.strategy, rss)
            )
            for line in service.log_path.read_text().splitlines():
                if "timings" in line:
                    log(line)
        result.update(
            csv_mb=round(size_mb, 1),
            shards=args.shards,
            strategy=args.strategy,
            peak_rss_mb=round(rss.peak / MiB, 1),
            peak_rss_mb_by_phase=rss.phases,
            baseline_mb_per_s=size_mb / base_s,
        )
        result["shard_vs_baseline"] = result["shard_mb_per_s"] / result["baseline_mb_per_s"]
    finally:
        if not args.keep:
            csv.unlink(missing_ok=True)
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main()
