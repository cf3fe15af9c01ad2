"""Auth benchmark: local token verification rate, and login latency through the gateway.

    python benchmarks/auth.py [--verifications N] [--logins N]

``verify_per_s``: RS256 access tokens (as auth issues them) verified per second by
``peertrain.common.security.TokenVerifier`` in this one process (goal: >= 5,000).
``login_p50_ms``: median of sequential ``POST /api/auth/token`` calls through the
gateway at http://127.0.0.1:8080 (Argon2id chosen so this is 50-250 ms here).

Uses the auth service already running on port 8001 when there is one (``make up``);
otherwise starts one with a throw-away database and drops it afterwards. The last
line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from jose import jwk, jwt
from pymongo import MongoClient

from peertrain.auth.config import AuthSettings
from peertrain.auth.domain.keys import generate_key
from peertrain.auth.domain.tokens import access_claims
from peertrain.common.security import (
    ACCESS_TOKEN_TYPE,
    DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
    DisabledUsers,
    KeySet,
    TokenVerifier,
)
from peertrain.testkit.auth import (
    GATEWAY_URL,
    auth_process,
    auth_queue_prefix,
    delete_auth_queues,
    port_in_use,
)


def bench_verify(n: int) -> float:
    """Verifications per second of distinct, valid access tokens."""
    key = generate_key()
    signer = jwk.construct(key.private_pem, "RS256")
    keys = KeySet()
    keys.replace([key.jwk.model_dump()], version=1)
    verifier = TokenVerifier(
        keys, DisabledUsers(), issuer=DEFAULT_ISSUER, audience=DEFAULT_AUDIENCE
    )
    now = int(time.time())
    tokens = [
        jwt.encode(
            access_claims(
                subject=str(uuid.uuid4()),
                roles=("user",),
                issuer=DEFAULT_ISSUER,
                audience=DEFAULT_AUDIENCE,
                now=now,
                ttl_s=900,
                username=f"user{i}",
            ),
            signer,
            "RS256",
            headers={"kid": key.kid, "typ": ACCESS_TOKEN_TYPE},
        )
        for i in range(min(n, 1000))
    ]
    for token in tokens[:100]:  # warm-up
        verifier.verify(token)
    started = time.perf_counter()
    for i in range(n):
        verifier.verify(tokens[i % len(tokens)])
    return n / (time.perf_counter() - started)


def bench_login(n: int) -> list[float]:
    """Latencies (ms) of ``n`` sequential successful logins through the gateway."""
    name, password = f"bench{uuid.uuid4().hex[:10]}", f"bench {secrets.token_urlsafe(16)}"
    with httpx.Client(base_url=GATEWAY_URL, timeout=30) as http:
        r = http.post("/register", json={"username": name, "password": password})
        r.raise_for_status()
        form = {"username": name, "password": password}
        http.post("/token", data=form).raise_for_status()  # warm-up
        latencies = []
        for _ in range(n):
            started = time.perf_counter()
            r = http.post("/token", data=form)
            latencies.append((time.perf_counter() - started) * 1000)
            r.raise_for_status()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verifications", type=int, default=20_000)
    parser.add_argument("--logins", type=int, default=40)
    args = parser.parse_args()

    settings = AuthSettings()
    started_here = None
    tmp = None
    if not port_in_use(settings.port):
        tmp = tempfile.TemporaryDirectory(prefix="peertrain-bench-auth-")
        db = f"pt_bench_auth_{uuid.uuid4().hex[:8]}"
        started_here = auth_process(
            mongo_db=db,
            key_dir=Path(tmp.name) / "keys",
            admin_password="bench " + secrets.token_urlsafe(16),
            log_dir=Path(tmp.name),
            extra_env={
                "PEERTRAIN_AUTH_ARGON2_TIME_COST": str(settings.argon2_time_cost),
                "PEERTRAIN_AUTH_ARGON2_MEMORY_KIB": str(settings.argon2_memory_kib),
                "PEERTRAIN_AUTH_ARGON2_PARALLELISM": str(settings.argon2_parallelism),
            },
        )
        print(f"starting auth on port {settings.port} (database {db})", file=sys.stderr)
        started_here.start()
    try:
        verify_per_s = bench_verify(args.verifications)
        print(f"verify: {verify_per_s:,.0f} tokens/s", file=sys.stderr)
        latencies = bench_login(args.logins)
    finally:
        if started_here is not None:
            started_here.stop()
            delete_auth_queues(auth_queue_prefix(db))
            mongo: MongoClient[dict[str, Any]]
            with MongoClient(settings.mongo_url, serverSelectionTimeoutMS=5000) as mongo:
                mongo.drop_database(db)
                mongo.drop_database(f"{db}_auth")
        if tmp is not None:
            tmp.cleanup()
    latencies.sort()
    result: dict[str, Any] = {
        "verify_per_s": round(verify_per_s),
        "login_p50_ms": round(statistics.median(latencies), 1),
        "login_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1),
        "logins": len(latencies),
        "verifications": args.verifications,
        "argon2id": {
            "time_cost": settings.argon2_time_cost,
            "memory_kib": settings.argon2_memory_kib,
            "parallelism": settings.argon2_parallelism,
        },
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
