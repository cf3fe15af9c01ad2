"""The S3 door for peers on other machines, run in a throwaway nginx (no stack needed).

Both doors: compose's (deploy/gateway/s3-door.conf) and the local stack's
(deploy/local/gateway.sh, ``render_public_conf``), each in front of a stand-in for
MinIO that answers 200 to whatever reaches it and records it. The door must pass
presigned peer traffic (a GET of an object with its signature in the query, the
multipart POST form of an update) and nothing else: no request with an account's own
signature, no listing, no other method, nothing of MinIO's own (/minio/ metrics, health).
And the local gateway refuses to open the door in front of a MinIO that takes
``minioadmin``.
"""

from __future__ import annotations

import datetime
import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
S3_DOOR = ROOT / "deploy" / "gateway" / "s3-door.conf"
SIGNATURE = "X-Amz-Signature=" + "ab12" * 16
PRESIGNED_QUERY = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=peertrain-x%2F20261203%2Fus-east-1"
    "%2Fs3%2Faws4_request&X-Amz-Date=20261203T000000Z&X-Amz-Expires=600"
    f"&X-Amz-SignedHeaders=host&{SIGNATURE}"
)

pytestmark = pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed")


class FakeMinio(http.server.ThreadingHTTPServer):
    """Answers ``status`` to everything; remembers (method, raw path) of each request."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.seen: list[tuple[str, str]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FakeMinio

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.seen.append((self.command, self.path))
        self.send_response(self.server.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def minio() -> Iterator[FakeMinio]:
    server = FakeMinio()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate and its key (PEM files)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "peertrain.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return folder / "cert.pem", folder / "key.pem"


def local_stack(
    tmp_path: Path, script: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``script`` in bash after the local stack's env.sh, lib.sh, minio.sh and gateway.sh,
    with a data folder of its own (never the stack's; offset 0 keeps it that folder)."""
    prelude = (
        ". deploy/local/env.sh && . deploy/local/lib.sh && . deploy/local/minio.sh"
        " && . deploy/local/gateway.sh && "
    )
    return subprocess.run(
        ["bash", "-c", prelude + script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PEERTRAIN_VAR": str(tmp_path / "var"),
            "PEERTRAIN_PORT_OFFSET": "0",
            **env,
        },
    )


def compose_door(tls: tuple[Path, Path], listen: int, upstream: int, _: Path) -> str:
    door = S3_DOOR.read_text()
    door = door.replace("/run/secrets/tls_cert", str(tls[0]))
    door = door.replace("/run/secrets/tls_key", str(tls[1]))
    door = door.replace("listen 9443 ssl;", f"listen 127.0.0.1:{listen} ssl;")
    return door.replace("http://minio:9000", f"http://127.0.0.1:{upstream}")


def local_door(tls: tuple[Path, Path], listen: int, upstream: int, tmp_path: Path) -> str:
    done = local_stack(
        tmp_path,
        "render_public_conf",
        {
            "PEERTRAIN_PUBLIC_ADDRESS": "127.0.0.1",
            "PEERTRAIN_TLS_CERT": str(tls[0]),
            "PEERTRAIN_TLS_KEY": str(tls[1]),
        },
    )
    assert done.returncode == 0, done.stderr
    door = re.sub(r"listen 127\.0\.0\.1:\d+ ssl;", f"listen 127.0.0.1:{listen} ssl;", done.stdout)
    return re.sub(r"http://127\.0\.0\.1:\d+;", f"http://127.0.0.1:{upstream};", door)


@pytest.fixture(params=[compose_door, local_door], ids=["compose", "local"])
def door(
    request: pytest.FixtureRequest, tls: tuple[Path, Path], minio: FakeMinio, tmp_path: Path
) -> Iterator[str]:
    """An nginx serving the door on a free port; its base URL."""
    port = free_port()
    conf = request.param(tls, port, minio.port, tmp_path)
    prefix = tmp_path / "nginx"
    (prefix / "logs").mkdir(parents=True)
    (prefix / "door.conf").write_text(conf)
    (prefix / "nginx.conf").write_text(
        "pid nginx.pid;\n"
        "error_log logs/error.log warn;\n"
        "events {}\n"
        "http {\n"
        "    client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp;\n"
        "    uwsgi_temp_path tmp; scgi_temp_path tmp;\n"
        "    log_format peertrain_json '$remote_addr';\n"
        "    include door.conf;\n"
        "}\n"
    )
    conf_text = (prefix / "door.conf").read_text().replace("/dev/stdout", "logs/access.log")
    (prefix / "door.conf").write_text(conf_text)
    nginx = subprocess.Popen(
        [
            "nginx",
            "-p",
            f"{prefix}/",
            "-c",
            "nginx.conf",
            "-e",
            "logs/error.log",
            "-g",
            "daemon off;",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert nginx.poll() is None, nginx.stderr.read() if nginx.stderr else ""
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.1)
        yield f"https://127.0.0.1:{port}"
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)


