"""The committed AsyncAPI document matches the event catalogue."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("asyncapi_gen", ROOT / "deploy" / "asyncapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_asyncapi_is_current() -> None:
    committed = (ROOT / "docs" / "asyncapi.json").read_text()
    assert _generator().document() == committed, "run: python deploy/asyncapi.py"


def test_every_event_type_has_a_channel() -> None:
    from peertrain.common.events import catalogue

    channels = json.loads((ROOT / "docs" / "asyncapi.json").read_text())["channels"]
    assert {f"event {t}" for t in catalogue()} <= set(channels)
