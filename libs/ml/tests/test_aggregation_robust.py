"""Trimmed mean and median over spilled updates: references, order, chunks, memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from scipy import stats

from peertrain.ml.aggregation import Median, TrimmedMean, make_strategy, trim_count


def _fold(strategy, global_state, updates, order):
    acc = strategy.begin_round(global_state)
    for i in order:
        acc.add(updates[i], 1.0 + i, key=f"p{i}")
    return acc.finish()


def _stack(updates, name):
    return torch.stack([u[name] for u in updates])


@pytest.mark.parametrize("k", [1, 2, 5, 6])
def test_median_matches_torch_quantile(global_state, updates, k):
    new = _fold(Median(), global_state, updates[:k], range(k))
    for name, g in global_state.items():
        ref = torch.quantile(_stack(updates[:k], name).double(), 0.5, dim=0)
        assert torch.allclose(new[name].double() - g.double(), ref, rtol=1e-6, atol=1e-7)
        if k % 2:
            middle = _stack(updates[:k], name).median(0).values.double()
            assert torch.equal(new[name], (g.double() + middle).float())


@pytest.mark.parametrize(("k", "fraction"), [(6, 0.2), (6, 0.34), (5, 0.0), (5, 0.49), (2, 0.4)])
def test_trimmed_mean_matches_scipy(global_state, updates, k, fraction):
    new = _fold(TrimmedMean(trim_fraction=fraction), global_state, updates[:k], range(k))
    for name, g in global_state.items():
        ref = stats.trim_mean(_stack(updates[:k], name).double().numpy(), fraction, axis=0)
        got = (new[name].double() - g.double()).numpy()
        assert abs(got - ref).max() < 1e-6


def test_trim_count_leaves_at_least_one_value():
    assert [trim_count(k, 0.49) for k in (1, 2, 3, 4, 10)] == [0, 0, 1, 1, 4]
    assert trim_count(10, 0.1) == 1


def test_robust_results_ignore_order_weights_and_chunking(global_state, updates):
    for name in ("median", "trimmed_mean"):
        reference = _fold(make_strategy({"strategy": name}), global_state, updates, range(6))
        strategy = make_strategy({"strategy": name})
        for order in ([5, 3, 1, 0, 2, 4], [2, 2, 0, 1, 3, 4, 5]):
            acc = strategy.begin_round(global_state)
            for i in order:
                acc.add(updates[i], 100.0 * (i + 1), key=f"p{i}")
            out = acc.finish()
            assert all(torch.equal(reference[k], out[k]) for k in reference)


def test_chunked_reads_match_one_big_read():
    g = {"w": torch.zeros(5000)}
    gen = torch.Generator().manual_seed(0)
    ups = [{"w": torch.randn(5000, generator=gen)} for _ in range(7)]
    small, big = Median(chunk_bytes=1), Median(chunk_bytes=1 << 30)
    a, b = _fold(small, g, ups, range(7)), _fold(big, g, ups, range(7))
    assert torch.equal(a["w"], b["w"])


def test_spill_files_are_removed(tmp_path, global_state, updates):
    strategy = Median(spill_dir=tmp_path)
    acc = strategy.begin_round(global_state)
    acc.add(updates[0], 1.0)
    assert any(tmp_path.rglob("*.safetensors"))
    acc.finish()
    assert not any(tmp_path.iterdir())
    with strategy.begin_round(global_state) as acc:
        acc.add(updates[1], 1.0)
    assert not any(tmp_path.iterdir())


_PEAK = textwrap.dedent(
    """
    import json, sys, torch
    from peertrain.ml.aggregation import make_strategy
    name, k, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    g = {"w": torch.zeros(n)}
    acc = make_strategy({"strategy": name}).begin_round(g, reference_weight=float(k))
    gen = torch.Generator().manual_seed(0)
    for i in range(k):
        acc.add({"w": torch.randn(n, generator=gen)}, 1.0, key=str(i))
    acc.finish()
    peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
    print(json.dumps({"peak_kb": int(peak)}))
    """
)


def _peak_mb(name: str, *ks: int, n: int) -> list[float]:
    """The peak memory of a fresh process folding ``k`` updates, for each ``k`` (the
    processes run at once: each has its own peak)."""
    src = os.pathsep.join(p for p in sys.path if p)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PEAK, name, str(k), str(n)],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ | {"PYTHONPATH": src},
        )
        for k in ks
    ]
    peaks = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        peaks.append(json.loads(out.strip().splitlines()[-1])["peak_kb"] / 1024)
    return peaks


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_spilling_keeps_memory_bounded_as_updates_grow():
    """(FedAvg's running sum is measured by benchmarks/aggregate.py.)"""
    n = 3_000_000  # 12 MB per update: holding 20 of them would add 240 MB
    few, many = _peak_mb("median", 2, 20, n=n)
    # holding 18 more updates would add 216 MB; spilled, the growth is the allocator's
    # noise (up to ~55 MB seen on a loaded machine), far below 8 updates' worth
    assert many - few < 96, (few, many)
