"""Turning an upload into a training-ready dataset (runs in a worker thread).

:func:`prepare_upload` is synchronous and does all the CPU work: it recognises the
upload, parses it once, infers the schema, splits off the holdout, computes the
normalisation statistics from the training part and writes the encoded parts to a
scratch folder. It raises :class:`~peertrain.dataset.domain.errors.InvalidDataset`
(a subclass naming the reason) for anything unusable.
"""

from __future__ import annotations

from pathlib import Path

from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.ingest.upload import UploadedFile

from .images import prepare_images
from .options import PrepareOptions
from .result import PreparedDataset
from .table_encode import encode_table
from .table_scan import scan_table

__all__ = ["PrepareOptions", "PreparedDataset", "prepare_upload"]


def prepare_upload(
    raw: Path, filename: str, scratch: Path, options: PrepareOptions, limits: Limits
) -> PreparedDataset:
    """Validate and encode the upload at ``raw``; outputs go to ``scratch``.

    Parameters
    ----------
    raw
        The uploaded bytes on local disk.
    filename
        The user's name for the file (messages only: the content decides the format).
    scratch
        An empty folder for scratch and output files.
    options
        Label column, holdout fraction and seed, missing values, image size.
    limits
        The caps to enforce.
    """
    upload = UploadedFile(raw, filename, limits)
    try:
        if upload.kind == "images":
            return prepare_images(upload, scratch, options, limits)
        scan = scan_table(upload, scratch, options.label_column, options.missing_values)
        return encode_table(scan, scratch, options, limits)
    finally:
        upload.close()