def test_presigned_peer_requests_pass(door: str, minio: FakeMinio) -> None:
    key = "/peertrain/models/j1/v1.safetensors"
    form = {
        "key": "jobs/j1/rounds/1/updates/p1.safetensors",
        "policy": "e30=",
        "x-amz-signature": "ab",
    }
    with httpx.Client(base_url=door, verify=False, timeout=10) as http:
        assert http.get(f"{key}?{PRESIGNED_QUERY}").status_code == 200
        assert http.head(f"{key}?{PRESIGNED_QUERY}").status_code == 200
        posted = http.post("/peertrain", data=form, files={"file": ("u", b"weights")})
        assert posted.status_code == 200
        assert http.post("/peertrain/", data=form, files={"file": ("u", b"w")}).status_code == 200
        # a bucket of its own (S3_BUCKET; each test run has one)
        assert http.get(f"/pt-ds-1a2b/k?{PRESIGNED_QUERY}").status_code == 200
    # unchanged on their way: the signature covers the path and the query
    assert minio.seen == [
        ("GET", f"{key}?{PRESIGNED_QUERY}"),
        ("HEAD", f"{key}?{PRESIGNED_QUERY}"),
        ("POST", "/peertrain"),
        ("POST", "/peertrain/"),
        ("GET", f"/pt-ds-1a2b/k?{PRESIGNED_QUERY}"),
    ]


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [
        # an account's own signature (minioadmin or any other): not for this door
        ("GET", "/peertrain/x", {"Authorization": "AWS4-HMAC-SHA256 Credential=minioadmin/x"}),
        ("GET", f"/peertrain/x?{PRESIGNED_QUERY}", {"Authorization": "AWS4-HMAC-SHA256 x"}),
        # unsigned reads, listings
        ("GET", "/peertrain/datasets/d1/raw/data.csv", {}),
        ("GET", "/peertrain/x?X-Amz-Signature=forged", {}),
        ("GET", "/peertrain", {}),
        ("GET", "/peertrain/", {}),
        ("GET", f"/peertrain?list-type=2&{SIGNATURE}", {}),
        ("GET", "/", {}),
        # MinIO's own: metrics, health, admin, console API
        ("GET", "/minio/v2/metrics/cluster", {}),
        ("GET", "/minio/v2/metrics/node", {}),
        ("GET", "/minio/health/live", {}),
        ("GET", f"/minio/admin/v3/info?{SIGNATURE}", {}),
        ("GET", "/peertrain/%2e%2e/minio/v2/metrics/cluster", {}),
        ("POST", "/minio", {"Content-Type": "multipart/form-data; boundary=x"}),
        ("GET", f"/minio/v2/metrics/cluster?{PRESIGNED_QUERY}", {}),
        # other methods, and the bucket's other POSTs
        ("PUT", f"/peertrain/x?{PRESIGNED_QUERY}", {}),
        ("DELETE", f"/peertrain/x?{PRESIGNED_QUERY}", {}),
        ("POST", f"/peertrain/x?uploads&{SIGNATURE}", {}),
        ("POST", f"/peertrain?delete&{SIGNATURE}", {"Content-Type": "multipart/form-data; b=x"}),
        ("POST", "/peertrain", {"Content-Type": "application/xml"}),
    ],
)
def test_everything_else_is_refused_at_the_door(
    door: str, minio: FakeMinio, method: str, target: str, headers: dict[str, str]
) -> None:
    with httpx.Client(base_url=door, verify=False, timeout=10) as http:
        answer = http.request(method, target, headers=headers, content=b"x")
    assert answer.status_code == 403, answer.text
    assert minio.seen == []


def test_the_local_door_stays_shut_while_minio_takes_its_default_keys(
    tmp_path: Path, minio: FakeMinio
) -> None:
    """A MinIO that accepts minioadmin (the fake accepts anything) keeps it shut."""
    check = f"MINIO_PORT={minio.port}; s3_door_keys_safe"
    public = {"PEERTRAIN_PUBLIC_ADDRESS": "127.0.0.1"}
    done = local_stack(tmp_path, check, public)
    assert done.returncode == 1, done.stderr
    assert "default keys (minioadmin)" in done.stderr and "stays shut" in done.stderr
    assert minio.seen == [("GET", "/")]  # the probe, signed with the default keys
    minio.status = 403  # one that refuses them: the door may open
    assert local_stack(tmp_path, check, public).returncode == 0
    # loopback only: nothing to check
    assert local_stack(tmp_path, check, {"PEERTRAIN_PUBLIC_ADDRESS": ""}).returncode == 0


def test_the_local_door_stays_shut_when_the_stacks_keys_are_the_defaults(
    tmp_path: Path, minio: FakeMinio
) -> None:
    minio.status = 403
    secrets = tmp_path / "var" / "secrets"
    secrets.mkdir(parents=True)
    (secrets / "minio").write_text("access_key=minioadmin\nsecret_key=minioadmin\n")
    done = local_stack(
        tmp_path,
        f"MINIO_PORT={minio.port}; s3_door_keys_safe",
        {"PEERTRAIN_PUBLIC_ADDRESS": "127.0.0.1"},
    )
    assert done.returncode == 1 and "stays shut" in done.stderr, done.stderr


def test_the_local_stack_makes_minio_keys_of_its_own(tmp_path: Path) -> None:
    """Random, 0600, the same on every use, handed to every service's settings."""
    show = (
        'echo "$PEERTRAIN_S3_ACCESS_KEY $PEERTRAIN_AUTH_S3_SECRET_KEY'
        ' $PEERTRAIN_AGGREGATOR_S3_ACCESS_KEY"'
    )
    first = local_stack(tmp_path, show, {})
    assert first.returncode == 0, first.stderr
    access, secret, again = first.stdout.split()
    assert access == again and access.startswith("peertrain-") and len(secret) >= 40
    assert "minioadmin" not in (access, secret)
    keys = tmp_path / "var" / "secrets" / "minio"
    assert keys.stat().st_mode & 0o777 == 0o600
    assert keys.parent.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "var").stat().st_mode & 0o077, "the stack's folder stays readable"
    assert local_stack(tmp_path, show, {}).stdout == first.stdout
    other = local_stack(tmp_path / "other", show, {})
    assert other.stdout.split()[1] != secret
