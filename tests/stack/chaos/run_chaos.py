"""``make chaos``: the long chaos run, outside pytest; one JSON line last.

Environment: ``CHAOS_SEED`` (default 1), ``CHAOS_JOBS`` (3), ``CHAOS_PEERS`` (4 per job),
``CHAOS_ROUNDS`` (80), ``CHAOS_TIMEOUT_S`` (2400). Exit status 1 when an invariant was
violated (each is printed before the JSON line). See :mod:`chaos`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parent, HERE.parent / "training", HERE.parents[1] / "contract"):
    sys.path.insert(0, str(extra))

from chaos import chaos_platform, digits_data, job_body, run_chaos  # noqa: E402
from hanging_proxy import ThreadedProxy  # noqa: E402

from peertrain.testkit.common import stack_port  # noqa: E402


class _Temp:
    """What :func:`training_support.run_platform` asks of pytest's ``tmp_path_factory``."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="peertrain-chaos-"))

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.base))

    def getbasetemp(self) -> Path:
        return self.base


def main() -> int:
    env = os.environ
    link = ThreadedProxy(stack_port(5672))
    temp = _Temp()
    print(f"chaos: logs in {temp.base}", file=sys.stderr)
    platforms = chaos_platform(uuid.uuid4().hex[:8], temp, link)
    platform = next(platforms)
    try:
        report = asyncio.run(
            run_chaos(
                platform,
                seed=int(env.get("CHAOS_SEED", "1")),
                jobs=int(env.get("CHAOS_JOBS", "3")),
                peers_per_job=int(env.get("CHAOS_PEERS", "4")),
                rounds=int(env.get("CHAOS_ROUNDS", "80")),
                proxy=link,
                job_body=job_body,
                data=digits_data(),
                timeout_s=float(env.get("CHAOS_TIMEOUT_S", "2400")),
            )
        )
    finally:
        platforms.close()  # stops the platform (the generator's cleanup)
        link.close()
    for fault in report.faults:
        print(
            f"fault {fault.index}: {fault.at_s:7.2f}s {fault.action} {fault.target} "
            f"for {fault.down_s}s",
            file=sys.stderr,
        )
    for violation in report.violations:
        print(f"VIOLATION: {violation}")
    print(json.dumps(report.summary()))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
