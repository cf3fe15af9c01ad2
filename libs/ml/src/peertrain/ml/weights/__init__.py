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
from .layers import batch_norm_names, buffer_names, keep_local_layers, use_local_layers
from .starting import WeightsInvalid, dtype_code, read_starting_weights
from .validate import header_problems, load_update, update_problems, validate_update

__all__ = [
    "DTYPES",
    "SafetensorsHeader",
    "TensorInfo",
    "WeightsInvalid",
    "apply_delta",
    "batch_norm_names",
    "buffer_names",
    "compute_delta",
    "dtype_code",
    "header_problems",
    "keep_local_layers",
    "l2_norm",
    "load_state_file",
    "load_update",
    "read_header",
    "read_starting_weights",
    "save_state_file",
    "state_from_bytes",
    "state_to_bytes",
    "update_problems",
    "use_local_layers",
    "validate_update",
]
