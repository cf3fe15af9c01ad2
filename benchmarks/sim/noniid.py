"""The non-IID test's claim over many holdout splits, on ``peertrain.sim``.

``tests/stack/training/test_noniid.py`` uploads letter recognition (20% held out), splits
it over 8 peers by Dirichlet(0.3) and runs FedProx and FedAdam against centralised
training with the same budget; the better of the two must be within 3 accuracy points.
The dataset service seeds the holdout from the dataset's id, a fresh uuid per upload, so
every run of the test draws another split. This script replays the test's jobs on the
simulation (the platform's own code) for ``--splits`` different dataset ids and prints
one JSON line per split, then a summary of ``margin`` = best federated - centralised.

Usage::

    python benchmarks/sim/noniid.py [--splits 10] [--first 0] [--set training.lr=0.05 ...]
        [--only fedadam] [--cache centralised.json]

``--set`` overrides a key of the test's job blocks (``training.*``, ``aggregation.*``,
``fedprox.*``/``fedadam.*`` for one strategy only); the centralised run always trains
with the shared ``TRAINING`` block, for rounds x local epochs epochs, as the test does.
``--dataset-id ID`` replays one split drawn from a dataset id (the test's, before it
fixed its seed); ``--holdout-seed N`` the split of an upload with that ``holdout_seed``
(the test's is ``HOLDOUT_SEED``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import peertrain.sim as sim
from peertrain.common.specs import ShardingSpec
from peertrain.dataset.domain.sharding import strategy_for
from peertrain.ml.training import evaluate, train_local
from peertrain.ml.zoo import build_model

ROOT = Path(__file__).resolve().parents[2]
HOLDOUT_FRACTION = 0.2


def _the_test() -> Any:
    """``tests/stack/training/test_noniid.py``: its job blocks are the ones replayed."""
    sys.path.insert(0, str(ROOT / "tests" / "stack" / "training"))
    return importlib.import_module("test_noniid")


TEST = _the_test()
PEERS: int = TEST.PEERS
ALPHA = 0.3
MODEL: dict[str, Any] = TEST.MODEL


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def spec_for(strategy: str | None, overrides: dict[str, Any]) -> dict[str, Any]:
    """The test's job for ``strategy``, with ``overrides`` (``block.key`` for every
    contender, ``strategy.block.key`` for one); for ``None``, the blocks every contender
    shares (the centralised run trains with their ``training``)."""
    body = TEST.job("sim", [], strategy or "fedprox")
    if strategy is None:
        body["training"] = dict(TEST.TRAINING)
    body["model"] = MODEL
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        if head in TEST.STRATEGIES:
            if head != strategy:
                continue
            key = rest
        block, _, name = key.partition(".")
        body[block] = {**body[block], name: value}
    assert body["sharding"] == {"strategy": "dirichlet", "alpha": ALPHA}, body["sharding"]
    return body


def centralised(data: sim.SimData, training: dict[str, Any]) -> float:
    """The test's centralised contender: the union of the job's shards (in shard order,
    as the test concatenates them), rounds x local epochs epochs, one thread."""
    sharding = ShardingSpec(strategy="dirichlet", alpha=ALPHA, seed=training["seed"])
    assignment = strategy_for(sharding).assign(np.asarray(data.train_y), PEERS)
    order = np.argsort(assignment, kind="stable")
    x = torch.from_numpy(np.ascontiguousarray(data.train_x[order], dtype=np.float32))
    y = torch.from_numpy(np.asarray(data.train_y[order], dtype=np.int64))
    model = build_model(MODEL, data.feature_spec, seed=training["seed"])
    params = {
        **{k: v for k, v in training.items() if k != "proximal_mu"},
        "local_epochs": training["rounds"] * training["local_epochs"],
    }
    train_local(model, x, y, params, seed=training["seed"], device="cpu", threads=1)
    hx = torch.from_numpy(np.asarray(data.holdout_x, dtype=np.float32))
    hy = torch.from_numpy(np.asarray(data.holdout_y, dtype=np.int64))
    return float(evaluate(model, hx, hy, device="cpu")["accuracy"])


def one_split(
    csv: Path,
    dataset_id: str,
    overrides: dict[str, Any],
    strategies: tuple[str, ...],
    cache: dict[str, float],
    holdout_seed: int | None = None,
) -> dict[str, Any]:
    """The test's contenders on the holdout split of ``dataset_id`` (or of
    ``holdout_seed``, as the test uploads). The centralised accuracy is looked up in
    ``cache`` (keyed on the split and its training block)."""
    started = time.perf_counter()
    data = sim.load_data(
        csv,
        label_column="letter",
        holdout_fraction=HOLDOUT_FRACTION,
        dataset_id=dataset_id,
        holdout_seed=holdout_seed,
    )
    out: dict[str, Any] = {"dataset_id": dataset_id, "holdout_seed": holdout_seed}
    for strategy in strategies:
        result = sim.run(spec_for(strategy, overrides), data, peers=PEERS, device="cpu", threads=1)
        assert result.state == "completed", result.error
        out[f"{strategy}_accuracy"] = round(result.rounds[-1].accuracy, 4)
    training = spec_for(None, overrides)["training"]
    budget = {k: v for k, v in training.items() if k not in ("proximal_mu", "rounds")}
    budget["local_epochs"] = training["rounds"] * training["local_epochs"]
    key = json.dumps([dataset_id if holdout_seed is None else holdout_seed, budget], sort_keys=True)
    if key not in cache:
        cache[key] = round(centralised(data, training), 4)
    out["centralised_accuracy"] = cache[key]
    best = max(out[f"{s}_accuracy"] for s in strategies)
    out["margin"] = round(best - out["centralised_accuracy"], 4)
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--dataset-id", help="one split: the id a test run printed")
    parser.add_argument(
        "--holdout-seed", type=int, help="one split: the test's (HOLDOUT_SEED) or another"
    )
    parser.add_argument("--only", choices=("fedprox", "fedadam"), help="one strategy only")
    parser.add_argument("--cache", type=Path, help="JSON file of centralised accuracies")
    args = parser.parse_args(argv)
    strategies = (args.only,) if args.only else ("fedprox", "fedadam")
    cache: dict[str, float] = {}
    if args.cache is not None and args.cache.exists():
        cache = json.loads(args.cache.read_text())
    overrides = {k: _value(v) for k, _, v in (s.partition("=") for s in args.set)}
    margins: list[float] = []
    with tempfile.TemporaryDirectory(prefix="noniid-") as tmp:
        csv = Path(tmp) / "letters.csv"
        csv.write_bytes(importlib.import_module("training_support").letters_csv())
        ids = [f"noniid-split-{i}" for i in range(args.first, args.first + args.splits)]
        if args.holdout_seed is not None:
            ids = [f"seed-{args.holdout_seed}"]
        for dataset_id in [args.dataset_id] if args.dataset_id else ids:
            row = one_split(csv, dataset_id, overrides, strategies, cache, args.holdout_seed)
            margins.append(row["margin"])
            print(json.dumps(row), flush=True)
            if args.cache is not None:
                args.cache.write_text(json.dumps(cache, indent=1))
    print(
        json.dumps(
            {
                "overrides": overrides,
                "strategies": strategies,
                "splits": len(margins),
                "margin_min": min(margins),
                "margin_median": round(statistics.median(margins), 4),
                "margin_max": max(margins),
                "failures": sum(m < -0.03 for m in margins),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
