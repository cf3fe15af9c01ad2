"""One optimiser step as the ``training`` block asks: precision, clipping, memory format.

Mixed precision (``bf16``/``fp16`` autocast) and channels-last apply on CUDA only: on any
other device the step is the plain fp32 one, so CPU results stay bit-identical.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AbstractContextManager

import torch
from torch import nn

from peertrain.common.specs import TrainingParams

from .nodynamo import step

__all__ = ["Stepper", "cuda_only_settings", "uses_channels_last"]

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def cuda_only_settings(params: TrainingParams) -> tuple[str, ...]:
    """The settings of ``params`` that only CUDA devices apply (``precision=bf16``,
    ``channels_last``); empty when there are none."""
    names = [f"precision={params.precision}"] if params.precision != "fp32" else []
    return (*names, "channels_last") if params.channels_last else tuple(names)


def uses_channels_last(params: TrainingParams, device: torch.device, x: torch.Tensor) -> bool:
    """Whether batches of ``x`` go through the model in channels-last memory."""
    return params.channels_last and device.type == "cuda" and x.dim() == 4


class Stepper:
    """Forward under autocast, backward (scaled for ``fp16``), clip, step.

    Parameters
    ----------
    params
        The training block (``precision``, ``grad_clip_norm``).
    device
        Where the model is: autocast and the scaler are used on CUDA only.
    """

    def __init__(self, params: TrainingParams, device: torch.device) -> None:
        cuda = device.type == "cuda"
        self.dtype = _DTYPES.get(params.precision) if cuda else None
        self.clip = params.grad_clip_norm
        scaled = self.dtype is torch.float16
        self.scaler = torch.amp.GradScaler("cuda") if scaled else None

    def autocast(self) -> AbstractContextManager[object]:
        """The context the forward pass and the loss run in."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast("cuda", dtype=self.dtype)

    def backward_and_step(
        self, loss: torch.Tensor, optimizer: torch.optim.Optimizer, weights: Sequence[nn.Parameter]
    ) -> None:
        """Gradients of ``loss`` (``weights``' ``.grad`` cleared first), clipped to
        ``grad_clip_norm``, then one optimiser step."""
        for w in weights:  # zero_grad(set_to_none=True), without its profiler scope
            w.grad = None
        if self.scaler is None:
            loss.backward()  # type: ignore[no-untyped-call]
            if self.clip is not None:
                nn.utils.clip_grad_norm_(weights, self.clip)
            step(optimizer)  # optimizer.step(), without importing torch._dynamo
            return
        self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
        if self.clip is not None:
            self.scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(weights, self.clip)
        self.scaler.step(optimizer)  # skipped when the scaled gradients overflowed
        self.scaler.update()
