"""Writing the final model as users download it: ``final.pt`` and ``final.safetensors``.

``final.pt`` is ``{"format", "spec", "feature_spec", "architecture", "state_dict"}``
written with ``torch.save``; it holds only plain containers, strings, numbers and
tensors, so plain torch loads it with ``torch.load(path, weights_only=True)`` (no code
from the file runs). ``feature_spec`` is the dataset's whole feature spec (column order,
per-column preprocessing, image encoding, class names, the holdout rule) and
``architecture`` the model in plain form (:mod:`.plain`), so :func:`peertrain.ml.export.load`
needs only torch and numpy. ``final.safetensors`` holds the state dict, with the rest as
JSON in its metadata. Files of format 1 (``{"spec", "feature_spec", "state_dict"}``, the
feature spec reduced to shapes) still load here.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.specs import (
    AnyModelSpec,
    DataShape,
    GraphSpec,
    NamedArchSpec,
    SpecInvalid,
    parse_data_shape,
    parse_model_spec,
)

from ..weights.codec import read_header, state_from_bytes, state_to_bytes
from ..zoo.build import build_model
from .plain import describe

__all__ = [
    "FORMAT",
    "FORMAT_1",
    "GRAPH_ARCH_FORMAT",
    "FinalModel",
    "final_pt_bytes",
    "final_safetensors_bytes",
    "load_final",
    "load_final_safetensors",
    "save_final",
]

FORMAT = "peertrain-final/2"
"""Format tag of ``final.pt`` (its ``format`` entry) and ``final.safetensors`` (metadata)."""
GRAPH_ARCH_FORMAT = "peertrain-graph/1"
"""The ``architecture`` of a layer graph's final model: no plain form, see ``spec``."""
FORMAT_1 = "peertrain-final/1"
"""The first format: specs and state only (``final.pt`` had no ``format`` entry)."""
_KEYS_1 = {"spec", "feature_spec", "state_dict"}
_KEYS = {"format", "spec", "feature_spec", "architecture", "state_dict"}


@dataclass(frozen=True)
class FinalModel:
    """A rebuilt final model (in eval mode) and its specs."""

    model: nn.Module
    spec: AnyModelSpec
    data_shape: DataShape


def _features_json(features: Any) -> dict[str, Any]:
    """The dataset's whole feature spec when given one, else the shapes-only form."""
    if isinstance(features, FeatureSpec):
        return features.model_dump(mode="json")
    if isinstance(features, Mapping) and {"classes", "label_column"} <= set(features):
        return FeatureSpec.model_validate(features).model_dump(mode="json")
    return parse_data_shape(features).model_dump(mode="json", exclude_none=True)


def _documents(spec: Any, features: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Model spec, feature spec and plain architecture, as JSON-like documents."""
    model_spec = parse_model_spec(spec)
    shapes = parse_data_shape(features)
    model = build_model(model_spec, shapes, seed=0)
    input_shape = shapes.image_shape or (shapes.flat_size,)
    if isinstance(model_spec, GraphSpec | NamedArchSpec):
        # a layer graph (a named architecture is one) has no plain (sequential) form,
        # and describe() would give a wrong one; the graph is the file's spec, rebuilt
        # by load and load_final (peertrain.ml.graph)
        architecture: dict[str, Any] = {"format": GRAPH_ARCH_FORMAT}
    else:
        architecture = describe(model, input_shape, flatten_first=model_spec.arch != "cnn")
    return model_spec.model_dump(mode="json"), _features_json(features), architecture


def final_pt_bytes(spec: Any, feature_spec: Any, state: Mapping[str, torch.Tensor]) -> bytes:
    """``final.pt``: specs, plain architecture and state dict (CPU tensors)."""
    model_spec, features, architecture = _documents(spec, feature_spec)
    payload = {
        "format": FORMAT,
        "spec": model_spec,
        "feature_spec": features,
        "architecture": architecture,
        "state_dict": {k: v.detach().cpu().contiguous() for k, v in state.items()},
    }
    buf = io.BytesIO()
    torch.save(payload, buf)
    return buf.getvalue()


def final_safetensors_bytes(
    spec: Any, feature_spec: Any, state: Mapping[str, torch.Tensor]
) -> bytes:
    """``final.safetensors``: the state dict, the rest as JSON in its metadata."""
    model_spec, features, architecture = _documents(spec, feature_spec)
    meta = {
        "format": FORMAT,
        "spec": json.dumps(model_spec),
        "feature_spec": json.dumps(features),
        "architecture": json.dumps(architecture),
    }
    return state_to_bytes(state, metadata=meta)


def save_final(
    directory: str | Path, spec: Any, feature_spec: Any, state: Mapping[str, torch.Tensor]
) -> tuple[Path, Path]:
    """Write ``final.pt`` and ``final.safetensors`` into ``directory``; returns both paths."""
    folder = Path(directory)
    pt, st = folder / "final.pt", folder / "final.safetensors"
    pt.write_bytes(final_pt_bytes(spec, feature_spec, state))
    st.write_bytes(final_safetensors_bytes(spec, feature_spec, state))
    return pt, st


def _rebuild(spec: Any, features: Any, state: Mapping[str, torch.Tensor]) -> FinalModel:
    model_spec, data_shape = parse_model_spec(spec), parse_data_shape(features)
    model = build_model(model_spec, data_shape, seed=0)
    model.load_state_dict(dict(state), strict=True)
    model.eval()
    return FinalModel(model=model, spec=model_spec, data_shape=data_shape)


def load_final(source: str | Path | bytes) -> FinalModel:
    """Rebuild the model from ``final.pt`` (a path or its bytes), with ``weights_only=True``.

    Raises
    ------
    SpecInvalid
        When the file's specs are not valid zoo specs, or it is not a ``final.pt``.
    """
    data = io.BytesIO(source) if isinstance(source, bytes) else source
    payload = torch.load(data, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or set(payload) not in (_KEYS, _KEYS_1):
        raise SpecInvalid("not a final.pt: expected spec, feature_spec and state_dict")
    return _rebuild(payload["spec"], payload["feature_spec"], payload["state_dict"])


def load_final_safetensors(data: bytes) -> FinalModel:
    """Rebuild the model from ``final.safetensors`` bytes."""
    meta = read_header(data, len(data)).metadata
    if meta.get("format") not in (FORMAT, FORMAT_1):
        raise SpecInvalid("not a final.safetensors: no peertrain format tag")
    specs = json.loads(meta["spec"]), json.loads(meta["feature_spec"])
    return _rebuild(*specs, state_from_bytes(data))
