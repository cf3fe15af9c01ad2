"""The final model: writing ``final.pt`` / ``final.safetensors``, and loading it to predict.

- :func:`load` (torch and numpy only): ``model, preprocess = load("final.pt")``;
  ``preprocess`` turns raw rows or images into the model's input with the dataset
  service's own encoder, and knows the class names and the job's holdout rule;
- :func:`onnx_bytes`: the model as ONNX with the preprocessing in the graph;
- :func:`save_final`, :func:`final_pt_bytes`, :func:`final_safetensors_bytes`,
  :func:`load_final`, :func:`load_final_safetensors` (the writer's side, with the zoo and
  the specs: imported on first use, so loading needs none of them);
- :func:`list_images`: the images of a folder or ZIP, decoded a batch at a time
  (``preprocess.read_images(path)``).
"""

from __future__ import annotations

from typing import Any

from .images import ImageFiles, list_images
from .load import ExportError, Loaded, Preprocessor, load
from .plain import ARCH_FORMAT, ArchitectureInvalid, build_plain, describe
from .tables import read_table
from .to_onnx import RawFeatures, onnx_bytes

__all__ = [
    "ARCH_FORMAT",
    "FORMAT",
    "FORMAT_1",
    "ArchitectureInvalid",
    "ExportError",
    "FinalModel",
    "ImageFiles",
    "Loaded",
    "Preprocessor",
    "RawFeatures",
    "build_plain",
    "describe",
    "final_pt_bytes",
    "final_safetensors_bytes",
    "list_images",
    "load",
    "load_final",
    "load_final_safetensors",
    "onnx_bytes",
    "read_table",
    "save_final",
]

_WRITER = {
    "FORMAT",
    "FORMAT_1",
    "FinalModel",
    "final_pt_bytes",
    "final_safetensors_bytes",
    "load_final",
    "load_final_safetensors",
    "save_final",
}


def __getattr__(name: str) -> Any:
    """The writer's names, imported on first use (they need pydantic and the zoo)."""
    if name in _WRITER:
        from . import write

        return getattr(write, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
