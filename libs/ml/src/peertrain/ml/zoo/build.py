"""Building a zoo model from its JSON spec, with seeded initial weights."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from peertrain.common.specs import (
    DataShape,
    GraphSpec,
    LogRegSpec,
    MLPSpec,
    check_budget,
    parse_data_shape,
    parse_model_spec,
    resolve_model,
)

from ..device import seeded
from ..graph.net import GraphNet
from .models import MLP, LogisticRegression, SmallCNN

__all__ = ["build_model"]


def build_model(spec: Any, feature_spec: Any, seed: int = 0) -> nn.Module:
    """Build the zoo model ``spec`` describes, for data that ``feature_spec`` describes.

    Parameters
    ----------
    spec
        A model spec (mapping or parsed), e.g. ``{"arch": "mlp", "hidden": [128]}``, or
        a layer graph (``{"arch": "graph", ...}``, built as a :class:`GraphNet`).
    feature_spec
        ``{"input_size": d, "num_classes": k}`` or ``{"image_shape": [c, h, w],
        "num_classes": k}`` (or the dataset service's feature spec).
    seed
        Initial weights are a function of the seed alone; torch's global random state
        is left as it was.

    Returns
    -------
    torch.nn.Module
        On the CPU, float32, in training mode.

    Raises
    ------
    SpecInvalid
        For an invalid spec, a cnn without images, or a model over the size bounds.
    """
    features: DataShape = parse_data_shape(feature_spec)
    model_spec = resolve_model(parse_model_spec(spec), features)  # a named arch: its graph
    check_budget(model_spec, features)
    with seeded(seed, torch.device("cpu")):  # modules are built on the CPU
        if isinstance(model_spec, GraphSpec):
            return GraphNet(model_spec)
        if isinstance(model_spec, LogRegSpec):
            return LogisticRegression(features.flat_size, features.num_classes)
        if isinstance(model_spec, MLPSpec):
            return MLP(model_spec, features.flat_size, features.num_classes)
        assert features.image_shape is not None  # check_budget refused a cnn without it
        return SmallCNN(model_spec, features.image_shape, features.num_classes)
