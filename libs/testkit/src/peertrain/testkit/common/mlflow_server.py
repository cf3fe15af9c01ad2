"""A real MLflow tracking server for tests of ``peertrain job export --mlflow``.

``mlflow server`` needs the full ``mlflow`` package (SQLAlchemy, alembic, Flask, ...),
never a project dependency: it runs from its own cached venv, built the first time by
``deploy/local/mlflow-venv.sh``. It listens on a free local port, with a SQLite store and
its artifacts under a folder of the test's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from .ports import free_port

__all__ = ["MlflowServer", "MlflowServerFailed"]

_ROOT = Path(__file__).resolve().parents[6]  # the checkout (libs/testkit/src/peertrain/...)
_VENV_SCRIPT = _ROOT / "deploy" / "local" / "mlflow-venv.sh"


class MlflowServerFailed(RuntimeError):
    """The server exited or did not answer in time (the message ends with its log)."""


@dataclass
class MlflowServer:
    """``mlflow server`` on a free port: SQLite store and artifacts under ``root``.

    Examples
    --------
    >>> server = MlflowServer.launch(tmp_path)  # doctest: +SKIP
    >>> try:
    ...     server.wait_ready()
    ...     ...  # export to server.uri
    ... finally:
    ...     server.stop()
    """

    root: Path
    port: int
    proc: subprocess.Popen[bytes]
    log: IO[bytes]

    @property
    def uri(self) -> str:
        """The tracking URI."""
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def launch(cls, root: Path) -> MlflowServer:
        """Start it (the venv is built the first time); :meth:`wait_ready` waits."""
        venv = subprocess.run(  # noqa: S603 (our own script)
            ["bash", str(_VENV_SCRIPT)],  # noqa: S607 (bash from PATH, as make runs it)
            capture_output=True,
            text=True,
            check=True,
            timeout=900,
        ).stdout.strip()
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PEERTRAIN_", "MLFLOW_"))}
        env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # no job runner, no workers
        log = (root / "mlflow-server.log").open("ab")
        args = ["--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}"]
        args += ["--artifacts-destination", str(root / "artifacts")]
        args += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
        proc = subprocess.Popen(  # noqa: S603 (the venv our script built)
            [f"{venv}/bin/mlflow", "server", *args],
            env=env,
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its uvicorn child goes with it (killpg)
        )
        return cls(root, port, proc, log)

    def tail(self) -> str:
        """The last lines of its log."""
        text = (self.root / "mlflow-server.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-30:])

    def wait_ready(self, timeout: float = 300) -> None:
        """Until ``/health`` answers 200.

        Raises
        ------
        MlflowServerFailed
            It exited, or did not answer within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2) as http:  # one client: each costs an SSL context
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise MlflowServerFailed(
                        f"mlflow server exited with {self.proc.returncode}:\n{self.tail()}"
                    )
                try:
                    if http.get(f"{self.uri}/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)  # polling a condition, not settling
        raise MlflowServerFailed(f"mlflow server not ready after {timeout}s:\n{self.tail()}")

    def stop(self) -> None:
        """Stop it and its workers (TERM, then KILL after 20 s)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.log.close()
