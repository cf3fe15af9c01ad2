"""Feature specs for tests: the smallest valid dataset description of a given shape."""

from __future__ import annotations

from peertrain.common.events.datasets import ColumnEncoding, FeatureSpec

__all__ = ["table_features"]


def table_features(width: int, num_classes: int) -> FeatureSpec:
    """A table of ``width`` numeric features (``x0``...) and ``num_classes`` classes
    (``c0``...), labelled by column ``y``: what a task names for an MLP of that shape."""
    return FeatureSpec(
        kind="table",
        input_shape=(width,),
        input_size=width,
        classes=tuple(f"c{i}" for i in range(num_classes)),
        columns=tuple(
            ColumnEncoding(name=f"x{i}", type="numeric", offset=i, width=1) for i in range(width)
        ),
        label_column="y",
    )
