"""One pagination convention: ``limit``/``offset`` in, ``{"items", "next_offset"}`` out."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from peertrain.common.app import Page, Paging, PagingDep, install_error_handlers
from peertrain.common.app.paging import MAX_LIMIT


def test_a_page_says_where_the_next_one_starts_and_the_last_says_none() -> None:
    every = list(range(7))
    pages, offset = [], 0
    while offset is not None:
        paging = Paging(limit=3, offset=offset)
        page = Page[int].of(paging.window(every), paging)
        pages.append(page.items)
        offset = page.next_offset
    assert pages == [[0, 1, 2], [3, 4, 5], [6]]
    exact = Paging(limit=7, offset=0)
    assert Page[int].of(exact.window(every), exact).next_offset is None
    beyond = Paging(limit=3, offset=50)
    assert Page[int].of(beyond.window(every), beyond).model_dump() == {
        "items": [],
        "next_offset": None,
    }


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/things")
    async def things(paging: PagingDep) -> Page[int]:
        return Page[int].of(paging.window(list(range(250))), paging)

    return TestClient(app)


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": MAX_LIMIT + 1}, {"offset": -1}])
def test_limits_out_of_bounds_are_refused_in_the_one_shape(
    client: TestClient, query: dict[str, int]
) -> None:
    r = client.get("/things", params=query)
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_failed"


def test_the_default_page_and_a_followed_offset(client: TestClient) -> None:
    first = client.get("/things").json()
    assert len(first["items"]) == 100 and first["next_offset"] == 100
    last = client.get("/things", params={"offset": 200, "limit": 100}).json()
    assert last == {"items": list(range(200, 250)), "next_offset": None}
