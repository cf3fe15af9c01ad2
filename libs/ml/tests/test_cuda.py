"""Where CUDA is present: same bits as the CPU for aggregation, seeded training; mixed
precision and channels-last train close to fp32."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from peertrain.ml.aggregation import FedAdam, FedAvg
from peertrain.ml.training import TrainResult, evaluate, train_local
from peertrain.ml.zoo import build_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize("strategy", [FedAvg, FedAdam])
def test_cuda_accumulation_gives_the_cpu_bits(global_state, updates, strategy):
    results = []
    for device in ("cpu", "cuda"):
        acc = strategy(device=device).begin_round(global_state, reference_weight=6.0)
        for i in (3, 1, 5, 0, 4, 2):
            acc.add({k: v.to(device) for k, v in updates[i].items()}, 1.0 + i, key=str(i))
        results.append(acc.finish())
    assert all(torch.equal(results[0][k], results[1][k].cpu()) for k in global_state)


def test_training_on_cuda_is_seeded():
    features = {"image_shape": [1, 8, 8], "num_classes": 3}
    spec = {"arch": "cnn", "channels": [4, 8], "hidden": 16, "dropout": 0.2}
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(96, 1, 8, 8, generator=gen), torch.randint(0, 3, (96,), generator=gen)
    deltas = []
    for _ in range(2):
        model = build_model(spec, features, seed=1)
        result = train_local(model, x, y, {"local_epochs": 2, "batch_size": 16}, device="cuda")
        assert next(model.parameters()).is_cuda
        deltas.append(result.delta)
    assert all(torch.equal(deltas[0][k], deltas[1][k]) for k in deltas[0])
    assert evaluate(model, x, y)["samples"] == 96


def _images(n: int = 96) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return torch.rand(n, 3, 16, 16, generator=gen), torch.randint(0, 4, (n,), generator=gen)


def _train_images(
    training: dict[str, Any], model_seed: int = 1
) -> tuple[torch.nn.Module, TrainResult]:
    features = {"image_shape": [3, 16, 16], "num_classes": 4}
    spec = {"arch": "cnn", "channels": [8, 16], "hidden": 32}
    model = build_model(spec, features, seed=model_seed)
    x, y = _images()
    base = {"local_epochs": 2, "batch_size": 16, "lr": 0.05, "momentum": 0.9}
    result = train_local(model, x, y, base | training, seed=5, device="cuda")
    return model, result


def _relative_gap(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    num = sum(float((a[k].double() - b[k].double()).pow(2).sum()) for k in a) ** 0.5
    den = sum(float(b[k].double().pow(2).sum()) for k in b) ** 0.5
    return float(num / den)


@pytest.mark.parametrize(
    "training",
    [{"precision": "bf16"}, {"precision": "fp16"}, {"precision": "fp16", "grad_clip_norm": 1.0}],
)
def test_mixed_precision_on_cuda_trains_finite_and_close_to_fp32(training: dict[str, Any]) -> None:
    _, full = _train_images({"grad_clip_norm": training.get("grad_clip_norm")})
    _, mixed = _train_images(training)
    _, again = _train_images(training)
    assert all(torch.isfinite(torch.tensor(m.loss)) for m in mixed.epochs)
    assert all(torch.isfinite(v).all() for v in mixed.delta.values())
    assert all(v.dtype == torch.float32 for v in mixed.delta.values())  # weights stay fp32
    # bf16 keeps 8 bits of mantissa, fp16 11: a CPU bf16 emulation of this run was 0.15 off
    bound = 0.35 if training["precision"] == "bf16" else 0.1
    assert 0 < _relative_gap(mixed.delta, full.delta) < bound  # autocast applied, and close
    assert all(torch.equal(mixed.delta[k], again.delta[k]) for k in mixed.delta)  # seeded


def test_channels_last_on_cuda_matches_contiguous_within_tolerance() -> None:
    _, plain = _train_images({})
    model, fast = _train_images({"channels_last": True})
    # NHWC runs other convolution kernels (TF32 by default on Ampere and later): on an
    # H200 (2026-12-04) the two deltas were 0.0096 apart after two epochs with momentum
    assert _relative_gap(fast.delta, plain.delta) < 0.05
    assert all(v.is_contiguous() for v in fast.delta.values())
    assert all(w.is_contiguous() for w in model.parameters())  # handed back as it came


def test_channels_last_and_bf16_together_on_cuda() -> None:
    _, result = _train_images({"channels_last": True, "precision": "bf16"})
    assert all(torch.isfinite(v).all() for v in result.delta.values())


CIFAR = {"image_shape": [3, 32, 32], "num_classes": 10}


@pytest.mark.parametrize("training", [{}, {"precision": "bf16", "channels_last": True}])
def test_a_named_resnet_with_batch_norm_trains_on_cuda(training: dict[str, Any]) -> None:
    """ResNet-18 (CIFAR stem) as a layer graph: trained on CUDA as peers train it,
    finite, BatchNorm statistics moved, the counters still integers; printed: the time
    of one local epoch of 500 images (the benchmark's per-peer work)."""
    import time

    spec = {"arch": "torchvision", "name": "resnet18", "cifar_stem": True}
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(500, 3, 32, 32, generator=gen)
    y = torch.randint(0, 10, (500,), generator=gen)
    params = {"batch_size": 64, "lr": 0.05, "momentum": 0.9} | training
    model = build_model(spec, CIFAR, seed=1)
    train_local(model, x[:64], y[:64], params, seed=1, device="cuda")  # warm up
    model = build_model(spec, CIFAR, seed=1)
    torch.cuda.synchronize()
    start = time.perf_counter()
    result = train_local(model, x, y, params, seed=1, device="cuda")
    torch.cuda.synchronize()
    print(f"resnet18-cifar on cuda {training}: {time.perf_counter() - start:.3f} s / 500 images")
    assert all(torch.isfinite(v).all() for v in result.delta.values() if v.is_floating_point())
    assert result.delta["bn1.running_mean"].abs().sum() > 0
    assert result.delta["bn1.num_batches_tracked"].dtype == torch.int64
    assert int(result.delta["bn1.num_batches_tracked"]) == 8  # 500 / 64 batches


def test_a_graph_gives_the_same_outputs_on_cuda_as_on_the_cpu() -> None:
    model = build_model({"arch": "torchvision", "name": "resnet20"}, CIFAR, seed=2).eval()
    x = torch.rand(8, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        cpu = model(x)
        gpu = model.to("cuda")(x.to("cuda")).cpu()
    torch.testing.assert_close(gpu, cpu, rtol=1e-4, atol=1e-4)
