"""A real peer runtime that trains honestly but uploads or announces something hostile.

Usage (same environment and config-dir conventions as ``peertrain-peer run``; see
``PeerProcess.start(script=..., args=["--mode", MODE])``)::

    python tests/stack/hostile_peer.py --mode MODE [--config-dir DIR] [--interval S]

Modes:

``nan``
    The honest delta with one NaN.
``shape``
    The honest delta with one tensor one row too long.
``norm``
    The honest delta scaled to an L2 norm of 10**7 (over any bound a job has).
``flip``
    The honest delta times -20 (the ``storm`` peer's update, with nothing else).
``silent``
    Never answers its task of round 1, attempt 1 (no ``accepted``, no update) while it
    keeps heartbeating; honest after. Its round waits for the deadline.
``pickle``
    A ``torch.save`` file (a pickle in a zip) that, if ever unpickled, creates the file
    named by ``PEERTRAIN_TEST_CANARY``. Nothing here ever loads it.
``duplicate``
    The honest update, announced twice.
``cycle``
    Round 1 ``nan``, round 2 ``shape``, round 3 ``norm``, round 4 ``pickle``; honest after.
``storm``
    Every round, everything at once: uploads -20x its honest delta; announces that
    update for every other task id it can guess (ids follow
    ``{job}.r{r}.a{a}.s{shard}.{n}``); floods progress for its own task; and, once the
    aggregator has had time to accept it, posts its upload form again with other bytes.

Lazy modes (plausible updates that pass every check on their numbers; only checked
work, ``aggregation.verify``, finds them; ``peertrain.sim`` has the same):

``zeros``
    An all-zero update of the right tensors.
``replay``
    The update it sent last, again (its first is honest: it has nothing to replay).
``noise``
    Gaussian noise with the norm of its honest update.
``tenth``
    Trains on the first tenth of its shard only.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import pathlib
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from peertrain.common.events.tasks import (
    PROGRESS,
    UPDATE,
    TaskMessage,
    TaskProgressBody,
    UpdateAnnounced,
)
from peertrain.common.logging import configure_logging
from peertrain.ml.training import TrainResult
from peertrain.ml.weights import state_to_bytes
from peertrain.peer.config import PeerSettings
from peertrain.peer.trainer import Trainer
from peertrain.peer.transfer import upload_form

CANARY_ENV = "PEERTRAIN_TEST_CANARY"


class NanTrainer(Trainer):
    """Uploads the honest delta with a NaN in its first floating tensor."""

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        delta = dict(result.delta)
        name = next(k for k, v in delta.items() if v.is_floating_point() and v.numel())
        bad = delta[name].clone()
        bad.view(-1)[0] = float("nan")
        delta[name] = bad
        return state_to_bytes(delta)


class ShapeTrainer(Trainer):
    """Uploads the honest delta with one tensor one row too long."""

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        delta = dict(result.delta)
        name = next(k for k, v in delta.items() if v.dim() >= 1)
        t = delta[name]
        delta[name] = torch.zeros((t.shape[0] + 1, *t.shape[1:]), dtype=t.dtype)
        return state_to_bytes(delta)


HUGE_NORM = 1e7
"""What ``norm`` scales the honest delta to: over the bound sized for any model (three
times the root of its number of values) up to 10**13 values, and over every bound a
test job sets."""


class NormTrainer(Trainer):
    """Uploads the honest delta scaled to an L2 norm of :data:`HUGE_NORM`."""

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        floats = [v.double() for v in result.delta.values() if v.is_floating_point()]
        scale = HUGE_NORM / max(float(sum((v * v).sum() for v in floats)) ** 0.5, 1e-12)
        return state_to_bytes(
            {k: v * scale if v.is_floating_point() else v for k, v in result.delta.items()}
        )


class FlipTrainer(Trainer):
    """Uploads the honest delta times -20."""

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        return state_to_bytes(
            {k: v * -20 if v.is_floating_point() else v for k, v in result.delta.items()}
        )


class SilentTrainer(Trainer):
    """Takes its task of round 1, attempt 1 off the queue and never answers it."""

    def run(self, task: TaskMessage) -> UpdateAnnounced | None:
        if (task.round, task.attempt) == (1, 1):
            return None
        return super().run(task)


class _Canary:
    """Unpickled, it calls ``pathlib.Path.touch(path)``: proof that someone unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (pathlib.Path.touch, (pathlib.Path(self.path),))


def canary_payload(canary: str) -> bytes:
    """A ``torch.save`` file of a state-dict-like mapping holding a :class:`_Canary`."""
    buf = io.BytesIO()
    torch.save({"layers.0.weight": _Canary(canary), "layers.0.bias": torch.zeros(16)}, buf)
    return buf.getvalue()


class PickleTrainer(Trainer):
    """Uploads a pickle that would create the canary file if it were ever unpickled."""

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        canary = os.environ.get(CANARY_ENV)
        if not canary:
            raise RuntimeError(f"{CANARY_ENV} is not set")
        return canary_payload(canary)


