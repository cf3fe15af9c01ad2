"""Evaluating a model on a labelled set (the holdout): loss, accuracy, per class."""

from __future__ import annotations

from typing import TypedDict

import torch
import torch.nn.functional as F
from torch import nn

from ..device import select_device
from .data import check_xy, num_outputs
from .inputs import Inputs

__all__ = ["EvalMetrics", "evaluate"]


class EvalMetrics(TypedDict):
    """Evaluation results (JSON-ready).

    ``per_class_accuracy[i]`` is ``None`` when class ``i`` has no sample.
    """

    loss: float
    accuracy: float
    per_class_accuracy: list[float | None]
    samples: int


def evaluate(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    batch_size: int = 1024,
    device: torch.device | str | None = None,
    inputs: Inputs | None = None,
) -> EvalMetrics:
    """Mean cross-entropy loss, accuracy and per-class accuracy of ``model`` on ``x, y``.

    The model is evaluated in eval mode (no dropout) and left in the mode it was in.
    ``inputs``: how ``x``'s pixels become the model's inputs (never augmented), for
    data stored as pixels (:meth:`Inputs.of` the dataset's feature spec).

    Raises
    ------
    DataInvalid
        When ``x``/``y`` do not fit the model.
    """
    dev = select_device(str(device)) if device is not None else select_device()
    model.to(dev)
    x, y = x.to(dev), y.to(dev)
    check_xy(x, y, pixels=inputs is not None)
    if inputs is not None:
        inputs.check(x)
    classes = num_outputs(model, inputs(x[:1]) if inputs is not None else x)
    check_xy(x, y, classes, pixels=inputs is not None)
    was_training = model.training
    model.eval()
    loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
    per_class = torch.zeros(classes, dtype=torch.int64, device=dev)
    hits = torch.zeros(classes, dtype=torch.int64, device=dev)
    with torch.inference_mode():
        for start in range(0, x.shape[0], batch_size):
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
            out = model(inputs(xb) if inputs is not None else xb)
            loss_sum += F.cross_entropy(out, yb, reduction="sum").to(torch.float64)
            right = out.argmax(dim=1) == yb
            per_class += torch.bincount(yb, minlength=classes)
            hits += torch.bincount(yb[right], minlength=classes)
    model.train(was_training)
    n = x.shape[0]
    counts, good = per_class.cpu().tolist(), hits.cpu().tolist()
    return EvalMetrics(
        loss=float(loss_sum) / n,
        accuracy=sum(good) / n,
        per_class_accuracy=[g / c if c else None for g, c in zip(good, counts, strict=True)],
        samples=n,
    )
