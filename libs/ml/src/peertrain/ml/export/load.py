"""Loading a final model for inference, with torch and numpy alone.

:func:`load` gives the model (an ``nn.Sequential`` rebuilt from the plain architecture,
in eval mode) and a :class:`Preprocessor` that turns raw rows or images into its input
with the very encoder the dataset service used on the training data
(:mod:`peertrain.common.features`, numpy only). Nothing here imports pydantic, a service
or the zoo, so a process with only torch and numpy (and these files) can predict; a
layer graph's model alone (no plain form) is rebuilt with peertrain-ml's graph modules.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from peertrain.common.features import (
    column_values,
    encode_pixels,
    encode_table,
    missing_rule,
    stratified_holdout,
    to_pixels,
)

from .images import ImageFiles, list_images
from .plain import ArchitectureInvalid, build_plain
from .tables import Table, read_table

__all__ = ["ExportError", "Loaded", "Preprocessor", "load"]

_FORMAT = "peertrain-final/2"  # write.FORMAT (not imported: write needs pydantic)
_GRAPH_FORMAT = "peertrain-graph/1"  # write.GRAPH_ARCH_FORMAT
_ST_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


class ExportError(ValueError):
    """The file is not a final model this version can use as asked (the message says why)."""


class Preprocessor:
    """Raw data -> the model's input, as the dataset service encoded the training data.

    Call it with a table (column name -> cells, e.g. from :meth:`read`, or a list of row
    mappings) or with images (``uint8`` arrays ``(n, h, w)``, ``(n, h, w, c)`` or
    ``(n, c, h, w)`` at the model's size, or PIL images, which need Pillow). It returns a
    float32 tensor ``(n, *input_shape)``.
    """

    def __init__(self, feature_spec: Mapping[str, Any]) -> None:
        self.feature_spec = dict(feature_spec)
        self.complete = "classes" in feature_spec and "label_column" in feature_spec
        shape = feature_spec.get("input_shape") or feature_spec.get("image_shape")
        if shape is None:
            shape = [feature_spec["input_size"]]
        self.input_shape = tuple(int(d) for d in shape)

    @property
    def kind(self) -> str:
        """``table`` or ``images`` (``unknown`` for an export without preprocessing)."""
        return str(self.feature_spec.get("kind", "unknown"))

    @property
    def classes(self) -> tuple[str, ...]:
        """Class names in output order: logit ``i`` is ``classes[i]``."""
        if "classes" in self.feature_spec:
            return tuple(self.feature_spec["classes"])
        return tuple(str(i) for i in range(int(self.feature_spec["num_classes"])))

    @property
    def label_column(self) -> str | None:
        """The label column of the training data."""
        value = self.feature_spec.get("label_column")
        return None if value is None else str(value)

    @property
    def columns(self) -> tuple[str, ...]:
        """The raw columns the model reads, in feature order."""
        return tuple(c["name"] for c in self.feature_spec.get("columns") or ())

    @property
    def holdout(self) -> dict[str, Any] | None:
        """How the job's holdout was chosen (``fraction``, ``seed``, ``rows``), if known."""
        rule = self.feature_spec.get("holdout")
        return dict(rule) if rule else None

    def _need(self, kind: str) -> None:
        if not self.complete:
            raise ExportError(
                "this model's export records no preprocessing (it was written before "
                "peertrain-final/2): pass inputs encoded as the job's feature spec says, "
                "or download the model of a job that finished since"
            )
        if self.kind != kind:
            raise ExportError(f"this model reads {self.kind}, not {kind}")

    def read(self, path: str | Path) -> Table:
        """A CSV (plain or gzip, comma/semicolon/tab) in the upload's format, as columns."""
        self._need("table")
        return read_table(path, (*self.columns, self.label_column or ""))

    @property
    def image(self) -> dict[str, Any]:
        """An image model's encoding: ``mode``, ``channels``, ``height``, ``width``, ...."""
        self._need("images")
        return dict(self.feature_spec["image"])

    def read_images(self, path: str | Path) -> ImageFiles:
        """The PNG/JPEG images of a folder or ZIP, listed in name order, with their class
        folders as labels if they sit in ``<class>/`` folders; ``files.pixels(self.image)``
        decodes them a batch at a time, and this preprocessor encodes each batch."""
        self._need("images")
        return list_images(path, self.classes)

    def __call__(self, data: Any) -> torch.Tensor:
        """Encode ``data`` (see the class docstring) as the model's input."""
        if isinstance(data, torch.Tensor | np.ndarray) and np.asarray(data).dtype.kind == "f":
            return self._encoded(np.asarray(data))
        if self.kind == "images":
            return self._images(data)
        self._need("table")
        table = _columns(data)
        missing = [c for c in self.columns if c not in table]
        if missing:
            raise ExportError(f"the data has no column {missing[0]!r} (the model reads it)")
        encoded = encode_table(self.feature_spec, table)
        return torch.from_numpy(encoded).reshape(len(encoded), *self.input_shape)

    def _encoded(self, array: NDArray[Any]) -> torch.Tensor:
        """Floats already encoded as the model's input: checked and passed on."""
        if self.complete and self.kind == "table":
            raise ExportError("give raw cells (strings) per column, not floats")
        x = np.ascontiguousarray(array, dtype=np.float32)
        if x.shape[1:] != self.input_shape and x[0].size != int(np.prod(self.input_shape)):
            raise ExportError(f"inputs of shape {x.shape[1:]}, the model wants {self.input_shape}")
        return torch.from_numpy(x).reshape(len(x), *self.input_shape)

    def _images(self, data: Any) -> torch.Tensor:
        self._need("images")
        image = self.feature_spec["image"]
        c, h, w = int(image["channels"]), int(image["height"]), int(image["width"])
        if isinstance(data, np.ndarray):
            pixels = data
            if pixels.ndim == 3 and c == 1:
                pixels = pixels[:, None, :, :]
            elif pixels.ndim == 4 and pixels.shape[1:] == (h, w, c):
                pixels = pixels.transpose(0, 3, 1, 2)
            if pixels.shape[1:] != (c, h, w):
                raise ExportError(f"images of shape {data.shape[1:]}; the model wants {(c, h, w)}")
        else:
            pixels = np.stack([to_pixels(picture, image) for picture in data])
        encoded = encode_pixels(pixels.astype(np.uint8), image)
        return torch.from_numpy(np.ascontiguousarray(encoded))

    def labels(self, cells: Sequence[Any] | NDArray[Any]) -> NDArray[np.int64]:
        """Class index of each label cell (trimmed); ``-1`` for a class the model lacks."""
        index = {name: i for i, name in enumerate(self.classes)}
        return np.array([index.get(str(c).strip(), -1) for c in cells], dtype=np.int64)

    def holdout_mask(self, labels: NDArray[np.integer]) -> NDArray[np.bool_]:
        """The job's holdout rows among all the upload's rows (class indices, file order).

        Raises
        ------
        ExportError
            No holdout rule in the export, or the rows are not the upload's.
        """
        rule = self.holdout
        if rule is None:
            raise ExportError("this model's export does not record how its holdout was chosen")
        if len(labels) != int(rule["rows"]):
            raise ExportError(
                f"the data has {len(labels)} rows, the job's dataset {rule['rows']}: "
                "the holdout is found only in the very file that was uploaded"
            )
        if (np.asarray(labels) < 0).any():
            raise ExportError("a label is not one of the model's classes")
        return stratified_holdout(
            labels, len(self.classes), float(rule["fraction"]), int(rule["seed"])
        )

    def raw_matrix(self, table: Mapping[str, Sequence[Any] | NDArray[Any]]) -> NDArray[np.float32]:
        """A table as the ONNX model's ``raw`` input: one float column per raw column.

        Numbers and booleans (0/1) as they are, categories as their index in the column's
        ``categories``; NaN for missing, ``-2`` for a category the training data lacked.
        """
        self._need("table")
        tokens, match = missing_rule(self.feature_spec)
        cols = self.feature_spec["columns"]
        out = np.zeros((len(table[cols[0]["name"]]) if cols else 0, len(cols)), dtype=np.float32)
        for j, column in enumerate(cols):
            values = column_values(column, table[column["name"]], tokens, match)
            if column["type"] == "categorical":
                out[:, j] = np.where(values == -1, np.nan, values.astype(np.float32))
            else:
                out[:, j] = values
        return out


def _columns(data: Any) -> Mapping[str, Any]:
    if isinstance(data, Mapping):
        return data
    rows = list(data)
    names = {k for row in rows for k in row}
    return {name: [row.get(name) for row in rows] for name in names}


class Loaded(NamedTuple):
    """``model, preprocess = load(path)``."""

    model: nn.Module
    preprocess: Preprocessor


def _safetensors(data: bytes) -> tuple[dict[str, str], dict[str, torch.Tensor]]:
    """Metadata and tensors of a safetensors file (parsed by hand: torch only)."""
    if len(data) < 8:
        raise ExportError("not a safetensors file")
    (size,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8 : 8 + size])
    except ValueError:
        raise ExportError("not a safetensors file") from None
    meta = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + size :]
    tensors: dict[str, torch.Tensor] = {}
    for name, info in header.items():
        start, stop = info["data_offsets"]
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ExportError(f"tensor {name}: unsupported dtype {info['dtype']}")
        raw = bytearray(body[start:stop])
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(info["shape"])
    return meta, tensors


