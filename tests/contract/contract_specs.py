"""The contract suite's job specs: one set, run on the simulation and on the platform.

Each :class:`Case` is a job (``model``, ``training``, ``aggregation``, ``sharding``) on
a small dataset (scikit-learn's bundled digits, as a CSV a user would upload) and the
behaviour of each of its peers, in shard order. The same case runs on both backends:
``tests/contract/test_sim_contract.py`` runs it on :func:`peertrain.sim.run` (no stack)
and ``tests/stack/training/test_contract.py`` on the real platform, with real peer
processes (``tests/stack/hostile_peer.py`` for the peers that misbehave), and compares
the final weights bit for bit with the simulation's.

Peer behaviours (the platform's hostile-peer mode, the simulation's :class:`Volunteers`):

``honest``
    The peer runtime as it is.
``flip``
    Trains honestly and uploads its delta times -20 (``hostile_peer.py --mode flip``,
    the simulation's ``hostile_mode="flip"``).
``nan``
    Uploads its honest delta with one NaN (``--mode nan``; ``hostile_mode="nan"``).
``silent``
    Never answers its task of round 1, attempt 1, while staying online (``--mode
    silent``; the simulation's ``unanswered``); honest after.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

import numpy as np
import torch

import peertrain.sim as sim

__all__ = [
    "CASES",
    "DIVERGING",
    "LABEL_COLUMN",
    "Behaviour",
    "Case",
    "digits_csv",
    "sim_data",
    "simulate",
]

Behaviour = Literal["honest", "flip", "nan", "silent"]

LABEL_COLUMN = "digit"
HOLDOUT_FRACTION = 0.2
ROWS = 600
"""Digits rows uploaded (of 1,797): enough for every shard of a Dirichlet(0.3) split."""

MODEL = {"arch": "mlp", "hidden": [32]}
TRAINING = {
    "rounds": 3,
    "local_epochs": 1,
    "batch_size": 16,
    "lr": 0.05,
    "optimizer": "sgd",
    "momentum": 0.9,
    "seed": 23,
}


@dataclass(frozen=True)
class Case:
    """One job and how each of its peers behaves (peer ``k`` owns shard ``k``)."""

    name: str
    peers: tuple[Behaviour, ...]
    aggregation: dict[str, Any] = field(default_factory=dict)
    sharding: dict[str, Any] = field(default_factory=lambda: {"strategy": "iid"})
    training: dict[str, Any] = field(default_factory=dict)

    def spec(self) -> dict[str, Any]:
        """The job's blocks, as a job file or ``POST /api/jobs`` names them."""
        return {
            "model": MODEL,
            "training": {**TRAINING, **self.training},
            "aggregation": {"strategy": "fedavg", "min_peers": 1, **self.aggregation},
            "sharding": self.sharding,
        }

    def volunteers(self) -> sim.Volunteers:
        """The simulation's peers behaving as the platform's peers of this case do."""
        modes = {b for b in self.peers if b in ("flip", "nan")}
        assert len(modes) <= 1, "one hostile mode per case"
        return sim.Volunteers(
            hostile_indices=tuple(k for k, b in enumerate(self.peers) if b in modes),
            hostile_mode=modes.pop() if modes else "norm",
            unanswered=tuple((k, 1, 1) for k, b in enumerate(self.peers) if b == "silent"),
        )


CASES: dict[str, Case] = {
    case.name: case
    for case in (
        Case("fedavg-iid", ("honest",) * 4),
        Case(
            "fedprox-dirichlet",
            ("honest",) * 4,
            aggregation={"strategy": "fedprox"},
            sharding={"strategy": "dirichlet", "alpha": 0.3},
            training={"proximal_mu": 0.1},
        ),
        Case(
            "fedadam-dirichlet",
            ("honest",) * 4,
            aggregation={"strategy": "fedadam"},
            sharding={"strategy": "dirichlet", "alpha": 0.3},
        ),
        # The strategy is what stands in the two peers' way: no norm bound refuses
        # their -20x updates (a refusal would send the shard to a spare peer, and which
        # one depends on who is still busy: it could be the other hostile peer).
        Case(
            "trimmed-mean-two-hostile",
            ("honest", "honest", "honest", "flip", "flip"),
            aggregation={
                "strategy": "trimmed_mean",
                "trim_fraction": 0.4,
                "max_update_norm": 1e6,
                "norm_outlier": None,
            },
        ),
        # min_peers is every peer: the round's first attempt closes at its deadline
        # with one update short, fails and is opened again.
        Case(
            "dropout-reopened",
            ("honest", "honest", "silent"),
            aggregation={"min_peers": 3, "round_deadline_s": 10},
        ),
        Case(
            "nan-peer-excluded",
            ("honest", "honest", "honest", "nan"),
            aggregation={"exclude_after": 2},
        ),
        # Compressed updates: the peers' encode step (and top-k's residual, kept per
        # peer and shard between rounds) is the simulation's, bit for bit.
        Case("int8-blockwise", ("honest",) * 4, training={"compression": {"kind": "int8"}}),
        Case(
            "topk-error-feedback",
            ("honest",) * 4,
            training={"compression": {"kind": "topk", "ratio": 0.1}},
        ),
    )
}


DIVERGING = Case(
    "diverging",
    ("honest",) * 3,
    training={"lr": 10.0, "momentum": 0.99},
)
"""A learning rate no model survives: the job fails by itself, ``training_diverged``,
and no peer is blamed (not in ``CASES``: it does not complete)."""


@cache
def digits_csv(rows: int = ROWS) -> bytes:
    """The first ``rows`` of scikit-learn's digits as ``p0..p63,digit`` CSV."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    table = np.concatenate([digits.data[:rows], digits.target[:rows, None]], axis=1)
    out = io.StringIO()
    out.write(",".join([*(f"p{i}" for i in range(64)), LABEL_COLUMN]) + "\n")
    np.savetxt(out, table.astype(np.int64), fmt="%d", delimiter=",")
    return out.getvalue().encode()


def sim_data(tmp_dir: Any, dataset_id: str) -> sim.SimData:
    """The digits as the dataset service prepares them for ``dataset_id`` (its holdout
    is seeded from the id)."""
    path = tmp_dir / "digits.csv"
    path.write_bytes(digits_csv())
    return sim.load_data(
        path,
        label_column=LABEL_COLUMN,
        holdout_fraction=HOLDOUT_FRACTION,
        dataset_id=dataset_id,
    )


def simulate(case: Case, data: sim.SimData) -> sim.SimResult:
    """``case`` on the simulation, on the CPU with one torch thread, as the platform's
    test peers train (the process's thread count is put back after)."""
    threads = torch.get_num_threads()
    try:
        return sim.run(
            case.spec(),
            data,
            peers=len(case.peers),
            volunteers=case.volunteers(),
            device="cpu",
            threads=1,
        )
    finally:
        torch.set_num_threads(threads)
