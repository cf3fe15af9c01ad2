"""Each service's API docs pages load their assets from the service itself, never a CDN."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from peertrain.common.app.factory import create_app
from peertrain.common.settings import ServiceSettings

PREFIX = "/api/toys"
# what a page loads: scripts, style sheets, icons (<script src>, <link href>, JS config)
_LOADED = re.compile(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""")


class ToySettings(ServiceSettings):
    service_name: str = "toys"
    api_prefix: str = PREFIX


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(ToySettings()))  # no lifespan: nothing is connected


@pytest.mark.parametrize("page", ["docs", "redoc"])
def test_docs_pages_load_only_what_the_service_serves(client: TestClient, page: str) -> None:
    answer = client.get(f"{PREFIX}/{page}")
    assert answer.status_code == 200
    html = answer.text
    assert "http://" not in html and "https://" not in html
    loaded = _LOADED.findall(html)
    assert f"{PREFIX}/openapi.json" in loaded
    assets = [url for url in loaded if url != f"{PREFIX}/openapi.json"]
    assert assets and all(url.startswith(f"{PREFIX}/docs/") for url in assets), assets
    for url in assets:
        served = client.get(url)
        assert served.status_code == 200, url
        assert len(served.content) > 1000, url


def test_the_assets_are_swagger_ui_and_redoc(client: TestClient) -> None:
    js = client.get(f"{PREFIX}/docs/assets/swagger-ui-bundle.js")
    assert "javascript" in js.headers["content-type"] and "SwaggerUIBundle" in js.text
    assert (
        client.get(f"{PREFIX}/docs/assets/swagger-ui.css")
        .headers["content-type"]
        .startswith("text/css")
    )
    assert "Redoc" in client.get(f"{PREFIX}/docs/assets/redoc.standalone.js").text
    assert client.get(f"{PREFIX}/docs/assets/nothing.js").status_code == 404


def test_the_oauth2_redirect_page_is_under_the_prefix_and_the_document_lists_no_page(
    client: TestClient,
) -> None:
    assert client.get(f"{PREFIX}/docs/oauth2-redirect").status_code == 200
    paths = client.get(f"{PREFIX}/openapi.json").json()["paths"]
    assert not [p for p in paths if "docs" in p or "redoc" in p]
