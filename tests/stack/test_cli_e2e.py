"""The user's whole path with the real ``peertrain`` command, through the gateway.

Register, log in, enroll three real peers with tokens from ``peers enroll-token``,
upload scikit-learn's digits as CSV (``dataset upload --wait``), create a small MLP job
from flags, ``job watch`` it to completion (exit 0), download ``model.pt`` and load it
with plain torch. Before it, the server's checks through the CLI: a dry run creates
nothing, a bad request names every problem on one line; after it, the job's logs,
metrics, config, versions, a rerun's dry run, and a one-round job started from its last
model version (whose version 0 scores exactly what that version scored). Then the error
paths a user meets with the orchestrator running: an unknown job is one line on stderr
and exit status 1 for ``show``, ``watch`` and ``model download`` (which leaves no file
behind); and a peer disabled, then removed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).parent / "training"))

from training_support import GATEWAY, Platform, run_platform, start_peer

from peertrain.testkit.cli import CliProcess, create_job
from peertrain.testkit.common import child_env
from peertrain.testkit.peer import PeerProcess

pytestmark = pytest.mark.stack

PEERS = 3


def peertrain_command() -> list[str]:
    """The ``peertrain`` script of this interpreter's environment (else ``python -m``)."""
    script = Path(sys.executable).parent / "peertrain"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "peertrain.client.cli"]


def make_cli(config_dir: Path) -> CliProcess:
    """``peertrain --api GATEWAY ...`` with credentials of its own."""
    env = child_env("cli")
    env.update({"PEERTRAIN_CONFIG_DIR": str(config_dir), "COLUMNS": "200"})
    return CliProcess([*peertrain_command(), "--api", GATEWAY], env)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("peertrain: error: ")
    return lines[0]


def poll(check: Any, *, timeout: float, what: str, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} (last: {str(last)[:2000]})")


def digits_csv(path: Path) -> Path:
    """scikit-learn's 1,797 8x8 digits as ``label,f0..f63`` CSV."""
    digits = load_digits()
    table = np.concatenate([digits.target[:, None], digits.data.astype(np.int64)], axis=1)
    header = "label," + ",".join(f"f{i}" for i in range(digits.data.shape[1]))
    np.savetxt(path, table, fmt="%d", delimiter=",", header=header, comments="")
    return path


