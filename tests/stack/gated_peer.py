"""A real, honest peer runtime that holds one round's update until a test opens a gate.

Usage (same environment and config-dir conventions as ``peertrain-peer run``; see
``PeerProcess.start(script=..., args=[...])``)::

    python tests/stack/gated_peer.py --gate-round R --gate-file PATH [--interval S]

Its task of round ``R`` is accepted and trained as ever; then the trainer waits until
``PATH`` exists (at most ``--gate-timeout`` seconds) before it uploads and announces the
update. A test can so take the broker away while every peer's task is surely in flight,
and let the updates be produced while the link is down.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import structlog

from peertrain.common.events.tasks import TaskMessage
from peertrain.common.logging import configure_logging
from peertrain.ml.training import TrainResult
from peertrain.peer.config import PeerSettings
from peertrain.peer.trainer import Trainer

log = structlog.get_logger("gated_peer")


def gated(gate_round: int, gate_file: Path, timeout_s: float) -> type[Trainer]:
    """A :class:`Trainer` that holds its round-``gate_round`` update until ``gate_file``."""

    class GatedTrainer(Trainer):
        def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
            if task.round == gate_round:
                log.info("update trained; holding it at the gate", round=task.round)
                deadline = time.monotonic() + timeout_s
                while not gate_file.exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                log.info("gate open; uploading", round=task.round)
            return super().make_update_bytes(task, result)

    return GatedTrainer


def main(argv: list[str] | None = None) -> int:
    """Parse the options and run the peer until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate-round", type=int, required=True)
    parser.add_argument("--gate-file", type=Path, required=True)
    parser.add_argument("--gate-timeout", type=float, default=300.0)
    parser.add_argument("--config-dir", type=Path, default=None)
    parser.add_argument("--interval", type=float, default=None)
    opts = parser.parse_args(argv)
    overrides: dict[str, Any] = {
        "config_dir": opts.config_dir,
        "heartbeat_interval_s": opts.interval,
    }
    settings = PeerSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging("peer", level=settings.log_level, json=not sys.stderr.isatty())
    from peertrain.peer.runtime import run

    trainer = gated(opts.gate_round, opts.gate_file, opts.gate_timeout)
    asyncio.run(run(settings, trainer_factory=trainer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
