"""Starting weights a user uploads: a state dict as safetensors, or as a ``.pt`` file
(``torch.save(model.state_dict())``, or PeerTrain's own ``final.pt``) read with
``torch.load(weights_only=True)`` — never unpickled otherwise, nothing executed.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections.abc import Mapping

import torch

from peertrain.common.errors import ValidationFailed
from peertrain.common.text import has_nul

from ..errors import MLError, NotSafetensors
from .codec import DTYPES, state_from_bytes

__all__ = ["WeightsInvalid", "dtype_code", "read_starting_weights"]

MAX_TENSORS = 10_000
_CODES = {dtype: code for code, dtype in DTYPES.items()}


class WeightsInvalid(MLError, ValidationFailed):
    """Uploaded weights are not a state dict PeerTrain can start a job from."""

    status_code = 422
    code = "weights_invalid"


def dtype_code(tensor: torch.Tensor) -> str:
    """The safetensors code of ``tensor``'s dtype (``F32``...)."""
    return _CODES[tensor.dtype]


def _torch_file(data: bytes) -> Mapping[str, object]:
    try:
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:  # weights_only refused a global: never ran it
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "refused"
        raise WeightsInvalid(
            f"the .pt file holds more than tensors (torch.load weights_only refused it: {first})"
        ) from None
    except (RuntimeError, EOFError, ValueError, zipfile.BadZipFile, OSError) as exc:
        raise WeightsInvalid(f"not a readable .pt file: {str(exc)[:200]}") from None
    if isinstance(payload, Mapping) and isinstance(payload.get("state_dict"), Mapping):
        payload = payload["state_dict"]  # final.pt, or a checkpoint with a state_dict
    if not isinstance(payload, Mapping):
        raise WeightsInvalid(f"the .pt file holds a {type(payload).__name__}, not a state dict")
    return payload


def read_starting_weights(data: bytes) -> dict[str, torch.Tensor]:
    """The state dict in ``data`` (safetensors, or a ``.pt`` file), on the CPU.

    Raises
    ------
    WeightsInvalid
        Neither format; a ``.pt`` file holding anything but tensors (the loader refuses
        any other object before building it); more than 10,000 tensors; a name that is
        not text or holds a NUL; a dtype safetensors cannot hold; NaN or infinity.
    """
    if data[:2] == b"PK" or data[:1] == b"\x80":  # a torch.save zip, or a legacy pickle
        raw = _torch_file(data)
    else:
        try:
            raw = state_from_bytes(data)
        except NotSafetensors as exc:
            raise WeightsInvalid(
                f"{exc.message}; send a safetensors file or a .pt state dict"
            ) from None
    if len(raw) > MAX_TENSORS:
        raise WeightsInvalid(f"{len(raw)} tensors, more than {MAX_TENSORS}")
    state: dict[str, torch.Tensor] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name or len(name) > 300 or has_nul(name):
            raise WeightsInvalid(f"tensor name {str(name)[:50]!r} is not a usable name")
        if not isinstance(value, torch.Tensor):
            raise WeightsInvalid(f"{name!r} is a {type(value).__name__}, not a tensor")
        if value.dtype not in _CODES:
            raise WeightsInvalid(f"{name!r} has dtype {value.dtype}, which is not supported")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise WeightsInvalid(f"{name!r} holds NaN or infinity")
        state[name] = value.detach().contiguous()
    return state
