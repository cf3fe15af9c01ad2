"""Seeded image augmentation of a batch, in torch (no torchvision on the peers).

:func:`augment` applies a job's ``training.augment`` (see
:class:`peertrain.common.specs.AugmentSpec`) to a batch of images scaled to ``[0, 1]``:
random crop with zero padding, horizontal flip, colour jitter (brightness, contrast,
saturation, in that order). Every random number is drawn on the CPU from the given
generator, one draw per image per transform, so the result depends only on the batch
and the generator's state, on any device.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from peertrain.common.specs import AugmentSpec

__all__ = ["augment"]

_GREY = (0.299, 0.587, 0.114)
"""ITU-R 601-2 luma weights, as torchvision's ``rgb_to_grayscale``."""


def _uniform(n: int, low: float, high: float, generator: torch.Generator) -> torch.Tensor:
    return torch.rand(n, generator=generator, dtype=torch.float32) * (high - low) + low


def _crop(x: torch.Tensor, padding: int, generator: torch.Generator) -> torch.Tensor:
    n, c, h, w = x.shape
    padded = F.pad(x, (padding, padding, padding, padding))
    top = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(x.device)
    left = torch.randint(0, 2 * padding + 1, (n,), generator=generator).to(x.device)
    rows = (top[:, None] + torch.arange(h, device=x.device))[:, None, :, None]
    cols = (left[:, None] + torch.arange(w, device=x.device))[:, None, None, :]
    batch = torch.arange(n, device=x.device)[:, None, None, None]
    channel = torch.arange(c, device=x.device)[None, :, None, None]
    return padded[batch, channel, rows, cols]


def _grey(x: torch.Tensor) -> torch.Tensor:
    if x.shape[1] != 3:
        return x
    weights = torch.tensor(_GREY, dtype=x.dtype, device=x.device).reshape(1, 3, 1, 1)
    return (x * weights).sum(dim=1, keepdim=True)


def _blend(x: torch.Tensor, other: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    return (factor * x + (1 - factor) * other).clamp(0.0, 1.0)


def augment(x: torch.Tensor, spec: AugmentSpec, generator: torch.Generator) -> torch.Tensor:
    """``x`` (``(n, channels, height, width)`` in ``[0, 1]``) augmented as ``spec`` says."""
    n = x.shape[0]
    if spec.crop_padding:
        x = _crop(x, spec.crop_padding, generator)
    if spec.hflip:
        flip = (torch.rand(n, generator=generator) < 0.5).to(x.device)
        x = torch.where(flip[:, None, None, None], x.flip(3), x)
    jitter = spec.color_jitter
    if jitter is not None:

        def factors(amount: float) -> torch.Tensor:
            drawn = _uniform(n, max(0.0, 1 - amount), 1 + amount, generator)
            return drawn.to(x.device)[:, None, None, None]

        if jitter.brightness:
            x = (x * factors(jitter.brightness)).clamp(0.0, 1.0)
        if jitter.contrast:
            mean = _grey(x).mean(dim=(1, 2, 3), keepdim=True)
            x = _blend(x, mean, factors(jitter.contrast))
        if jitter.saturation and x.shape[1] == 3:
            x = _blend(x, _grey(x), factors(jitter.saturation))
    return x
