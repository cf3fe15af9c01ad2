"""The ``peertrain`` CLI as a subprocess, the way a user runs it.

::

    cli = CliProcess([peertrain, "--api", api], env)
    cli.ok("login", "-u", name, password=secret)
    job_id = create_job(cli, "--dataset", dataset_id, "--peer", peer_id, ...)
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CliProcess", "create_job"]


class CliProcess:
    """``command *args`` (``command``: the CLI with its ``--api``, behind whatever
    prefix runs it elsewhere, e.g. ``ip netns exec NS``), with ``env`` as its
    environment (its config directory, its trust store)."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        self.command = list(command)
        self.env = dict(env)

    def __call__(
        self, *args: str, password: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if password is not None:  # never on the command line
            env["PEERTRAIN_PASSWORD"] = password
        return subprocess.run(  # noqa: S603 (the test's own command)
            [*self.command, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def ok(self, *args: str, **kwargs: Any) -> str:
        """Run; assert exit 0; its stdout."""
        done = self(*args, **kwargs)
        assert done.returncode == 0, f"peertrain {' '.join(args)}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        """Run with ``--json``; the parsed stdout."""
        return json.loads(self.ok(*args, "--json"))


def create_job(cli: CliProcess, *args: str, timeout: float = 60) -> str:
    """``job create *args --json``, again while the orchestrator has not yet seen the
    peers online (``peers_unavailable``); the job's id."""
    deadline = time.monotonic() + timeout
    while True:
        done = cli("job", "create", *args, "--json")
        if done.returncode == 0:
            return str(json.loads(done.stdout)["job_id"])
        assert "peers_unavailable" in done.stderr, done.stderr
        assert time.monotonic() < deadline, f"the job was not created: {done.stderr}"
        time.sleep(1)  # a poll interval: the orchestrator folds peer.went_online