def _payload(source: str | Path | bytes) -> dict[str, Any]:
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    if data[:2] == b"PK":  # torch.save's zip
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        if not isinstance(payload, dict):
            raise ExportError("not a PeerTrain final.pt")
        return payload
    meta, tensors = _safetensors(data)
    documents = {k: json.loads(v) for k, v in meta.items() if k != "format"}
    return {"format": meta.get("format"), **documents, "state_dict": tensors}


def load(source: str | Path | bytes) -> Loaded:
    """The model of a ``final.pt`` or ``final.safetensors`` (path or bytes) and its
    preprocessing.

    Raises
    ------
    ExportError
        Not a final model, or one of the first format (which records no architecture
        or preprocessing: :func:`peertrain.ml.export.load_final` still rebuilds its model
        with the zoo, where peertrain-ml is installed).
    """
    payload = _payload(source)
    if payload.get("format") != _FORMAT:
        if {"spec", "feature_spec", "state_dict"} <= set(payload):
            raise ExportError(
                "this final model was written in the first format (peertrain-final/1), "
                "without its architecture or preprocessing: rebuild it with "
                "peertrain.ml.export.load_final, or download the model of a newer job"
            )
        raise ExportError(f"not a PeerTrain final model (format {payload.get('format')!r})")
    try:
        if (payload.get("architecture") or {}).get("format") == _GRAPH_FORMAT:
            model = _graph_model(payload)
        else:
            model = build_plain(payload["architecture"], payload["state_dict"])
    except (ArchitectureInvalid, KeyError, TypeError, ValueError) as exc:
        raise ExportError(f"the model in this file cannot be rebuilt: {exc}") from None
    return Loaded(model, Preprocessor(payload["feature_spec"]))


def _graph_model(payload: Mapping[str, Any]) -> nn.Module:
    """A layer graph's model (or a named architecture's), rebuilt from the file's spec by
    :mod:`peertrain.ml.graph`: the one kind of final model that needs peertrain-ml's
    own modules (and pydantic) to load, since a graph has no plain sequential form."""
    from peertrain.ml.zoo import build_model

    model = build_model(payload["spec"], payload["feature_spec"], seed=0)
    model.load_state_dict(payload["state_dict"], strict=True)
    return model.eval()
