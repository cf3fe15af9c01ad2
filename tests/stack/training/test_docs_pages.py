"""Each service's API docs pages through the gateway, offline: Swagger UI and ReDoc load
their scripts and styles from the service, by paths the gateway routes to it."""

from __future__ import annotations

import re

import httpx
import pytest
from training_support import Platform

from peertrain.testkit.common import GATEWAY

pytestmark = [pytest.mark.stack]

PREFIXES = ["/api/auth", "/api/registry", "/api/jobs", "/api/models", "/api/datasets"]
_LOADED = re.compile(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""")


@pytest.mark.parametrize("prefix", PREFIXES)
def test_docs_pages_and_their_assets_come_through_the_gateway(
    platform: Platform, prefix: str
) -> None:
    with httpx.Client(base_url=GATEWAY, timeout=30) as http:
        for page in ("docs", "redoc"):
            answer = http.get(f"{prefix}/{page}")
            assert answer.status_code == 200, (page, answer.text)
            assert "https://" not in answer.text and "http://" not in answer.text
            loaded = _LOADED.findall(answer.text)
            assert f"{prefix}/openapi.json" in loaded
            for url in loaded:
                served = http.get(url)
                assert served.status_code == 200, url
