"""A peer on another machine takes part in a job (docs/operations.md, "Peers on other machines").

The peer runs in a network namespace of its own (``remote_machine.py``): its 127.0.0.1 is
its own, and it reaches this machine only at the host end of a veth pair. The stack opens
its public listeners on that address (``PEERTRAIN_PUBLIC_ADDRESS``): the gateway's API
over HTTPS, presigned S3 requests over HTTPS, RabbitMQ over AMQPS, with a certificate
from a throwaway CA that the peer trusts (``SSL_CERT_FILE``). The peer enrolls through
the public HTTPS address, gets the broker's AMQPS address from the registry and the
presigned HTTPS URLs from the orchestrator, and trains beside a peer on this machine.
The public listeners are closed again afterwards (RabbitMQ restarted, nginx reloaded).

What runs on the other machine is what a volunteer and a researcher install: the wheels
``make dist`` builds, each in a clean venv (``tests/install/wheels.py``). The installed
``peertrain-peer`` enrolls and trains; the installed ``peertrain`` logs in, uploads the
data, creates the job, watches it and downloads its model, all through the public door.
"""

from __future__ import annotations

import io
import json
import os
import socket
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

from peertrain.testkit.cli import CliProcess, create_job
from peertrain.testkit.common import OFFSET, stack_port
from peertrain.testkit.peer import PeerProcess

sys.path.insert(0, str(Path(__file__).parent / "training"))
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "install"))

from remote_machine import NetNamespace, TlsFiles, make_tls
from training_support import (
    Platform,
    job_events,
    peers_active,
    run_platform,
    start_peer,
)
from wheels import Installed, build_dist, install_client, install_peer

pytestmark = [pytest.mark.stack]

HTTPS, S3, AMQPS = stack_port(8443), stack_port(9443), stack_port(5671)
LOOPBACK_ONLY = {"gateway": 8080, "rabbitmq": 5672, "minio": 9000, "ferretdb": 27017}
ROUNDS = 2

# Run inside the namespace: which (host, port) pairs accept a TCP connection.
PROBE = """
import json, socket, sys
out = {}
for host, port in json.loads(sys.argv[1]):
    try:
        socket.create_connection((host, port), timeout=3).close()
        out[f"{host}:{port}"] = "open"
    except OSError as exc:
        out[f"{host}:{port}"] = type(exc).__name__
print(json.dumps(out))
"""

# Run inside the namespace: what the public doors say to what is not a peer's business.
# Presigned with MinIO's well-known default keys, a GET and an update's POST form pass
# the door as a peer's would, and MinIO refuses them: the stack runs with keys of its own.
REFUSALS = """
import asyncio, json, ssl, sys, aio_pika, httpx
from botocore.config import Config
from botocore.session import get_session
address, amqps, s3 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
async def admin():
    try:
        await aio_pika.connect(f"amqps://admin:admin@{address}:{amqps}/", timeout=10)
        return "connected"
    except Exception as exc:
        return type(exc).__name__
out = {"amqps admin": asyncio.run(admin())}
default_keys = get_session().create_client(
    "s3", endpoint_url=f"https://{address}:{s3}", region_name="us-east-1",
    aws_access_key_id="minioadmin", aws_secret_access_key="minioadmin",
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
)
get_url = default_keys.generate_presigned_url(
    "get_object", Params={"Bucket": "peertrain", "Key": "datasets/x/raw/data.csv"}, ExpiresIn=300
)
form = default_keys.generate_presigned_post(
    "peertrain", "jobs/x/rounds/1/updates/evil.safetensors", ExpiresIn=300
)
with httpx.Client(base_url=f"https://{address}:{s3}", timeout=10) as http:
    signed = {"Authorization": "AWS4-HMAC-SHA256 Credential=minioadmin/x"}
    out["s3 signed header"] = http.get("/peertrain/x", headers=signed).status_code
    out["s3 presigned get, default keys"] = http.get(get_url).status_code
    out["s3 presigned post, default keys"] = http.post(
        form["url"], data=form["fields"], files={"file": ("u", b"x")}
    ).status_code
    out["s3 unsigned get"] = http.get("/peertrain/x").status_code
    out["s3 listing"] = http.get("/peertrain/", params={"list-type": "2"}).status_code
    out["s3 buckets"] = http.get("/").status_code
    out["minio metrics"] = http.get("/minio/v2/metrics/cluster").status_code
    out["minio health"] = http.get("/minio/health/live").status_code
    out["s3 delete"] = http.delete("/peertrain/x").status_code
    out["s3 put"] = http.put("/peertrain/x", content=b"x").status_code
print(json.dumps(out))
"""


