"""Pixels standardised batch by batch, and seeded augmentation on the peers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from peertrain.common.events.datasets import FeatureSpec, ImageEncoding
from peertrain.common.features import encode_pixels
from peertrain.common.specs import AugmentSpec, TrainingParams
from peertrain.ml.errors import DataInvalid
from peertrain.ml.training import Inputs, evaluate, train_local
from peertrain.ml.training.augment import augment

MEAN, STD = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)


def _spec(stored: str = "uint8", channels: int = 3) -> FeatureSpec:
    return FeatureSpec(
        kind="images",
        input_shape=(channels, 8, 8),
        input_size=channels * 64,
        classes=("a", "b"),
        image=ImageEncoding(
            mode="RGB" if channels == 3 else "L",
            channels=channels,
            height=8,
            width=8,
            mean=MEAN[:channels],
            std=STD[:channels],
            stored=stored,  # type: ignore[arg-type]
        ),
        label_column="class",
    )


def _pixels(n: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 3, 8, 8), generator=g, dtype=torch.uint8)
    y = (x.float().mean(dim=(1, 2, 3)) > 127.5).long()
    return x, y


def _net() -> nn.Module:
    torch.manual_seed(3)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(256, 2))


def test_a_batch_of_pixels_gets_the_bits_the_exported_preprocessing_gives() -> None:
    x, _ = _pixels()
    inputs = Inputs.of(_spec())
    assert inputs is not None
    expected = encode_pixels(x.numpy(), {"mean": MEAN, "std": STD})
    assert torch.equal(inputs(x), torch.from_numpy(expected))


def test_training_on_pixels_is_training_on_their_standardised_floats() -> None:
    x, y = _pixels()
    floats = torch.from_numpy(encode_pixels(x.numpy(), {"mean": MEAN, "std": STD}))
    params = TrainingParams(local_epochs=2, batch_size=8, lr=0.1)
    a, b = _net(), _net()
    on_pixels = train_local(a, x, y, params, seed=5, inputs=Inputs.of(_spec()), threads=1)
    on_floats = train_local(b, floats, y, params, seed=5, threads=1)
    for k, v in on_pixels.delta.items():
        assert torch.equal(v, on_floats.delta[k]), k
    ev_pixels = evaluate(a, x, y, inputs=Inputs.of(_spec()))
    assert ev_pixels == evaluate(b, floats, y)


def test_augmentation_is_seeded_and_changes_training() -> None:
    x, y = _pixels()
    spec = AugmentSpec(crop_padding=2, hflip=True, color_jitter={"brightness": 0.3})  # type: ignore[arg-type]
    params = TrainingParams(batch_size=8, lr=0.1, augment=spec)
    runs = []
    for _ in range(2):
        net = _net()
        inputs = Inputs.of(_spec(), params)
        runs.append(train_local(net, x, y, params, seed=5, inputs=inputs, threads=1).delta)
    plain = train_local(
        _net(),
        x,
        y,
        TrainingParams(batch_size=8, lr=0.1),
        seed=5,
        inputs=Inputs.of(_spec()),
        threads=1,
    ).delta
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])  # same seed, same bits
    assert not all(torch.equal(runs[0][k], plain[k]) for k in plain)


def test_each_transform_does_what_it_says() -> None:
    g = torch.Generator().manual_seed(0)
    ramp = torch.arange(8, dtype=torch.float32).div(7).expand(16, 3, 8, 8).contiguous()
    flipped = augment(ramp, AugmentSpec(hflip=True), g)
    same = [torch.equal(flipped[i], ramp[i]) for i in range(16)]
    mirrored = [torch.equal(flipped[i], ramp[i].flip(2)) for i in range(16)]
    assert all(s or m for s, m in zip(same, mirrored, strict=True)) and any(same) and any(mirrored)
    cropped = augment(torch.ones(16, 3, 8, 8), AugmentSpec(crop_padding=2), g)
    assert cropped.shape == (16, 3, 8, 8)
    zeros = (cropped == 0).float().sum(dim=(1, 2, 3))
    assert bool((zeros > 0).any()) and bool((zeros <= 3 * (8 * 8 - 6 * 6)).all())
    grey = torch.full((4, 3, 8, 8), 0.5)
    bright = augment(grey, AugmentSpec(color_jitter={"brightness": 0.5}), g)  # type: ignore[arg-type]
    assert float(bright.min()) >= 0.25 and float(bright.max()) <= 0.75
    assert torch.equal(augment(grey, AugmentSpec(color_jitter={"saturation": 1.0}), g), grey)  # type: ignore[arg-type]


def test_augmentation_needs_data_kept_as_pixels() -> None:
    params = TrainingParams(augment=AugmentSpec(hflip=True))
    assert Inputs.of(_spec(stored="float32")) is None
    with pytest.raises(DataInvalid, match="pixels"):
        Inputs.of(_spec(stored="float32"), params)
    with pytest.raises(DataInvalid, match="uint8"):
        inputs = Inputs.of(_spec())
        assert inputs is not None
        inputs.check(torch.zeros(2, 3, 8, 8))
    x, y = _pixels()
    with pytest.raises(DataInvalid, match="floating"):
        train_local(_net(), x, y, TrainingParams())  # pixels without their Inputs
    assert np.uint8 == x.numpy().dtype
