"""A peer's local training for one round: seeded, cancellable, with per-epoch metrics."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from peertrain.common.specs import TrainingParams, lr_for_round, parse_training_params
from peertrain.common.specs.training import matches

from ..device import limit_threads, seeded, select_device
from ..errors import TrainingCancelled
from ..weights.delta import compute_delta
from .data import check_xy, num_outputs
from .inputs import Inputs
from .metrics import EpochMetrics, TrainResult
from .stepper import Stepper, uses_channels_last

__all__ = ["train_local"]


def _trained(model: nn.Module, p: TrainingParams, lr: float) -> tuple[list[nn.Parameter], Any]:
    """The parameters the optimiser steps (all but ``freeze``'s), and what it is given:
    them, or two groups when ``head`` trains at its own rate (``head_lr``, scaled by the
    round's schedule as ``lr`` is)."""
    if not p.freeze and not p.head:
        weights = list(model.parameters())
        return weights, weights
    named = [(n, w) for n, w in model.named_parameters() if not matches(n, p.freeze)]
    weights = [w for _, w in named]
    if not p.head:
        return weights, weights
    assert p.head_lr is not None  # the spec has both or neither
    head = [w for n, w in named if matches(n, p.head)]
    body = [w for n, w in named if not matches(n, p.head)]
    return weights, [{"params": body}, {"params": head, "lr": p.head_lr * lr / p.lr}]


def _optimizer(params: Any, p: TrainingParams, lr: float) -> torch.optim.Optimizer:
    if p.optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=p.weight_decay)
    if p.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=p.weight_decay)
    return torch.optim.SGD(
        params,
        lr=lr,
        momentum=p.momentum,
        weight_decay=p.weight_decay,
        nesterov=p.nesterov,
    )


def _round_lr(p: TrainingParams, round_: int | None) -> float:
    """The round's learning rate; without a round, ``lr`` where the schedule gives every
    round the same."""
    if round_ is not None:
        return lr_for_round(p, round_)
    if p.lr_schedule.kind != "constant" or p.lr_schedule.warmup_rounds > 0:
        raise ValueError("the training block has a learning-rate schedule: give round_")
    return p.lr


@contextmanager
def _seeded(seed: int, device: torch.device) -> Iterator[None]:
    """torch's global RNG (dropout) seeded inside, restored after and this thread's alone
    meanwhile (:func:`~peertrain.ml.device.seeded`); on CUDA, cuDNN and torch's
    deterministic algorithms (cuBLAS also needs ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` in
    the environment before CUDA starts)."""
    cuda = device.type == "cuda"
    devices = [device.index or 0] if cuda else []
    with seeded(seed, device, devices=devices):
        flags = (
            torch.backends.cudnn.deterministic,
            torch.backends.cudnn.benchmark,
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        )
        if cuda:
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
            torch.use_deterministic_algorithms(True, warn_only=True)
        try:
            yield
        finally:
            if cuda:
                torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = flags[:2]
                torch.use_deterministic_algorithms(flags[2], warn_only=flags[3])


def _proximal(model: nn.Module, anchor: list[torch.Tensor], mu: float) -> torch.Tensor:
    total = sum(((w - w0) ** 2).sum() for w, w0 in zip(model.parameters(), anchor, strict=True))
    return 0.5 * mu * torch.as_tensor(total)


def _epoch_metrics(
    epoch: int,
    losses: list[torch.Tensor],
    predicted: list[torch.Tensor],
    labels: torch.Tensor,
    batch_size: int,
    began: float,
) -> EpochMetrics:
    """An epoch's metrics from its batches' losses and predictions (``labels`` in the
    epoch's order), read once per epoch: no per-batch bookkeeping, no device sync."""
    n = labels.shape[0]
    sizes = torch.full((len(losses),), float(batch_size), dtype=torch.float64)
    sizes[-1] = n - batch_size * (len(losses) - 1)
    loss_sum = torch.stack(losses).to(device="cpu", dtype=torch.float64).mul(sizes).sum()
    correct = (torch.cat(predicted) == labels).sum()
    return EpochMetrics(
        epoch=epoch,
        loss=float(loss_sum) / n,
        accuracy=int(correct) / n,
        samples=n,
        duration_s=time.perf_counter() - began,
    )


