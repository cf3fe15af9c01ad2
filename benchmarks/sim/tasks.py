"""The two tasks of ``make bench-sim``, written as directories any backend can read.

* ``anchor``: scikit-learn's digits, 20% held out, 4 clients with IID shards, all 4
  every round, 30 rounds (the anchor task of ``benchmarks/rounds.py``).
* ``many``: MNIST 10k (the shipped t10k files), 20% held out, 1,000 clients with a
  Dirichlet(0.5) label split, 100 clients per round, 10 rounds.

Both train an MLP (flattened input -> 128 ReLU -> classes) with SGD, lr 0.05, no
momentum, batch 32, 1 local epoch. The data goes through the platform's own rules: the
stratified holdout of the dataset service, features standardised with the training
part's mean and standard deviation (its table encoding, as for an uploaded CSV), and
shards from its sharding strategies (imported, not copied). Same seed, same directory,
so PeerTrain's simulation and Flower train on the very same split.

A task directory holds:

* ``task.json``: the task (see :func:`write_task`);
* ``data.npz``: ``train_x`` (float32, rows x features), ``train_y`` (int64),
  ``holdout_x``, ``holdout_y``, and the clients' shards as ``client_rows`` (row indices
  into ``train_x``, client after client, ascending within a client) cut by
  ``client_offsets`` (``clients + 1`` entries: client ``k`` owns
  ``client_rows[client_offsets[k]:client_offsets[k + 1]]``).

Run as a script: ``python benchmarks/sim/tasks.py OUT_DIR`` writes ``OUT_DIR/anchor``
and ``OUT_DIR/many`` and prints their paths.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from peertrain.dataset.domain.holdout import stratified_holdout
from peertrain.dataset.domain.sharding.base import ShardingStrategy
from peertrain.dataset.domain.sharding.dirichlet import DirichletStrategy
from peertrain.dataset.domain.sharding.iid import IidStrategy

__all__ = ["ANCHOR", "MANY", "MNIST_DIR", "TASKS", "load_task", "write_task", "write_tasks"]

MNIST_DIR = Path("/work/shared/data/mnist")
# sha256 of the gzip files, from the data folder's README
MNIST_SHA256 = {
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}
HOLDOUT_FRACTION = 0.2
TRAINING = {
    "optimizer": "sgd",
    "lr": 0.05,
    "momentum": 0.0,
    "batch_size": 32,
    "local_epochs": 1,
    "seed": 3,
}
MODEL = {"arch": "mlp", "hidden": [128]}

ANCHOR: dict[str, Any] = {
    "name": "anchor",
    "dataset": "digits",
    "rounds": 30,
    "clients": 4,
    "clients_per_round": 4,
    "sharding": {"strategy": "iid", "seed": 3},
}
MANY: dict[str, Any] = {
    "name": "many",
    "dataset": "mnist-10k",
    "rounds": 10,
    "clients": 1000,
    "clients_per_round": 100,
    "sharding": {"strategy": "dirichlet", "alpha": 0.5, "seed": 3},
}
TASKS = {"anchor": ANCHOR, "many": MANY}


def _read_idx(path: Path) -> NDArray[np.uint8]:
    """One IDX file (gzip), its sha256 checked: ``uint8`` in the shape its header gives."""
    import hashlib

    packed = path.read_bytes()
    expected = MNIST_SHA256.get(path.name)
    if expected is not None and hashlib.sha256(packed).hexdigest() != expected:
        raise ValueError(f"{path}: sha256 differs from the data README's")
    raw = gzip.decompress(packed)
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def _dataset(name: str, mnist_dir: Path) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """Raw features (rows x features, float32) and labels of a task's dataset."""
    if name == "digits":
        from sklearn.datasets import load_digits  # only to write the anchor task

        digits = load_digits()
        return digits.data.astype(np.float32), digits.target.astype(np.int64)
    if name == "mnist-10k":
        images = _read_idx(mnist_dir / "t10k-images-idx3-ubyte.gz")
        labels = _read_idx(mnist_dir / "t10k-labels-idx1-ubyte.gz")
        return images.reshape(len(images), -1).astype(np.float32), labels.astype(np.int64)
    raise ValueError(f"unknown dataset {name!r}")


def _standardise(x: NDArray[np.float32], train: NDArray[np.bool_]) -> NDArray[np.float32]:
    """Every column minus the training part's mean, over its (population) std; std 1
    when constant: the dataset service's rule for numeric columns of a table."""
    mean = x[train].mean(axis=0, dtype=np.float64)
    std = x[train].std(axis=0, dtype=np.float64)
    std = np.where(std > 1e-12, std, 1.0)
    out: NDArray[np.float32] = (x - mean.astype(np.float32)) / std.astype(np.float32)
    return out.astype(np.float32, copy=False)


def _sharding(spec: dict[str, Any]) -> ShardingStrategy:
    if spec["strategy"] == "iid":
        return IidStrategy(seed=spec["seed"])
    if spec["strategy"] == "dirichlet":
        return DirichletStrategy(alpha=spec["alpha"], seed=spec["seed"])
    raise ValueError(f"unknown sharding {spec['strategy']!r}")


def write_task(task: dict[str, Any], out: Path, *, mnist_dir: Path = MNIST_DIR) -> Path:
    """Write one task's directory (``task.json`` and ``data.npz``) at ``out``; ``out``.

    ``task.json`` is ``task`` plus ``model``, ``training``, ``holdout_fraction``,
    ``input_size``, ``num_classes`` and the rows of each part.
    """
    x, y = _dataset(task["dataset"], mnist_dir)
    num_classes = int(y.max()) + 1
    seed = TRAINING["seed"]
    held = stratified_holdout(y, num_classes, HOLDOUT_FRACTION, seed)
    x = _standardise(x, ~held)
    train_x, train_y = x[~held], y[~held]
    shards = _sharding(task["sharding"]).split(train_y, task["clients"])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in shards])]).astype(np.int64)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(
        out / "data.npz",
        train_x=train_x,
        train_y=train_y,
        holdout_x=x[held],
        holdout_y=y[held],
        client_rows=np.concatenate(shards).astype(np.int64),
        client_offsets=offsets,
    )
    document = {
        **task,
        "model": MODEL,
        "training": TRAINING,
        "holdout_fraction": HOLDOUT_FRACTION,
        "input_size": int(x.shape[1]),
        "num_classes": num_classes,
        "train_rows": len(train_y),
        "holdout_rows": int(held.sum()),
    }
    (out / "task.json").write_text(json.dumps(document, indent=1) + "\n")
    return out


def write_tasks(base: Path, *, mnist_dir: Path = MNIST_DIR) -> dict[str, Path]:
    """Write every task under ``base`` (``base/anchor``, ``base/many``); name -> directory."""
    return {
        name: write_task(task, base / name, mnist_dir=mnist_dir) for name, task in TASKS.items()
    }


def load_task(task_dir: Path) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """A task directory back: its ``task.json`` and the arrays of its ``data.npz``."""
    task = json.loads((task_dir / "task.json").read_text())
    with np.load(task_dir / "data.npz", allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return task, arrays


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    for name, path in write_tasks(Path(args[0])).items():
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
