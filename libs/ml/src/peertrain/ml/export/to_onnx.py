"""ONNX export of a final model with its preprocessing folded into the graph.

Tables: the graph's input ``raw`` is ``float32 (n, columns)``, one column per raw feature
column in the order of the ``peertrain.columns`` metadata: numbers and booleans (0/1) as
they are, categories as their index in that column's ``categories``, NaN where missing
(:meth:`Preprocessor.raw_matrix` builds it from cells). Images: ``pixels`` is
``float32 (n, channels, height, width)`` in 0..255 at the model's size. Outputs:
``logits`` and ``class_index``; the ``peertrain.classes`` metadata names the classes and
``peertrain.feature_spec`` holds the whole feature spec. Writing the metadata needs the
``onnx`` package; the export itself needs torch only.
"""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .load import ExportError, Preprocessor, load

__all__ = ["RawFeatures", "onnx_bytes"]

_OPSET = 17


class RawFeatures(nn.Module):
    """The feature spec's encoding as tensor operations (the numpy encoder's twin)."""

    def __init__(self, feature_spec: Mapping[str, Any]) -> None:
        super().__init__()
        self.kind = str(feature_spec["kind"])
        if self.kind == "images":
            image = feature_spec["image"]
            mean = torch.tensor(image["mean"], dtype=torch.float32)
            std = torch.tensor(image["std"], dtype=torch.float32)
            self.mean = nn.Buffer(mean.reshape(1, -1, 1, 1))
            self.std = nn.Buffer(std.reshape(1, -1, 1, 1))
            return
        self.columns = [dict(c) for c in feature_spec["columns"]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "images":
            scaled = x / torch.tensor(255.0)
            out: torch.Tensor = (scaled - self.mean) / self.std
            return out
        parts: list[torch.Tensor] = []
        for j, column in enumerate(self.columns):
            v = x[:, j : j + 1]
            if column["type"] == "categorical":
                index = torch.where(torch.isnan(v), torch.tensor(-1.0), v)
                known = len(column["categories"] or ())
                grid = torch.arange(known, dtype=torch.float32).reshape(1, known)
                parts.append((index == grid).to(torch.float32))
                if column.get("missing_category"):
                    parts.append((index == torch.tensor(-1.0)).to(torch.float32))
                continue
            filled = torch.where(torch.isnan(v), torch.tensor(float(column["fill"] or 0.0)), v)
            mean = torch.tensor(float(column["mean"] if column.get("mean") is not None else 0.0))
            std = torch.tensor(float(column["std"] if column.get("std") is not None else 1.0))
            parts.append((filled - mean) / std)
        return torch.cat(parts, dim=1)


class _WithClasses(nn.Module):
    def __init__(self, features: nn.Module, model: nn.Module) -> None:
        super().__init__()
        self.features = features
        self.model = model

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits: torch.Tensor = self.model(self.features(x))
        return logits, logits.argmax(dim=1)


def _example(prep: Preprocessor) -> torch.Tensor:
    if prep.kind == "images":
        return torch.zeros(2, *prep.input_shape)
    return torch.zeros(2, len(prep.columns))


def onnx_bytes(source: str | Path | bytes) -> bytes:
    """The ONNX model (preprocessing included) of a ``final.pt`` / ``final.safetensors``.

    Raises
    ------
    ExportError
        An export without preprocessing (format 1), or no ``onnx`` package for the
        metadata.
    """
    model, prep = load(source)
    if not prep.complete:
        raise ExportError("this model's export records no preprocessing to fold into ONNX")
    try:
        import onnx
    except ImportError:
        raise ExportError("writing ONNX needs the onnx package (pip install onnx)") from None
    graph = _WithClasses(RawFeatures(prep.feature_spec), model).eval()
    name = "pixels" if prep.kind == "images" else "raw"
    buf = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter's notices, not ours
        warnings.simplefilter("ignore")
        torch.onnx.export(
            graph,
            (_example(prep),),
            buf,  # type: ignore[arg-type]  # a file object is documented and works
            dynamo=False,  # the TorchScript exporter: no onnxscript needed
            opset_version=_OPSET,
            input_names=[name],
            output_names=["logits", "class_index"],
            dynamic_axes={name: {0: "n"}, "logits": {0: "n"}, "class_index": {0: "n"}},
        )
    proto = onnx.load_from_string(buf.getvalue())
    meta = {
        "peertrain.classes": json.dumps(list(prep.classes)),
        "peertrain.columns": json.dumps(list(prep.columns)),
        "peertrain.input": name,
        "peertrain.feature_spec": json.dumps(prep.feature_spec),
    }
    for key, value in meta.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    data: bytes = proto.SerializeToString()
    return data