class DuplicateTrainer(Trainer):
    """Uploads the honest update and announces it twice."""

    def announce(self, task: TaskMessage, announced: UpdateAnnounced) -> None:
        super().announce(task, announced)
        super().announce(task, announced)


class CycleTrainer(Trainer):
    """A different attack each round (1: nan, 2: shape, 3: norm, 4: pickle), then honest."""

    ATTACKS: dict[int, type[Trainer]] = {
        1: NanTrainer,
        2: ShapeTrainer,
        3: NormTrainer,
        4: PickleTrainer,
    }

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        attack = self.ATTACKS.get(task.round)
        if attack is None:
            return super().make_update_bytes(task, result)
        return attack.make_update_bytes(self, task, result)


class StormTrainer(FlipTrainer):
    """-20x updates, spoofed announcements, a progress flood and an overwritten upload."""

    FLOOD = 300
    GUESSES = 8

    def announce(self, task: TaskMessage, announced: UpdateAnnounced) -> None:
        super().announce(task, announced)
        ref = {k: getattr(task, k) for k in ("task_id", "job_id", "round", "attempt", "shard")}
        flood = TaskProgressBody(
            **ref, epoch=1, epochs=1, loss=0.1, accuracy=0.9, samples=1, duration_s=0.0
        )
        for _ in range(self.FLOOD):
            self.send(PROGRESS, flood)
        head, _, n = task.task_id.rpartition(".")
        base = head.rpartition(".s")[0]
        for shard in range(self.GUESSES):
            for k in range(int(n) - self.GUESSES, int(n) + self.GUESSES):
                guess = f"{base}.s{shard}.{k}"
                if guess != task.task_id:
                    self.send(
                        UPDATE, announced.model_copy(update={"task_id": guess, "shard": shard})
                    )
        time.sleep(2.0)
        upload_form(self.http, task.upload, b"not what was accepted" * 64)


class ZerosTrainer(Trainer):
    """Uploads an all-zero update."""

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        return state_to_bytes({k: torch.zeros_like(v) for k, v in result.delta.items()})


class ReplayTrainer(Trainer):
    """Uploads the update it sent last (its first is the honest one)."""

    last: bytes | None = None

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        if self.last is None:
            self.last = super().make_update_bytes(task, result)
        return self.last


class NoiseTrainer(Trainer):
    """Uploads Gaussian noise with the L2 norm of its honest update."""

    def make_update_bytes(self, task: TaskMessage, result: TrainResult) -> bytes:
        delta = result.delta
        floats = {k: v for k, v in delta.items() if v.is_floating_point()}
        noise = {k: torch.randn_like(v) for k, v in floats.items()}
        want = float(sum(v.double().square().sum() for v in floats.values())) ** 0.5
        have = float(sum(v.double().square().sum() for v in noise.values())) ** 0.5
        scale = want / max(have, 1e-12)
        return state_to_bytes({k: noise[k] * scale if k in noise else v for k, v in delta.items()})


class TenthTrainer(Trainer):
    """Trains on the first tenth of its shard (and uploads that delta)."""

    def fetch_shard(self, task: TaskMessage) -> Path:
        whole = super().fetch_shard(task)
        with np.load(whole, allow_pickle=False) as npz:
            x, y = npz["X"], npz["y"]
        cut = max(1, len(y) // 10)
        tenth = whole.with_name(whole.name + ".tenth.npz")
        np.savez(tenth, X=x[:cut], y=y[:cut])
        return tenth


MODES: dict[str, type[Trainer]] = {
    "nan": NanTrainer,
    "shape": ShapeTrainer,
    "norm": NormTrainer,
    "flip": FlipTrainer,
    "silent": SilentTrainer,
    "pickle": PickleTrainer,
    "duplicate": DuplicateTrainer,
    "cycle": CycleTrainer,
    "storm": StormTrainer,
    "zeros": ZerosTrainer,
    "replay": ReplayTrainer,
    "noise": NoiseTrainer,
    "tenth": TenthTrainer,
}


def main(argv: list[str] | None = None) -> int:
    """Parse the options and run the peer until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", required=True, choices=sorted(MODES))
    parser.add_argument("--config-dir", type=Path, default=None)
    parser.add_argument("--interval", type=float, default=None)
    parser.add_argument("--api", default=None)
    parser.add_argument("--log-level", default=None)
    opts = parser.parse_args(argv)
    if opts.mode in ("pickle", "cycle") and not os.environ.get(CANARY_ENV):
        print(f"hostile_peer: --mode {opts.mode} needs {CANARY_ENV}", file=sys.stderr)
        return 2
    overrides: dict[str, Any] = {
        "config_dir": opts.config_dir,
        "heartbeat_interval_s": opts.interval,
        "log_level": opts.log_level,
    }
    settings = PeerSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging("peer", level=settings.log_level, json=not sys.stderr.isatty())
    from peertrain.peer.runtime import run

    asyncio.run(run(settings, api_url=opts.api, trainer_factory=MODES[opts.mode]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