def train_local(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    params: TrainingParams | dict[str, Any],
    *,
    seed: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_epoch: Callable[[EpochMetrics], None] | None = None,
    device: torch.device | str | None = None,
    threads: int | None = None,
    round_: int | None = None,
    inputs: Inputs | None = None,
) -> TrainResult:
    """Train ``model`` in place on one shard and return its weight delta and metrics.

    Parameters
    ----------
    model
        The current global model (built by the zoo, weights loaded).
    x, y
        The shard: float samples along dim 0 and int64 class indices.
    params
        The job's training block (``local_epochs``, ``batch_size``, ``lr``, ...).
    seed
        Seed of this round's randomness (shuffling, dropout); default ``params.seed``.
        Peers pass ``derive_seed(params.seed, round, shard)``.
    should_stop
        Polled before every batch; when it returns true, training stops with
        :class:`TrainingCancelled`.
    on_epoch
        Called with each epoch's :class:`EpochMetrics`.
    device
        ``None`` picks CUDA, then MPS, then the CPU.
    threads
        Bound on torch's CPU threads (a process-wide setting); ``None`` leaves it.
    round_
        The task's round (from 1): it trains at ``lr_for_round(params, round_)``.
        ``None`` (outside a job's rounds) trains at ``lr``, for a block whose schedule
        gives every round the same rate.
    inputs
        For a shard stored as pixels (``uint8`` ``x``): how each batch becomes the
        model's input, augmented as the job asks (:meth:`Inputs.of` the dataset's
        feature spec and the training block), drawing from the shuffling generator.

    Returns
    -------
    TrainResult
        The delta (on the CPU, in the model's dtypes) and the metrics.

    Raises
    ------
    TrainingCancelled
        When ``should_stop()`` returned true.
    DataInvalid
        When ``x``/``y`` do not fit the model.
    ValueError
        ``round_`` below 1, or ``None`` with a schedule that changes the rate.

    Notes
    -----
    ``precision`` (autocast) and ``channels_last`` apply on CUDA only; elsewhere the
    loop is the fp32 one.
    """
    p = parse_training_params(params)
    lr = _round_lr(p, round_)
    limit_threads(threads)
    dev = select_device(str(device)) if device is not None else select_device()
    pixels = inputs is not None
    check_xy(x, y, pixels=pixels)
    if inputs is not None:
        inputs.check(x)
    model.to(dev)
    x, y = x.to(dev), y.to(dev)
    check_xy(x, y, num_outputs(model, inputs(x[:1]) if inputs is not None else x), pixels=pixels)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    anchor = [w.detach().clone() for w in model.parameters()] if p.proximal_mu > 0 else []
    channels_last = uses_channels_last(p, dev, x)
    if channels_last:
        model.to(memory_format=torch.channels_last)
    weights, groups = _trained(model, p, lr)  # what the optimizer steps
    optimizer = _optimizer(groups, p, lr)
    stepper = Stepper(p, dev)
    shuffle = torch.Generator(device="cpu").manual_seed(p.seed if seed is None else seed)
    epochs: list[EpochMetrics] = []
    n, started = x.shape[0], time.perf_counter()
    frozen = [w for n_, w in model.named_parameters() if matches(n_, p.freeze)]
    for w in frozen:  # no gradient computed for them at all
        w.requires_grad_(False)
    try:
        with _seeded(p.seed if seed is None else seed, dev):
            model.train()
            for epoch in range(1, p.local_epochs + 1):
                began = time.perf_counter()
                order = torch.randperm(n, generator=shuffle).to(dev)
                losses: list[torch.Tensor] = []
                predicted: list[torch.Tensor] = []
                for start in range(0, n, p.batch_size):
                    if should_stop is not None and should_stop():
                        raise TrainingCancelled(epochs_done=epoch - 1)
                    idx = order[start : start + p.batch_size]
                    xb, yb = x[idx], y[idx]
                    if inputs is not None:
                        xb = inputs(xb, shuffle)
                    if channels_last:
                        xb = xb.contiguous(memory_format=torch.channels_last)
                    with stepper.autocast():
                        out = model(xb)
                        loss = F.cross_entropy(out, yb, label_smoothing=p.label_smoothing)
                    total = loss + _proximal(model, anchor, p.proximal_mu) if anchor else loss
                    stepper.backward_and_step(total, optimizer, weights)
                    losses.append(loss.detach())
                    predicted.append(out.detach().argmax(dim=1))
                metrics = _epoch_metrics(epoch, losses, predicted, y[order], p.batch_size, began)
                epochs.append(metrics)
                if on_epoch is not None:
                    on_epoch(metrics)
    finally:
        for w in frozen:
            w.requires_grad_(True)
        if channels_last:  # the model as it came: its state dict's tensors contiguous
            model.to(memory_format=torch.contiguous_format)
    delta = compute_delta(model.state_dict(), initial)
    return TrainResult(
        delta=delta, epochs=tuple(epochs), samples=n, duration_s=time.perf_counter() - started
    )
