"""``python -m peertrain.aggregator``: run the aggregator with uvicorn."""

from __future__ import annotations

from peertrain.common.app.serve import serve
from peertrain.common.memory import return_freed_memory_to_os

from .app import create_aggregator_app
from .config import AggregatorSettings

__all__ = ["main"]


def main() -> None:
    """Serve on ``PEERTRAIN_AGGREGATOR_HOST``:``PEERTRAIN_AGGREGATOR_PORT``."""
    return_freed_memory_to_os()
    serve(AggregatorSettings(), create_aggregator_app)


if __name__ == "__main__":
    main()
