"""The zoo's modules. They accept flat ``(N, features)`` or image ``(N, C, H, W)`` input."""

from __future__ import annotations

import torch
from torch import nn

from peertrain.common.specs import CNNSpec, MLPSpec, cnn_block_shapes

__all__ = ["MLP", "LogisticRegression", "SmallCNN"]

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}


class LogisticRegression(nn.Module):
    """One linear layer on the flattened input; outputs logits."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.linear(x.flatten(1))
        return out


class MLP(nn.Module):
    """Hidden ``Linear -> activation [-> Dropout]`` layers, then a linear classifier."""

    def __init__(self, spec: MLPSpec, in_features: int, num_classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for units in spec.hidden:
            layers += [nn.Linear(width, units), _ACTIVATIONS[spec.activation]()]
            if spec.dropout > 0:
                layers.append(nn.Dropout(spec.dropout))
            width = units
        layers.append(nn.Linear(width, num_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layers(x.flatten(1))
        return out


class SmallCNN(nn.Module):
    """``Conv -> ReLU -> MaxPool(2)`` blocks, then ``[Dropout] Linear [-> ReLU -> Linear]``."""

    def __init__(self, spec: CNNSpec, image_shape: tuple[int, int, int], num_classes: int) -> None:
        super().__init__()
        self.image_shape = image_shape
        blocks: list[nn.Module] = []
        c_in, (_, h, w) = image_shape[0], image_shape
        for c_out in spec.channels:
            blocks += [
                nn.Conv2d(c_in, c_out, spec.kernel_size, padding=spec.kernel_size // 2),
                nn.ReLU(),
            ]
            if h >= 2 and w >= 2:
                blocks.append(nn.MaxPool2d(2))
                h, w = h // 2, w // 2
            c_in = c_out
        self.features = nn.Sequential(*blocks)
        c, h, w = cnn_block_shapes(spec, image_shape)[-1]
        head: list[nn.Module] = [nn.Flatten()]
        width = c * h * w
        if spec.hidden:
            if spec.dropout > 0:
                head.append(nn.Dropout(spec.dropout))
            head += [nn.Linear(width, spec.hidden), nn.ReLU()]
            width = spec.hidden
        if spec.dropout > 0:
            head.append(nn.Dropout(spec.dropout))
        head.append(nn.Linear(width, num_classes))
        self.classifier = nn.Sequential(*head)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:
            x = x.view(-1, *self.image_shape)
        out: torch.Tensor = self.classifier(self.features(x))
        return out
