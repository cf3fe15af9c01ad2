"""Write ``docs/openapi/<service>.json``: each HTTP service's OpenAPI document, by FastAPI.

The apps are built as the services build them (``create_<service>_app``), from their
settings' defaults and not the environment, so the documents are the same on every
machine (the API prefixes are the gateway's paths: ``/api/jobs``, ...). Nothing connects:
a service connects to the stack at start-up, which this never reaches. Keys are sorted,
so a document changes only when the API does.

The web console's types are generated from these documents (``web/console/types.mjs``).
Run ``make openapi`` after changing a service's HTTP models (it runs this, then that);
``tests/static`` checks the committed documents are current, the console's build that
its types are.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI
from pydantic_settings import BaseSettings

from peertrain.aggregator.app import create_aggregator_app
from peertrain.aggregator.config import AggregatorSettings
from peertrain.auth.app import create_auth_app
from peertrain.auth.config import AuthSettings
from peertrain.dataset.app import create_dataset_app
from peertrain.dataset.config import DatasetSettings
from peertrain.orchestrator.app import create_orchestrator_app
from peertrain.orchestrator.config import OrchestratorSettings
from peertrain.registry.app import create_registry_app
from peertrain.registry.config import RegistrySettings

__all__ = ["OUT", "SERVICES", "document", "documents", "main"]

OUT = Path(__file__).resolve().parents[1] / "docs" / "openapi"

SERVICES: dict[str, tuple[Callable[..., FastAPI], type[BaseSettings]]] = {
    "auth": (create_auth_app, AuthSettings),
    "registry": (create_registry_app, RegistrySettings),
    "dataset": (create_dataset_app, DatasetSettings),
    "orchestrator": (create_orchestrator_app, OrchestratorSettings),
    "aggregator": (create_aggregator_app, AggregatorSettings),
}


def document(service: str) -> str:
    """One service's OpenAPI document, as indented JSON with sorted keys."""
    create, settings_cls = SERVICES[service]
    # model_construct: the defaults only (a PEERTRAIN_* variable must not change the file)
    app = create(settings_cls.model_construct())
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


def documents() -> dict[str, str]:
    """Every service's document, by file name (``auth.json``, ...)."""
    return {f"{service}.json": document(service) for service in SERVICES}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = documents()
    for stale in sorted(set(p.name for p in OUT.glob("*.json")) - set(wanted)):
        (OUT / stale).unlink()  # a service that no longer exists
    for name, text in wanted.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(wanted)} documents into {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
