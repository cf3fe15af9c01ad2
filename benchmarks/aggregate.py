"""Benchmark: folding K updates of a 10M-parameter model into a round's running sum.

The fold is FedAvg's: each update is rounded onto a fixed grid and added exactly into a
float64 accumulator (see ``peertrain.ml.aggregation.exact_sum``), which makes the result
independent of arrival order. The baseline is the naive, order-dependent fold it
replaces: ``torch.Tensor.add_`` of the same update tensors into a float32 accumulator,
timed in the same run, update by update, alternating which of the two goes first.

Peak memory is measured for K = 4 and K = 32 in fresh subprocesses (``VmHWM`` from
``/proc/self/status``: ``ru_maxrss`` would be inherited across fork/exec). Each child runs
the aggregator's whole path per update: safetensors bytes as downloaded, header and value
validation, fold, then ``finish``, after the set-up the aggregator does at start
(``peertrain.common.memory.return_freed_memory_to_os``). Memory must not grow with K.

Prints one JSON line last: ``fold_gb_per_s``, ``baseline_gb_per_s``, ``ratio``,
``peak_rss_mb_k4``, ``peak_rss_mb_k32`` (plus context). Goals: ratio >= 0.8, and
``peak_rss_mb_k32`` within 10% of ``peak_rss_mb_k4``.

Both folds are memory-bound: per parameter the exact fold reads 4 bytes of update and
reads and writes 8 bytes of accumulator (20 bytes), the baseline moves 12, so the ratio
cannot exceed about 0.6 on hardware where both saturate memory bandwidth. That is the
price of order-independent, bit-reproducible results; the fields ``*_bytes_per_param``
record it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

from peertrain.common.memory import return_freed_memory_to_os
from peertrain.common.specs import count_parameters, parse_data_shape, parse_model_spec
from peertrain.ml.aggregation import FedAvg, numba_available
from peertrain.ml.weights import load_update, state_to_bytes
from peertrain.ml.zoo import build_model

SPEC = {"arch": "mlp", "hidden": [4000, 1500]}
FEATURES = {"input_size": 1000, "num_classes": 10}  # 10,021,510 parameters
BOUND = 100.0
WEIGHT = 250.0


def make_update(state: dict[str, torch.Tensor], index: int) -> dict[str, torch.Tensor]:
    """A plausible delta: seeded, norm well under BOUND."""
    gen = torch.Generator().manual_seed(1000 + index)
    return {k: torch.randn(v.shape, generator=gen) * 1e-3 for k, v in state.items()}


def vm_hwm_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(k: int) -> None:
    """The aggregator's path for K updates; prints this process's peak RSS in MB."""
    return_freed_memory_to_os()  # as the aggregator does at start-up
    state = build_model(SPEC, FEATURES, seed=0).state_dict()
    acc = FedAvg(update_bound=BOUND).begin_round(state, reference_weight=k * WEIGHT)
    for i in range(k):
        data = state_to_bytes(make_update(state, i))
        update = load_update(data, state, max_norm=BOUND)
        del data
        acc.add(update, WEIGHT, key=f"peer-{i}")
        del update
    acc.finish()
    print(json.dumps({"peak_rss_mb": round(vm_hwm_mb(), 1)}))


def peak_rss(k: int) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(k)], capture_output=True, text=True, check=True
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["peak_rss_mb"])


def throughput(k: int) -> tuple[float, float, int]:
    """(fold GB/s, baseline GB/s, update bytes): medians over K updates."""
    state = build_model(SPEC, FEATURES, seed=0).state_dict()
    acc = FedAvg(update_bound=BOUND).begin_round(state, reference_weight=(k + 1) * WEIGHT)
    naive = {name: torch.zeros_like(t) for name, t in state.items()}
    acc.add(make_update(state, -1), WEIGHT, key="warm-up")  # compiles the kernel
    nbytes = sum(t.numel() * t.element_size() for t in state.values())
    fold_s: list[float] = []
    base_s: list[float] = []
    for i in range(k):
        update = make_update(state, i)

        def fold(u: dict[str, torch.Tensor] = update, key: str = f"peer-{i}") -> None:
            start = time.perf_counter()
            acc.add(u, WEIGHT, key=key)
            fold_s.append(time.perf_counter() - start)

        def baseline(u: dict[str, torch.Tensor] = update) -> None:
            start = time.perf_counter()
            for name, t in u.items():
                naive[name].add_(t, alpha=WEIGHT)
            base_s.append(time.perf_counter() - start)

        for run in (fold, baseline) if i % 2 else (baseline, fold):
            run()
    acc.finish()
    return (
        nbytes / statistics.median(fold_s) / 1e9,
        nbytes / statistics.median(base_s) / 1e9,
        nbytes,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--k", type=int, default=32, help="updates timed for throughput")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    params = count_parameters(parse_model_spec(SPEC), parse_data_shape(FEATURES))
    fold_gbs, base_gbs, nbytes = throughput(args.k)
    print(f"fold {fold_gbs:.2f} GB/s, torch.add_ {base_gbs:.2f} GB/s over {args.k} updates")
    rss4, rss32 = peak_rss(4), peak_rss(32)
    print(f"peak RSS: K=4 {rss4:.0f} MB, K=32 {rss32:.0f} MB (one update: {nbytes / 1e6:.0f} MB)")
    result = {
        "params": params,
        "update_mb": round(nbytes / 1e6, 1),
        "k": args.k,
        "kernel": "numba" if numba_available() else "numpy",
        "threads": torch.get_num_threads(),
        "fold_gb_per_s": round(fold_gbs, 3),
        "baseline_gb_per_s": round(base_gbs, 3),
        "ratio": round(fold_gbs / base_gbs, 3),
        "fold_bytes_per_param": 20,
        "baseline_bytes_per_param": 12,
        "peak_rss_mb_k4": rss4,
        "peak_rss_mb_k32": rss32,
        "rss_growth_pct": round(100 * (rss32 - rss4) / rss4, 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
