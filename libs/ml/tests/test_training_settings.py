"""The training block's optimiser settings give what plain torch gives (same seed, same
batches), the round's learning rate is the schedule's, and CPU runs ignore the
CUDA-only settings bit for bit."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

from peertrain.common.specs import (
    SpecInvalid,
    TrainingParams,
    lr_for_round,
    parse_training_params,
)
from peertrain.ml.training import cuda_only_settings, train_local
from peertrain.ml.zoo import build_model

FEATURES = {"input_size": 10, "num_classes": 3}
SPEC = {"arch": "mlp", "hidden": [16]}  # no dropout: the reference needs no global RNG
BASE: dict[str, Any] = {"local_epochs": 2, "batch_size": 16, "lr": 0.05, "rounds": 5}
SEED = 21


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(100, 10, generator=gen)
    return x, (x[:, 0] > 0).long() + (x[:, 1] > 1).long()


def _ours(training: dict[str, Any], round_: int | None = None) -> dict[str, torch.Tensor]:
    x, y = _data()
    model = build_model(SPEC, FEATURES, seed=1)
    result = train_local(model, x, y, training, seed=SEED, device="cpu", round_=round_)
    delta: dict[str, torch.Tensor] = result.delta
    return delta


def _optimizer(model: torch.nn.Module, p: TrainingParams, lr: float) -> torch.optim.Optimizer:
    if p.optimizer == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=p.weight_decay)
    if p.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=p.weight_decay)
    return torch.optim.SGD(
        model.parameters(),
        lr=lr,
        momentum=p.momentum,
        nesterov=p.nesterov,
        weight_decay=p.weight_decay,
    )


def _reference(training: dict[str, Any], lr: float) -> dict[str, torch.Tensor]:
    """The local epochs written out in plain torch."""
    p = parse_training_params(training)
    x, y = _data()
    model = build_model(SPEC, FEATURES, seed=1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    opt = _optimizer(model, p, lr)
    shuffle = torch.Generator().manual_seed(SEED)
    model.train()
    for _ in range(p.local_epochs):
        order = torch.randperm(len(y), generator=shuffle)
        for start in range(0, len(y), p.batch_size):
            idx = order[start : start + p.batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx], label_smoothing=p.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            if p.grad_clip_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), p.grad_clip_norm)
            opt.step()
    return {k: v - before[k] for k, v in model.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


SETTINGS: dict[str, dict[str, Any]] = {
    "nesterov": {"momentum": 0.9, "nesterov": True},
    "adamw": {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1},
    "adam": {"optimizer": "adam", "lr": 0.01, "weight_decay": 0.01},
    "label_smoothing": {"label_smoothing": 0.2},
    "grad_clip_norm": {"grad_clip_norm": 0.05, "momentum": 0.5},
    "all": {
        "optimizer": "adamw",
        "weight_decay": 0.05,
        "lr": 0.02,
        "label_smoothing": 0.1,
        "grad_clip_norm": 0.1,
    },
}


@pytest.mark.parametrize("name", SETTINGS)
def test_each_setting_gives_plain_torchs_bits_and_changes_training(name: str) -> None:
    training = BASE | SETTINGS[name]
    ours = _ours(training)
    assert _same(ours, _reference(training, training["lr"]))
    assert not _same(ours, _ours(BASE))


def test_the_default_block_gives_plain_sgds_bits() -> None:
    assert _same(_ours(BASE), _reference(BASE, BASE["lr"]))


@pytest.mark.parametrize(
    "schedule",
    [
        {"kind": "cosine", "min_lr": 0.001},
        {"kind": "step", "step_rounds": 2, "gamma": 0.3},
        {"kind": "constant", "warmup_rounds": 4},
    ],
)
@pytest.mark.parametrize("round_", [1, 3, 5])
def test_a_round_trains_at_its_scheduled_learning_rate(
    schedule: dict[str, Any], round_: int
) -> None:
    training = BASE | {"momentum": 0.9, "lr_schedule": schedule}
    lr = lr_for_round(parse_training_params(training), round_)
    assert _same(_ours(training, round_), _reference(training, lr))


def test_a_constant_schedule_is_the_same_in_every_round_and_without_one() -> None:
    assert _same(_ours(BASE, 4), _ours(BASE))


def test_a_schedule_without_a_round_is_refused() -> None:
    with pytest.raises(ValueError, match="give round_"):
        _ours(BASE | {"lr_schedule": {"kind": "cosine"}})
    with pytest.raises(ValueError, match="from 1"):
        _ours(BASE, 0)


@pytest.mark.parametrize(
    "cuda_only", [{"precision": "bf16"}, {"precision": "fp16"}, {"channels_last": True}]
)
def test_the_cpu_trains_in_fp32_whatever_the_cuda_only_settings(cuda_only: dict[str, Any]) -> None:
    assert _same(_ours(BASE | cuda_only), _ours(BASE))


def test_image_batches_on_the_cpu_ignore_channels_last_too() -> None:
    features = {"image_shape": [1, 8, 8], "num_classes": 3}
    spec = {"arch": "cnn", "channels": [4], "hidden": 8}
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(40, 1, 8, 8, generator=gen), torch.randint(0, 3, (40,), generator=gen)
    deltas = []
    for extra in ({}, {"channels_last": True, "precision": "bf16"}):
        model = build_model(spec, features, seed=1)
        deltas.append(train_local(model, x, y, BASE | extra, seed=3, device="cpu").delta)
    assert _same(deltas[0], deltas[1])


def test_cuda_only_settings_are_named() -> None:
    assert cuda_only_settings(TrainingParams()) == ()
    both = TrainingParams(precision="fp16", channels_last=True)
    assert cuda_only_settings(both) == ("precision=fp16", "channels_last")


def _reference_tuned(training: dict[str, Any], lr: float) -> dict[str, torch.Tensor]:
    """Fine-tuning in plain torch: frozen parameters out of the optimiser (and without
    gradients), the head in a group of its own at its own rate."""
    p = parse_training_params(training)
    x, y = _data()
    model = build_model(SPEC, FEATURES, seed=1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for name, w in model.named_parameters():
        w.requires_grad_(not name.startswith("layers.0."))
    head = [w for n, w in model.named_parameters() if n.startswith("layers.2.")]
    body = [
        w for n, w in model.named_parameters() if w.requires_grad and not n.startswith("layers.2.")
    ]
    groups: list[dict[str, Any]] = [{"params": body}] if body else []
    groups.append({"params": head, "lr": p.head_lr * lr / p.lr} if p.head_lr else {"params": head})
    opt = torch.optim.SGD(groups, lr=lr, momentum=p.momentum)
    shuffle = torch.Generator().manual_seed(SEED)
    model.train()
    for _ in range(p.local_epochs):
        order = torch.randperm(len(y), generator=shuffle)
        for start in range(0, len(y), p.batch_size):
            idx = order[start : start + p.batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
    return {k: v - before[k] for k, v in model.state_dict().items()}


def test_frozen_parameters_stay_and_the_head_trains_at_its_own_rate() -> None:
    training = BASE | {
        "momentum": 0.9,
        "freeze": ["layers.0"],
        "head": ["layers.2"],
        "head_lr": 0.5,
        "lr_schedule": {"kind": "step", "step_rounds": 1, "gamma": 0.5},
    }
    lr = lr_for_round(parse_training_params(training), 3)
    ours = _ours(training, 3)
    assert _same(ours, _reference_tuned(training, lr))
    assert not ours["layers.0.weight"].any() and not ours["layers.0.bias"].any()
    model = build_model(SPEC, FEATURES, seed=1)
    train_local(model, *_data(), training, seed=SEED, device="cpu", round_=3)
    assert all(w.requires_grad for w in model.parameters())  # as it came


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"head": ["layers.2"]}, "head and head_lr go together"),
        ({"head_lr": 0.1}, "head and head_lr go together"),
        ({"freeze": ["layers.0; rm -rf"]}, "pattern"),
    ],
)
def test_fine_tuning_settings_are_checked(bad: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecInvalid) as info:
        parse_training_params(BASE | bad)
    assert says in str(info.value.detail)
