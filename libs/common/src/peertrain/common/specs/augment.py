"""A job's image augmentation (``training.augment``): declarative, applied by the peers.

Peers augment each training batch of an image dataset stored as pixels (``uint8``):
the batch is scaled to ``[0, 1]``, augmented, then standardised per channel as the
dataset's :class:`~peertrain.common.events.datasets.ImageEncoding` says. Every random
draw comes from the round's seeded generator, so a round trains the same bits wherever
it runs. Evaluation never augments. ``peertrain.ml.training.augment`` applies it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AugmentSpec", "ColorJitter"]


class ColorJitter(BaseModel):
    """Random colour changes, each factor drawn per image from ``[1 - x, 1 + x]``.

    Applied in this order, as torchvision's ``ColorJitter`` defines each (with its
    order fixed): ``brightness`` scales the pixels; ``contrast`` blends the image with
    its mean grey level; ``saturation`` blends it with its grey version (RGB only: a
    grey image is unchanged). Results are clamped to ``[0, 1]``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    brightness: float = Field(default=0.0, ge=0, le=1)
    contrast: float = Field(default=0.0, ge=0, le=1)
    saturation: float = Field(default=0.0, ge=0, le=1)


class AugmentSpec(BaseModel):
    """The ``training.augment`` block.

    Attributes
    ----------
    crop_padding
        Random crop with padding (the CIFAR recipe): the image is padded with
        ``crop_padding`` zero pixels on every side and a window of its own size is cut
        at a random place; 0: no crop.
    hflip
        Mirror each image left-right with probability 1/2.
    color_jitter
        Random brightness, contrast and saturation; ``None``: none.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    crop_padding: int = Field(default=0, ge=0, le=64)
    hflip: bool = False
    color_jitter: ColorJitter | None = None

    @property
    def does_nothing(self) -> bool:
        """Whether the block changes no image."""
        jitter = self.color_jitter
        still = jitter is None or not (jitter.brightness or jitter.contrast or jitter.saturation)
        return self.crop_padding == 0 and not self.hflip and still
