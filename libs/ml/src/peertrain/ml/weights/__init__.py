"""Weights as safetensors (never pickle), deltas, norms and update validation."""

from .codec import (
    DTYPES,
    SafetensorsHeader,
    TensorInfo,
    load_state_file,
    read_header,
    save_state_file,
    state_from_bytes,
    state_to_bytes,
)
from .delta import apply_delta, compute_delta, l2_norm
from .validate import header_problems, load_update, update_problems, validate_update

__all__ = [
    "DTYPES",
    "SafetensorsHeader",
    "TensorInfo",
    "apply_delta",
    "compute_delta",
    "header_problems",
    "l2_norm",
    "load_state_file",
    "load_update",
    "read_header",
    "save_state_file",
    "state_from_bytes",
    "state_to_bytes",
    "update_problems",
    "validate_update",
]
