"""Training data stored as pixels, turned into the model's input one batch at a time.

An image dataset's ``X`` holds ``uint8`` pixels (``ImageEncoding.stored == "uint8"``):
4 times smaller to store, send and hold than the standardised floats. Each batch is
scaled to ``[0, 1]``, augmented when training asks for it (``training.augment``), then
standardised per channel: ``(pixel / 255 - mean[c]) / std[c]``, the same float32
operations, in the same order, as :func:`peertrain.common.features.encode_pixels`, so a
batch gets the bits the exported model's preprocessing gives its pixels.
"""

from __future__ import annotations

import torch

from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.specs import AugmentSpec, TrainingParams

from ..errors import DataInvalid
from .augment import augment

__all__ = ["Inputs"]


class Inputs:
    """Pixels to standardised (and, in training, augmented) model inputs.

    Parameters
    ----------
    mean, std
        Per channel, of the pixels scaled to ``[0, 1]``.
    augment
        The job's ``training.augment``; ``None``: none.
    """

    def __init__(
        self, mean: tuple[float, ...], std: tuple[float, ...], augment: AugmentSpec | None = None
    ) -> None:
        self.mean = torch.tensor(mean, dtype=torch.float32).reshape(1, -1, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32).reshape(1, -1, 1, 1)
        self.augment = None if augment is None or augment.does_nothing else augment

    @classmethod
    def of(cls, feature_spec: FeatureSpec, training: TrainingParams | None = None) -> Inputs | None:
        """The inputs of a dataset (its feature spec): ``None`` when its ``X`` already
        holds the model's inputs (tables; images validated before pixels were kept).

        Raises
        ------
        DataInvalid
            ``training.augment`` on data that is not stored as pixels.
        """
        image = feature_spec.image
        wanted = training.augment if training is not None else None
        if image is None or image.stored != "uint8":
            if wanted is not None and not wanted.does_nothing:
                raise DataInvalid(
                    "training.augment needs an image dataset stored as pixels "
                    "(upload it again to keep its pixels)"
                )
            return None
        return cls(image.mean, image.std, wanted)

    def check(self, x: torch.Tensor) -> None:
        """Refuse ``X`` that is not a batch of pixels with this dataset's channels.

        Raises
        ------
        DataInvalid
        """
        if x.dtype != torch.uint8 or x.dim() != 4 or x.shape[1] != self.mean.shape[1]:
            raise DataInvalid(
                f"X must be uint8 pixels (samples, {self.mean.shape[1]}, height, width), "
                f"got {x.dtype} {tuple(x.shape)}"
            )

    def __call__(
        self, pixels: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """The model's input for a batch of pixels; augmented when ``generator`` is given
        (training) and the job asks for it."""
        x = pixels.to(torch.float32) / torch.tensor(255.0, dtype=torch.float32)
        if generator is not None and self.augment is not None:
            x = augment(x, self.augment, generator)
        mean, std = self.mean.to(x.device), self.std.to(x.device)
        return (x - mean) / std
