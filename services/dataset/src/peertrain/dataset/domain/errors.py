"""The dataset service's typed errors: one root, each mixing in the builtin that fits.

:class:`InvalidDataset` and its subclasses describe bad *input*. Raised while an upload
is streaming, the HTTP edge answers them (4xx, the one error shape); raised during
validation, they become a ``dataset.rejected`` event whose ``code``, ``message`` and
``detail`` are the error's.
"""

from __future__ import annotations

from typing import Any

from peertrain.common.errors import PeerTrainError, QuotaExceeded

__all__ = [
    "ArchiveBomb",
    "BadArchiveEntry",
    "DatasetError",
    "DatasetGone",
    "DatasetNotFound",
    "DatasetNotReady",
    "DatasetQuotaExceeded",
    "EmptyFile",
    "FieldTooLarge",
    "InvalidDataset",
    "InvalidUploadForm",
    "MissingLabel",
    "MissingLabelColumn",
    "NotCsvOrZip",
    "NotUtf8",
    "RaggedRow",
    "SingleClass",
    "TooFewRows",
    "TooManyCategories",
    "TooManyClasses",
    "TooManyColumns",
    "TooManyEntries",
    "TooManyRows",
    "UnsupportedMediaType",
    "UploadTooLarge",
]


class DatasetError(PeerTrainError):
    """Root of every error of the dataset service."""

    code = "dataset_error"


class DatasetNotFound(DatasetError, LookupError):
    """No such dataset, or not the caller's (the two are not told apart)."""

    status_code = 404
    code = "dataset_not_found"

    def __init__(self, dataset_id: str) -> None:
        super().__init__(f"no dataset {dataset_id!r}", detail={"dataset_id": dataset_id})


class DatasetNotReady(DatasetError):
    """The dataset is not (or no longer) in a state that allows this."""

    status_code = 409
    code = "dataset_not_ready"


class DatasetGone(DatasetError, LookupError):
    """The dataset's objects disappeared while working on it (it was deleted)."""

    status_code = 410
    code = "dataset_gone"


class UploadTooLarge(DatasetError, ValueError):
    """The upload passed the size cap; the rest of the body was not read."""

    status_code = 413
    code = "payload_too_large"

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            f"the upload exceeds the limit of {max_bytes} bytes", detail={"max_bytes": max_bytes}
        )


class DatasetQuotaExceeded(QuotaExceeded, DatasetError):
    """The upload would take the user past a quota (datasets kept, or bytes stored).

    ``detail`` names the ``quota`` (``datasets`` or ``bytes``), its ``limit``, what is
    ``used`` and, for bytes, what was ``incoming``. Deleting datasets frees quota.
    """

    def __init__(self, message: str, **detail: int | str) -> None:
        super().__init__(message, detail=detail)


class UnsupportedMediaType(DatasetError, ValueError):
    """The request is not ``multipart/form-data``."""

    status_code = 415
    code = "unsupported_media_type"


class InvalidUploadForm(DatasetError, ValueError):
    """The multipart form is malformed or its fields are not acceptable."""

    status_code = 422
    code = "invalid_upload"


class InvalidDataset(DatasetError, ValueError):
    """The file is not a usable dataset (base of every rejection reason).

    Parameters
    ----------
    message
        One sentence a user can act on.
    detail
        Where: ``{"line": 17}``, ``{"column": "age"}``, ``{"entry": "a/../b.csv"}``.
    """

    status_code = 422
    code = "invalid_dataset"

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message, detail=detail or None)


class EmptyFile(InvalidDataset):
    """Nothing (or only a header) to learn from."""

    code = "empty_file"


class NotCsvOrZip(InvalidDataset):
    """The bytes are neither CSV text (plain or gzip) nor a ZIP archive."""

    status_code = 415
    code = "not_csv_or_zip"


class NotUtf8(InvalidDataset):
    """The text is not valid UTF-8."""

    code = "not_utf8"


class RaggedRow(InvalidDataset):
    """A row has more or fewer fields than the header."""

    code = "ragged_row"


class FieldTooLarge(InvalidDataset):
    """A single field is over the field size limit."""

    code = "field_too_large"


class MissingLabelColumn(InvalidDataset):
    """The label column named (or the default, the last one) does not exist."""

    code = "missing_label_column"


class MissingLabel(InvalidDataset):
    """A row has no label."""

    code = "missing_label"


class SingleClass(InvalidDataset):
    """The labels hold fewer than two classes: nothing to classify."""

    code = "single_class"


class TooManyClasses(InvalidDataset):
    """More distinct labels than the class cap."""

    code = "too_many_classes"


class TooManyCategories(InvalidDataset):
    """A categorical column has more distinct values than the cardinality cap."""

    code = "too_many_categories"


class TooManyColumns(InvalidDataset):
    """More columns (or encoded features) than the cap."""

    code = "too_many_columns"


class TooManyRows(InvalidDataset):
    """More rows than the cap."""

    code = "too_many_rows"


class TooFewRows(InvalidDataset):
    """Too few rows for a training part and a holdout."""

    code = "too_few_rows"


class BadArchiveEntry(InvalidDataset):
    """A ZIP entry that is unsafe or unsupported (path escape, symlink, encrypted, ...)."""

    code = "bad_archive_entry"


class TooManyEntries(InvalidDataset):
    """The archive has more entries than allowed."""

    code = "too_many_entries"


class ArchiveBomb(InvalidDataset):
    """Decompression went past the size cap or the compression-ratio limit."""

    code = "decompression_bomb"
