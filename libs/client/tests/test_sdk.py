"""The SDK against a fake API: tokens, refresh on 401, errors, uploads, waits."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import httpx
import pytest
from fakeapi import FakeApi, error

import peertrain.client as sdk
from peertrain.client import (
    ApiError,
    ApiUnreachable,
    AsyncClient,
    ChecksumMismatch,
    Client,
    DatasetRejected,
    FileTokenStore,
    NotLoggedIn,
    RetryPolicy,
    Tokens,
)


def logged_in(api: FakeApi, **kw: object) -> Client:
    return Client(
        "http://api.test", tokens=Tokens("access-1", "refresh-1"), transport=api.transport, **kw
    )  # type: ignore[arg-type]


def test_public_surface() -> None:
    assert set(sdk.__all__) <= set(dir(sdk))


def test_login_keeps_the_pair(api: FakeApi) -> None:
    with Client("http://api.test", transport=api.transport) as pt:
        tokens = pt.login("ada", "right-password")
    assert tokens.access_token == "access-2" and tokens.refresh_token == "refresh-2"
    assert tokens.username == "ada" and not tokens.expiring()


def test_wrong_password_is_one_clear_error(api: FakeApi) -> None:
    with Client("http://api.test", transport=api.transport) as pt, pytest.raises(ApiError) as e:
        pt.login("ada", "nope")
    assert (e.value.status, e.value.code) == (401, "unauthorized")
    assert str(e.value) == "wrong username or password (401 unauthorized)"


def test_a_401_refreshes_once_and_repeats_the_call(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/api/jobs", {"items": [{"job_id": "j1"}]})
    store = FileTokenStore(tmp_path, api_url="http://api.test")
    pt = Client(
        "http://api.test",
        tokens=Tokens("access-1", "refresh-1"),
        token_store=store,
        transport=api.transport,
    )
    api.expire()
    assert pt.list_jobs() == [{"job_id": "j1"}]
    saved = store.load()
    assert saved is not None and saved.refresh_token == "refresh-2"  # saved back at once
    paths = [r.url.path for r in api.requests]
    assert paths == ["/api/jobs", "/api/auth/refresh", "/api/jobs"]


def test_a_list_follows_next_offset_to_the_last_page(api: FakeApi) -> None:
    def page(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params.get("offset", 0))
        following = offset + 2 if offset < 4 else None
        items = [{"seq": n} for n in range(offset, min(offset + 2, 5))]
        return httpx.Response(200, json={"items": items, "next_offset": following})

    api.route("GET", "/api/jobs/j/events", page)
    assert [e["seq"] for e in logged_in(api).job_events("j")] == [0, 1, 2, 3, 4]
    offsets = [r.url.params.get("offset") for r in api.requests]
    assert offsets == [None, "2", "4"]


def test_an_answer_that_is_not_a_page_is_a_bad_response(api: FakeApi) -> None:
    api.route("GET", "/api/datasets", [{"id": "d1"}])
    with pytest.raises(ApiError) as e:
        logged_in(api).list_datasets()
    assert e.value.code == "bad_response"


def test_a_second_401_is_raised(api: FakeApi) -> None:
    api.route("GET", "/api/jobs", lambda r: error(401, "unauthorized", "token revoked"))
    pt = logged_in(api)
    with pytest.raises(ApiError) as e:
        pt.list_jobs()
    assert e.value.status == 401 and "token revoked" in str(e.value)
    assert [r.url.path for r in api.requests].count("/api/auth/refresh") == 1


def test_a_spent_refresh_token_ends_the_session(api: FakeApi) -> None:
    api.route("GET", "/api/jobs", {"items": []})
    api.expire()
    api.valid_refresh.clear()
    pt = logged_in(api)
    with pytest.raises(ApiError, match="session has expired"):
        pt.list_jobs()
    assert pt.tokens is None


def test_no_tokens_means_not_logged_in(api: FakeApi) -> None:
    with pytest.raises(NotLoggedIn, match="not logged in"):
        Client("http://api.test", transport=api.transport).list_jobs()


NO_WAIT = RetryPolicy(base_s=0.0, cap_s=0.0)
"""The default tries, without the waits between them."""


def test_unreachable_names_the_url() -> None:
    pt = Client("http://127.0.0.1:9", tokens=Tokens("a"), retry=NO_WAIT)
    with pytest.raises(ApiUnreachable) as e:
        pt.list_jobs()
    assert str(e.value).startswith("cannot reach the PeerTrain API at http://127.0.0.1:9: ")


def test_gateway_errors_name_the_service(api: FakeApi) -> None:
    api.route(
        "GET", "/api/jobs/j9", lambda r: error(502, "bad_gateway", "the service is not reachable")
    )
    with pytest.raises(ApiError) as e:
        logged_in(api, retry=NO_WAIT).get_job("j9")
    assert str(e.value) == (
        "the service is not reachable: the orchestrator (502 bad_gateway: GET /api/jobs/j9)"
    )


def test_non_json_errors_still_make_one_line(api: FakeApi) -> None:
    api.route("GET", "/api/jobs", lambda r: httpx.Response(500, text="<html>oops</html>"))
    with pytest.raises(ApiError) as e:
        logged_in(api).list_jobs()
    assert str(e.value) == "Internal Server Error (500 http_500)"


def test_post_redirect_keeps_method_and_body(api: FakeApi) -> None:
    """The gateway answers /api/jobs with a 301 to /api/jobs/."""
    api.route(
        "POST", "/api/jobs", lambda r: httpx.Response(301, headers={"Location": "/api/jobs/"})
    )
    api.route(
        "POST",
        "/api/jobs/",
        lambda r: httpx.Response(201, json={"job_id": json.loads(r.content)["name"]}),
    )
    assert logged_in(api).create_job({"name": "j-from-body"}) == "j-from-body"


def test_upload_streams_with_progress(api: FakeApi, tmp_path: Path) -> None:
    data = b"a,b,label\n" + b"1,2,x\n" * 40_000
    path = tmp_path / "d.csv"
    path.write_bytes(data)
    seen: dict[str, object] = {}

    def accept(request: httpx.Request) -> httpx.Response:
        body = request.read()
        seen["body_has_file"] = data in body
        seen["label"] = b'name="label_column"\r\n\r\nlabel' in body
        return httpx.Response(202, json={"dataset_id": "ds1", "status": "validating"})

    api.route("POST", "/api/datasets", accept)
    api.expire()  # the upload is sent again after the refresh, from the start
    reports: list[tuple[int, int]] = []
    pt = logged_in(api)
    assert (
        pt.upload_dataset(path, label_column="label", progress=lambda s, t: reports.append((s, t)))
        == "ds1"
    )
    assert seen == {"body_has_file": True, "label": True}
    assert reports[-1] == (len(data), len(data)) and len(reports) > 3


def test_upload_sends_missing_values_as_a_comma_separated_list(
    api: FakeApi, tmp_path: Path
) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes(b"a,label\n1,x\n")
    bodies: list[bytes] = []

    def accept(request: httpx.Request) -> httpx.Response:
        bodies.append(request.read())
        return httpx.Response(202, json={"dataset_id": "ds1", "status": "validating"})

    api.route("POST", "/api/datasets", accept)
    pt = logged_in(api)
    pt.upload_dataset(path, missing_values=["unknown", "n/a"])
    pt.upload_dataset(path)
    assert b'name="missing_values"\r\n\r\nunknown,n/a\r\n' in bodies[0]
    assert b'name="missing_values"' not in bodies[1]


def test_wait_for_dataset(api: FakeApi) -> None:
    answers = iter(
        [{"id": "d", "status": "validating"}, {"id": "d", "status": "validated", "rows": 3}]
    )
    api.route("GET", "/api/datasets/d", lambda r: httpx.Response(200, json=next(answers)))
    assert logged_in(api).wait_for_dataset("d", interval=0)["rows"] == 3
    api.route(
        "GET",
        "/api/datasets/d",
        {"id": "d", "status": "rejected", "error": {"code": "x", "message": "no label column"}},
    )
    with pytest.raises(DatasetRejected, match="no label column"):
        logged_in(api).wait_for_dataset("d", interval=0)


def test_watch_job_ends_at_a_final_state(api: FakeApi) -> None:
    states = iter(["running", "running", "completed"])
    api.route(
        "GET",
        "/api/jobs/j",
        lambda r: httpx.Response(200, json={"job_id": "j", "state": next(states)}),
    )
    api.route("GET", "/api/jobs/j/metrics", lambda r: error(404, "not_found", "no metrics yet"))
    seen = [p.state for p in logged_in(api).watch_job("j", interval=0)]
    assert seen == ["running", "running", "completed"]


def test_download_writes_the_file_or_nothing(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/api/models/j/final", b"\x80weights" * 1000)
    dest = logged_in(api).download_model("j", tmp_path / "m.pt")
    assert dest.read_bytes() == b"\x80weights" * 1000
    assert api.requests[-1].url.params["format"] == "pt"
    api.route("GET", "/api/models/k/final", lambda r: error(409, "conflict", "no final model yet"))
    with pytest.raises(ApiError, match="no final model yet"):
        logged_in(api).download_model("k", tmp_path / "k.pt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]


def _file(data: bytes, sha256: str | None = None) -> httpx.Response:
    """A download as the aggregator answers it: the bytes and their sha256."""
    sha = sha256 or hashlib.sha256(data).hexdigest()
    return httpx.Response(200, content=data, headers={"X-Content-SHA256": sha})


def test_download_a_version_or_the_best_one_checked_against_the_announced_sha256(
    api: FakeApi, tmp_path: Path
) -> None:
    api.route("GET", "/api/models/j/versions/3", lambda r: _file(b"v3" * 500))
    api.route("GET", "/api/models/j/versions/best", lambda r: _file(b"best"))
    pt = logged_in(api)
    assert pt.download_model("j", tmp_path / "v3.pt", version=3).read_bytes() == b"v3" * 500
    assert api.requests[-1].url.params["format"] == "pt"
    best = pt.download_model("j", tmp_path / "b.st", version="best", fmt="safetensors")
    assert best.read_bytes() == b"best"
    assert api.requests[-1].url.params["format"] == "safetensors"


def test_a_download_not_matching_its_sha256_is_deleted_and_raises(
    api: FakeApi, tmp_path: Path
) -> None:
    dest = tmp_path / "v1.pt"
    dest.write_bytes(b"an older file")
    api.route("GET", "/api/models/j/versions/1", lambda r: _file(b"corrupt", "ab" * 32))
    with pytest.raises(ChecksumMismatch, match="is corrupt") as caught:
        logged_in(api).download_model("j", dest, version=1)
    assert caught.value.expected == "ab" * 32
    assert caught.value.actual == hashlib.sha256(b"corrupt").hexdigest()
    assert caught.value.code == "checksum_mismatch"
    assert [p.name for p in tmp_path.iterdir()] == ["v1.pt"]  # no partial file left
    assert dest.read_bytes() == b"an older file"


def test_unknown_versions_raise_the_apis_error(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/api/models/j/versions/9", lambda r: error(404, "version_not_found", "no v9"))
    with pytest.raises(ApiError, match="no v9") as caught:
        logged_in(api).download_model("j", tmp_path / "v9.pt", version=9)
    assert caught.value.code == "version_not_found" and not list(tmp_path.iterdir())


async def test_async_download_checks_the_sha256_too(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/api/models/j/versions/best", lambda r: _file(b"ok"))
    api.route("GET", "/api/models/j/versions/2", lambda r: _file(b"bad", "00" * 32))
    async with AsyncClient(
        "http://api.test", tokens=Tokens("access-1", "refresh-1"), transport=api.transport
    ) as pt:
        done = await pt.download_model("j", tmp_path / "best.pt", version="best")
        assert done.read_bytes() == b"ok"
        with pytest.raises(ChecksumMismatch):
            await pt.download_model("j", tmp_path / "v2.pt", version=2)
    assert [p.name for p in tmp_path.iterdir()] == ["best.pt"]


def test_token_file_is_private(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "cfg", api_url="http://api.test/")
    store.save(Tokens("a", "r", 0.0, "ada"))
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert FileTokenStore(tmp_path / "cfg", api_url="http://api.test").load() == Tokens(
        "a", "r", 0.0, "ada"
    )
    store.save(None)
    assert store.load() is None


async def test_async_client_refreshes_too(api: FakeApi) -> None:
    api.route("GET", "/api/datasets", {"items": [{"id": "d1"}], "next_offset": None})
    api.expire()
    async with AsyncClient(
        "http://api.test", tokens=Tokens("access-1", "refresh-1"), transport=api.transport
    ) as pt:
        assert await pt.list_datasets() == [{"id": "d1"}]
        assert pt.tokens is not None and pt.tokens.access_token == "access-2"
        api.route("GET", "/api/jobs/j", {"job_id": "j", "state": "failed", "error": "boom"})
        api.route("GET", "/api/jobs/j/metrics", {"rounds": [], "peers": []})
        seen = [p async for p in pt.watch_job("j", interval=0)]
    assert [p.state for p in seen] == ["failed"] and seen[0].done