@pytest.fixture(scope="module")
def platform(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """Every service running; peers are started (and stopped) through ``platform.peers``."""
    yield from run_platform(run_id, tmp_path_factory)


@pytest.fixture(scope="module")
def cli(platform: Platform) -> CliProcess:
    """A user registered and logged in with the CLI."""
    run = make_cli(platform.base / "cli")
    name, password = f"cli{uuid.uuid4().hex[:8]}", f"pass {uuid.uuid4().hex}"
    run.ok("register", "-u", name, password=password)
    run.ok("login", "-u", name, password=password)
    assert run.json("whoami")["username"] == name
    return run


@pytest.fixture(scope="module")
def peer_ids(platform: Platform, cli: CliProcess) -> list[str]:
    """Three peers enrolled with the user's tokens, running and seen active."""
    ids = []
    for i in range(PEERS):
        token = cli.json("peers", "enroll-token")["enrollment_token"]
        name = f"cli-peer{i}-{uuid.uuid4().hex[:6]}"
        peer = PeerProcess.enroll(
            GATEWAY, token, config_dir=platform.base / name, log_dir=platform.base, name=name
        )
        platform.peers[name] = peer  # the platform stops them and deletes their queues
        start_peer(peer, mode=None, env=None, threads=1)
        ids.append(peer.peer_id)

    def active() -> bool:
        seen = {p["peer_id"] for p in cli.json("peers", "ls", "--status", "active", "--mine")}
        return set(ids) <= seen

    poll(active, timeout=120, what=f"peers {ids} active")
    return ids


def test_register_enroll_upload_train_watch_download(
    cli: CliProcess, peer_ids: list[str], tmp_path: Path
) -> None:
    csv = digits_csv(tmp_path / "digits.csv")
    dataset_id = cli.ok(
        "dataset", "upload", str(csv), "--name", "digits", "--label-column", "label",
        "--holdout-fraction", "0.2", "--wait",
    ).strip()  # fmt: skip
    dataset = cli.json("dataset", "show", dataset_id)
    assert dataset["status"] == "validated", dataset
    assert dataset_id in {d.get("dataset_id") or d.get("id") for d in cli.json("dataset", "ls")}

    peers = [arg for peer in peer_ids for arg in ("--peer", peer)]
    server_checks(cli, dataset_id, peers)
    job_id = create_job(
        cli, "--name", "digits-mlp", "--dataset", dataset_id, *peers,
        "--arch", "mlp", "--model-opt", "hidden=[32]", "--rounds", "3", "--local-epochs", "2",
        "--batch-size", "16", "--lr", "0.05", "--optimizer", "sgd", "--momentum", "0.9",
        "--seed", "3", "--strategy", "fedavg", "--min-peers", "2", "--round-deadline", "120",
        "--sharding", "iid",
    )  # fmt: skip

    watch = cli("job", "watch", job_id, "--interval", "1", timeout=300)
    assert watch.returncode == 0, (watch.stdout, watch.stderr)
    assert "completed" in watch.stdout and "3/3" in watch.stdout, watch.stdout

    job = cli.json("job", "show", job_id)
    assert job["state"] == "completed", job
    assert sorted(job["peers"]) == sorted(peer_ids)
    assert job["latest"]["round"] == 3
    assert job["latest"]["accuracy"] >= 0.8, job["latest"]
    assert job_id in {j["job_id"] for j in cli.json("job", "ls")}
    types = [e["type"] for e in cli.json("job", "events", job_id)]
    assert types.count("round.closed") == 3 and "job.completed" in types, types

    after_the_job(cli, job_id)

    model = tmp_path / "model.pt"
    cli.ok("model", "download", job_id, "-o", str(model))
    final = torch.load(model, weights_only=True)
    assert {"spec", "feature_spec", "state_dict"} <= set(final), list(final)
    assert final["spec"]["arch"] == "mlp"
    assert all(isinstance(t, torch.Tensor) for t in final["state_dict"].values())
    first = final["state_dict"][min(k for k in final["state_dict"] if k.endswith("weight"))]
    assert first.shape == (32, 64)


def test_unknown_job_is_one_line(cli: CliProcess, tmp_path: Path) -> None:
    job_id = f"no-such-job-{uuid.uuid4().hex[:6]}"
    # not an id of yours, whole or short: said before anything is asked for it
    unknown = f"no job has an id that starts or ends with '{job_id}'"
    for args in (("job", "show", job_id), ("job", "watch", job_id)):
        line = one_error_line(cli(*args))
        assert unknown in line, line
    dest = tmp_path / "model.pt"
    line = one_error_line(cli("model", "download", job_id, "-o", str(dest)))
    assert unknown in line, line
    assert not dest.exists()
    whole = str(uuid.uuid4())  # a whole id goes to the server as it is
    line = one_error_line(cli("job", "show", whole))
    assert "(404 " in line, line


def server_checks(cli: CliProcess, dataset_id: str, peers: list[str]) -> None:
    """A dry run checks on the server and creates nothing; a bad request names every
    problem at once, on the CLI's one error line; the job schema is published."""
    jobs_before = len(cli.json("job", "ls"))
    base = ("job", "create", "--name", "dry", "--dataset", dataset_id, "--arch", "mlp")

    def checked() -> Any:
        done = cli(*base, *peers, "--dry-run")
        if done.returncode != 0 and "peers_unavailable" in done.stderr:
            return None  # the orchestrator has not yet seen the peers online
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    dry = poll(checked, timeout=60, what="a dry run accepted")
    assert dry["dry_run"] is True and sorted(dry["peers"]) == sorted(peers[1::2])
    assert len(cli.json("job", "ls")) == jobs_before  # nothing created

    misspelt = one_error_line(
        cli(*base, *peers, "--set", "training.lrr=0.1", "--set", "training.rounds=0")
    )
    assert "training.lrr: Extra inputs are not permitted" in misspelt, misspelt
    assert "training.rounds: " in misspelt and "(422 validation_failed)" in misspelt

    ghost = f"ghost-{uuid.uuid4().hex[:6]}"
    refused = one_error_line(cli(*base, *peers, "--peer", ghost, "--min-peers", "9"))
    assert f"peer {ghost} is unknown" in refused, refused
    assert "aggregation.min_peers: " in refused and "(409 peers_unavailable)" in refused

    schema = cli.json("job", "schema")
    assert {"training", "model", "aggregation"} <= set(schema["properties"]), schema


def after_the_job(cli: CliProcess, job_id: str) -> None:
    """What a finished job shows through the new read commands (all from the API)."""
    logs = cli.ok("job", "logs", job_id)
    assert "round 3 closed" in logs and "job completed" in logs, logs
    # a task's last epoch, alone or with the first (a peer reports fast epochs together)
    assert re.search(r" epochs? (?:1,)?2/2 ", logs), logs
    metrics = cli.json("job", "metrics", job_id)
    assert [r["round"] for r in metrics["rounds"]] == [1, 2, 3]
    assert cli.json("job", "config", job_id)["rounds"] == 3
    versions = cli.ok("model", "ls", job_id)
    accuracy = f"{metrics['rounds'][-1]['accuracy']:.4f}"
    assert accuracy in versions, versions  # the holdout metrics, not "-"
    rerun = cli.json("job", "rerun", job_id, "--set", "training.lr=0.01", "--dry-run")
    assert rerun["training"]["lr"] == 0.01 and rerun["name"] == "digits-mlp-rerun"
    lines = cli.ok("job", "watch", job_id, "--json").splitlines()
    assert json.loads(lines[-1])["state"] == "completed"

    # a job that starts from this one's last version: its version 0 is that model
    warm = cli.json(
        "job", "rerun", job_id, "--init-from", f"{job_id}:v3", "--set", "training.rounds=1",
        "--name", "digits-warm",
    )["job_id"]  # fmt: skip
    assert cli("job", "watch", warm, "--interval", "1", timeout=300).returncode == 0
    started = cli.json("job", "metrics", warm)["initial"]
    assert started["accuracy"] == metrics["rounds"][-1]["accuracy"], (started, metrics)
    assert cli.json("job", "show", warm)["init_from"]["version"] == 3


def test_a_peer_disabled_then_removed(cli: CliProcess, peer_ids: list[str]) -> None:
    peer = peer_ids[-1]
    assert cli.json("peers", "disable", peer)["disabled"] is True
    assert cli.json("peers", "disable", peer, "--enable")["disabled"] is False
    cli.ok("peers", "rm", peer, "--yes")
    line = one_error_line(cli("peers", "show", peer))
    assert "(404 " in line, line
