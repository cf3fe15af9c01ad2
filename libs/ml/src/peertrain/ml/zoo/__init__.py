"""The built-in model zoo: models described by JSON, never code from the network."""

from .build import build_model
from .models import MLP, LogisticRegression, SmallCNN
from .shapes import check_budget, count_parameters
from .specs import (
    MAX_PARAMETERS,
    CNNSpec,
    FeatureSpec,
    LogRegSpec,
    MLPSpec,
    ModelSpec,
    parse_feature_spec,
    parse_model_spec,
)

__all__ = [
    "MAX_PARAMETERS",
    "MLP",
    "CNNSpec",
    "FeatureSpec",
    "LogRegSpec",
    "LogisticRegression",
    "MLPSpec",
    "ModelSpec",
    "SmallCNN",
    "build_model",
    "check_budget",
    "count_parameters",
    "parse_feature_spec",
    "parse_model_spec",
]
