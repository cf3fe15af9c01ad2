"""The committed OpenAPI documents (``docs/openapi``) match the services' apps.

The web console's types are generated from them, so a stale document is a console that
no longer matches the API. Built from the apps themselves: no stack needed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "openapi"
HINT = "run: make openapi (python deploy/openapi.py, then the console's types)"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openapi_gen", ROOT / "deploy" / "openapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_openapi_is_current() -> None:
    wanted = _generator().documents()
    committed = {p.name: p.read_text() for p in sorted(DOCS.glob("*.json"))}
    assert sorted(committed) == sorted(wanted), HINT
    stale = [name for name, text in wanted.items() if committed[name] != text]
    assert not stale, f"{', '.join(stale)} differ: {HINT}"


def test_documents_do_not_depend_on_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEERTRAIN_ORCHESTRATOR_API_PREFIX", "/elsewhere")
    monkeypatch.setenv("PEERTRAIN_ORCHESTRATOR_ENVIRONMENT", "production")
    assert _generator().document("orchestrator") == (DOCS / "orchestrator.json").read_text()
