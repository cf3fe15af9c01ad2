"""Model specs: defined in :mod:`peertrain.common.specs.model` (torch-free), used here."""

from peertrain.common.specs.model import (
    MAX_ACTIVATIONS_PER_SAMPLE,
    MAX_PARAMETERS,
    CNNSpec,
    FeatureSpec,
    LogRegSpec,
    MLPSpec,
    ModelSpec,
    parse_feature_spec,
    parse_model_spec,
    spec_errors,
)

__all__ = [
    "MAX_ACTIVATIONS_PER_SAMPLE",
    "MAX_PARAMETERS",
    "CNNSpec",
    "FeatureSpec",
    "LogRegSpec",
    "MLPSpec",
    "ModelSpec",
    "parse_feature_spec",
    "parse_model_spec",
    "spec_errors",
]
