"""The built-in model zoo: models described by JSON, never code from the network.

The specs (``ModelSpec``, ``DataShape``, budgets) are :mod:`peertrain.common.specs`.
"""

from .build import build_model
from .models import MLP, LogisticRegression, SmallCNN

__all__ = ["MLP", "LogisticRegression", "SmallCNN", "build_model"]
