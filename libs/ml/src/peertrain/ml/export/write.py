"""The final model as users download it: ``final.pt`` and ``final.safetensors``.

``final.pt`` is ``{"spec", "feature_spec", "state_dict"}`` written with ``torch.save``;
it holds only plain containers, strings, numbers and tensors, so plain torch loads it with
``torch.load(path, weights_only=True)`` (no code from the file runs). ``final.safetensors``
holds the state dict, with both specs as JSON in its metadata.
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

from peertrain.common.specs import (
    CNNSpec,
    FeatureSpec,
    LogRegSpec,
    MLPSpec,
    SpecInvalid,
    parse_feature_spec,
    parse_model_spec,
)

from .weights.codec import read_header, state_from_bytes, state_to_bytes
from .zoo.build import build_model

__all__ = [
    "FORMAT",
    "FinalModel",
    "final_pt_bytes",
    "final_safetensors_bytes",
    "load_final",
    "load_final_safetensors",
    "save_final",
]

FORMAT = "peertrain-final/1"
"""Format tag stored in ``final.safetensors`` metadata."""


@dataclass(frozen=True)
class FinalModel:
    """A rebuilt final model (in eval mode) and its specs."""

    model: nn.Module
    spec: LogRegSpec | MLPSpec | CNNSpec
    feature_spec: FeatureSpec


def _plain(spec: Any, features: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    model_spec = parse_model_spec(spec).model_dump(mode="json")
    feature_spec = parse_feature_spec(features).model_dump(mode="json", exclude_none=True)
    return model_spec, feature_spec


def final_pt_bytes(spec: Any, feature_spec: Any, state: Mapping[str, torch.Tensor]) -> bytes:
    """``final.pt``: ``{"spec", "feature_spec", "state_dict"}`` (CPU tensors, JSON-like specs)."""
    model_spec, features = _plain(spec, feature_spec)
    payload = {
        "spec": model_spec,
        "feature_spec": features,
        "state_dict": {k: v.detach().cpu().contiguous() for k, v in state.items()},
    }
    buf = io.BytesIO()
    torch.save(payload, buf)
    return buf.getvalue()


def final_safetensors_bytes(
    spec: Any, feature_spec: Any, state: Mapping[str, torch.Tensor]
) -> bytes:
    """``final.safetensors``: the state dict, specs as JSON in its metadata."""
    model_spec, features = _plain(spec, feature_spec)
    meta = {"format": FORMAT, "spec": json.dumps(model_spec), "feature_spec": json.dumps(features)}
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
    model_spec, feature_spec = parse_model_spec(spec), parse_feature_spec(features)
    model = build_model(model_spec, feature_spec, seed=0)
    model.load_state_dict(dict(state), strict=True)
    model.eval()
    return FinalModel(model=model, spec=model_spec, feature_spec=feature_spec)


def load_final(source: str | Path | bytes) -> FinalModel:
    """Rebuild the model from ``final.pt`` (a path or its bytes), with ``weights_only=True``.

    Raises
    ------
    SpecInvalid
        When the file's specs are not valid zoo specs, or it is not a ``final.pt``.
    """
    data = io.BytesIO(source) if isinstance(source, bytes) else source
    payload = torch.load(data, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or set(payload) != {"spec", "feature_spec", "state_dict"}:
        raise SpecInvalid("not a final.pt: expected spec, feature_spec and state_dict")
    return _rebuild(payload["spec"], payload["feature_spec"], payload["state_dict"])


def load_final_safetensors(data: bytes) -> FinalModel:
    """Rebuild the model from ``final.safetensors`` bytes."""
    meta = read_header(data, len(data)).metadata
    if meta.get("format") != FORMAT:
        raise SpecInvalid("not a final.safetensors: no peertrain format tag")
    specs = json.loads(meta["spec"]), json.loads(meta["feature_spec"])
    return _rebuild(*specs, state_from_bytes(data))