def _public_listeners(stack: Any, values: dict[str, str]) -> None:
    """Restart RabbitMQ and reload the gateway with these PEERTRAIN_PUBLIC_* settings."""
    stack("stop", "rabbitmq", env=values)
    stack("start", "rabbitmq", env=values)
    stack("start", "gateway", env=values)  # running: rewrites its config, reloads


def _accepting(address: str, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((address, port), timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(scope="module")
def remote(
    stack: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[NetNamespace, TlsFiles]]:
    """The namespace, and the stack's public listeners open on its host address."""
    try:
        ns = NetNamespace.create(OFFSET)
    except (OSError, subprocess.CalledProcessError) as exc:
        why = getattr(exc, "stderr", "") or exc
        pytest.skip(f"cannot make a network namespace (root / CAP_NET_ADMIN, iproute2): {why}")
    try:
        tls = make_tls(tmp_path_factory.mktemp("tls"), ns.host_address)
        _public_listeners(
            stack,
            {
                "PEERTRAIN_PUBLIC_ADDRESS": ns.host_address,
                "PEERTRAIN_TLS_CERT": str(tls.cert),
                "PEERTRAIN_TLS_KEY": str(tls.key),
            },
        )
        try:
            for port in (HTTPS, S3, AMQPS):
                _accepting(ns.host_address, port)
            yield ns, tls
        finally:
            _public_listeners(stack, {"PEERTRAIN_PUBLIC_ADDRESS": ""})
    finally:
        ns.delete()


@pytest.fixture(scope="module")
def platform(
    remote: tuple[NetNamespace, TlsFiles], run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Platform]:
    """The services, advertising the public address to peers (as env.sh has them when
    PEERTRAIN_PUBLIC_ADDRESS is set)."""
    address = remote[0].host_address
    yield from run_platform(
        run_id,
        tmp_path_factory,
        registry_env={"PEERTRAIN_REGISTRY_PEER_AMQP_URL": f"amqps://{address}:{AMQPS}/"},
        orchestrator_env={
            "PEERTRAIN_ORCHESTRATOR_S3_PRESIGN_ENDPOINT_URL": f"https://{address}:{S3}"
        },
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Installed, Installed]:
    """The peer's and the CLI's wheels, each installed into a clean venv."""
    dist = build_dist(tmp_path_factory.mktemp("dist"))
    peer = install_peer(dist, tmp_path_factory.mktemp("peer-install") / "venv")
    client = install_client(dist, tmp_path_factory.mktemp("cli-install") / "venv")
    return peer, client


def _table_csv(rows: int = 400, seed: int = 11) -> bytes:
    """Three well separated classes in four numeric columns."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, rows)
    centres = np.array([[0, 0, 0, 0], [3, 3, 0, 0], [0, 3, 3, 3]], dtype=float)
    x = centres[labels] + rng.normal(0, 1.0, (rows, 4))
    out = io.StringIO("")
    out.write("a,b,c,d,kind\n")
    for row, label in zip(x, labels, strict=True):
        out.write(",".join(f"{v:.4f}" for v in row) + f",k{label}\n")
    return out.getvalue().encode()


def _inside(ns: NetNamespace, script: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
    """Run ``script`` with this interpreter inside the namespace; its JSON output."""
    done = subprocess.run(
        [*ns.wrap(), sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, **env},
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def test_installed_peer_and_cli_in_their_own_network_namespace_train_a_job(
    remote: tuple[NetNamespace, TlsFiles],
    platform: Platform,
    installed: tuple[Installed, Installed],
) -> None:
    ns, tls = remote
    address = ns.host_address
    loopback = [("127.0.0.1", stack_port(p)) for p in LOOPBACK_ONLY.values()]
    on_host = [(address, stack_port(p)) for p in [*LOOPBACK_ONLY.values(), 15672, 8001]]
    public = [(address, p) for p in (HTTPS, S3, AMQPS)]
    trust = {"SSL_CERT_FILE": str(tls.ca)}
    seen = _inside(ns, PROBE, json.dumps(loopback + on_host + public), env={})
    # Its own loopback has none of the platform; the host's address only the TLS doors.
    assert {k: v for k, v in seen.items() if v == "open"} == {
        f"{h}:{p}": "open" for h, p in public
    }, seen
    assert {seen[f"{h}:{p}"] for h, p in loopback + on_host} == {"ConnectionRefusedError"}, seen
    # Through them: no broker admin (loopback only), no S3 but what presigned URLs do,
    # and none signed with MinIO's default keys (the peers' own traffic: the job below).
    refused = _inside(ns, REFUSALS, address, str(AMQPS), str(S3), env=trust)
    assert refused == {
        "amqps admin": "ProbableAuthenticationError",
        "s3 signed header": 403,
        "s3 presigned get, default keys": 403,
        "s3 presigned post, default keys": 403,
        "s3 unsigned get": 403,
        "s3 listing": 403,
        "s3 buckets": 403,
        "minio metrics": 403,
        "minio health": 403,
        "s3 delete": 403,
        "s3 put": 403,
    }, refused

    peer_install, client_install = installed
    far = PeerProcess.enroll(
        f"https://{address}:{HTTPS}",
        platform.enroll(),
        config_dir=platform.base / "peer-far",
        log_dir=platform.base,
        name=f"far-{uuid.uuid4().hex[:6]}",
        wrap=ns.wrap(),
        machine_env=trust,
        program=[peer_install.program("peertrain-peer")],
    )
    platform.peers["far"] = far  # stopped, and its broker user removed, with the platform
    start_peer(far, mode=None, env=None, threads=1)
    near = platform.peer("near", env=trust)  # on this machine: the same advertised doors
    await peers_active(platform, [far.peer_id, near.peer_id])
    assert far.status()["broker"] == f"amqps://{address}:{AMQPS}/", far.tail()

    # the researcher, on that machine too, with the installed CLI
    cli = CliProcess(
        [*ns.wrap(), client_install.program("peertrain"), "--api", f"https://{address}:{HTTPS}"],
        client_install.env(
            {
                **trust,
                "PEERTRAIN_CONFIG_DIR": str(platform.base / "cli-far"),
                "PEERTRAIN_PASSWORD": platform.password,
                "COLUMNS": "200",
            }
        ),
    )
    cli.ok("login", "-u", platform.username)
    table = platform.base / "table.csv"
    table.write_bytes(_table_csv())
    dataset_id = cli.ok(
        "dataset", "upload", str(table), "--name", "remote-table", "--label-column", "kind",
        "--wait", timeout=300,
    ).strip()  # fmt: skip
    job_args = [
        "--name", "remote-peer", "--dataset", dataset_id,
        "--peer", far.peer_id, "--peer", near.peer_id, "--arch", "mlp",
        "--model-opt", "hidden=[8]", "--rounds", str(ROUNDS), "--local-epochs", "1",
        "--batch-size", "16", "--lr", "0.05", "--seed", "3", "--strategy", "fedavg",
        "--min-peers", "2", "--round-deadline", "300",
    ]  # fmt: skip
    job_id = create_job(cli, *job_args)
    watch = cli("job", "watch", job_id, "--interval", "1", timeout=600)
    assert watch.returncode == 0, (watch.stdout, watch.stderr, far.tail())
    job = json.loads(cli.ok("job", "show", job_id, "--json"))
    assert job["state"] == "completed", (job, far.tail())
    model = platform.base / "remote-model.pt"
    cli.ok("model", "download", job_id, "-o", str(model))
    final = torch.load(model, weights_only=True)
    assert final["spec"]["arch"] == "mlp" and final["state_dict"], list(final)
    async with platform.client() as http:
        events = await job_events(http, job_id)
    accepted = {
        (e["data"]["round"], e["data"]["peer_id"]) for e in events if e["type"] == "update.accepted"
    }
    assert accepted == {(r, p) for r in range(1, ROUNDS + 1) for p in (far.peer_id, near.peer_id)}
