"""Raw rows to model input, and the holdout rule: numpy only (no pydantic, no service).

The one encoder of PeerTrain's data: the dataset service encodes uploads with it, and
:mod:`peertrain.ml.export` encodes raw rows for a downloaded model with it, so a model
sees at prediction time exactly what it saw in training; :mod:`.images` holds the
rules both apply to an image dataset's files. Specs are taken in their JSON
form (``FeatureSpec.model_dump(mode="json")``), so a process that has only numpy (and
torch, for the model) can use this package: it imports nothing else from PeerTrain.
"""

from .encode import (
    UNSEEN,
    column_values,
    encode_column,
    encode_pixels,
    encode_table,
    to_pixels,
)
from .holdout import NoHoldout, holdout_counts, stratified_holdout
from .images import (
    IMAGE_FORMATS,
    IMAGE_SUFFIXES,
    MAX_IMAGE_BYTES,
    MAX_IMAGE_PIXELS,
    NotClassFolders,
    UnreadableImage,
    class_folders,
    is_image_name,
    is_junk,
    open_image,
)
from .missing import (
    DEFAULT_MISSING_TOKENS,
    LEGACY_MISSING_TOKENS,
    NUMBER_PATTERN,
    NUMERIC_SHARE,
    MissingMatch,
    fold_tokens,
    is_missing,
    is_number,
    missing_rule,
    parse_missing_values,
)

__all__ = [
    "DEFAULT_MISSING_TOKENS",
    "IMAGE_FORMATS",
    "IMAGE_SUFFIXES",
    "LEGACY_MISSING_TOKENS",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_PIXELS",
    "NUMBER_PATTERN",
    "NUMERIC_SHARE",
    "UNSEEN",
    "MissingMatch",
    "NoHoldout",
    "NotClassFolders",
    "UnreadableImage",
    "class_folders",
    "column_values",
    "encode_column",
    "encode_pixels",
    "encode_table",
    "fold_tokens",
    "holdout_counts",
    "is_image_name",
    "is_junk",
    "is_missing",
    "is_number",
    "missing_rule",
    "open_image",
    "parse_missing_values",
    "stratified_holdout",
    "to_pixels",
]
