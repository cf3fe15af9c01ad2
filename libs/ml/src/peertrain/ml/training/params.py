"""The ``training`` block: defined in :mod:`peertrain.common.specs.training`."""

from peertrain.common.specs.training import TrainingParams, derive_seed, parse_training_params

__all__ = ["TrainingParams", "derive_seed", "parse_training_params"]
