"""The dataset service's use cases: the shell around the pure core."""

from .context import DatasetContext

__all__ = ["DatasetContext"]
