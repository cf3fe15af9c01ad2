"""``python -m peertrain.dataset``: run the dataset service with uvicorn."""

from __future__ import annotations

from peertrain.common.app.serve import serve

from .app import create_dataset_app
from .config import DatasetSettings
from .memory import tune_memory

__all__ = ["main"]


def main() -> None:
    """Serve on ``PEERTRAIN_DATASET_HOST``:``PEERTRAIN_DATASET_PORT``."""
    tune_memory()
    serve(DatasetSettings(), create_dataset_app)


if __name__ == "__main__":
    main()
