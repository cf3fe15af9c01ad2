"""Parameter counts and budgets: defined in :mod:`peertrain.common.specs.shapes`."""

from peertrain.common.specs.shapes import check_budget, cnn_block_shapes, count_parameters

__all__ = ["check_budget", "cnn_block_shapes", "count_parameters"]
