"""The SDK finds what ``peertrain login`` saved: the API and its tokens, renewed in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeapi import FakeApi
from typer.testing import CliRunner

from peertrain.client import (
    AsyncClient,
    Client,
    FileTokenStore,
    MemoryTokenStore,
    NotLoggedIn,
    Tokens,
    default_config_dir,
    resolve_api_url,
)
from peertrain.client.cli import CliState, app

API = "http://gateway.test:8443"


def cli_login(api: FakeApi, *extra: str) -> None:
    """``peertrain --api API login`` with the config folder the environment names."""
    args = ["--api", API, *extra, "login", "-u", "ada", "--password", "right-password"]
    result = CliRunner().invoke(app, args, obj=CliState(transport=api.transport))
    assert result.exit_code == 0, result.output


def test_client_uses_the_api_and_tokens_of_the_cli_login(api: FakeApi, config_folder: Path) -> None:
    cli_login(api)
    api.route("GET", "/api/jobs", {"items": [{"job_id": "j1"}]})
    with Client(transport=api.transport) as pt:
        assert pt.api_url == API
        assert pt.tokens is not None and pt.tokens.access_token == "access-2"
        api.expire()
        assert pt.list_jobs() == [{"job_id": "j1"}]
    assert [str(r.url) for r in api.requests[-3:]] == [
        f"{API}/api/jobs",
        f"{API}/api/auth/refresh",
        f"{API}/api/jobs",
    ]
    # the renewed pair is saved where the CLI reads it: the CLI's next call uses it
    saved = json.loads((config_folder / "credentials.json").read_text())[API]
    assert (saved["access_token"], saved["refresh_token"]) == ("access-3", "refresh-3")
    assert saved["username"] == "ada"
    result = CliRunner().invoke(app, ["job", "ls", "--json"], obj=CliState(transport=api.transport))
    assert result.exit_code == 0, result.output
    assert api.requests[-1].headers["Authorization"] == "Bearer access-3"


async def test_async_client_uses_the_cli_login_too(api: FakeApi) -> None:
    cli_login(api)
    api.route("GET", "/api/datasets", {"items": [{"id": "d1"}], "next_offset": None})
    api.expire()
    async with AsyncClient(transport=api.transport) as pt:
        assert pt.api_url == API
        assert await pt.list_datasets() == [{"id": "d1"}]
        assert pt.tokens is not None
    assert FileTokenStore().load() == Tokens("access-3", "refresh-3", pt.tokens.expires_at, "ada")


def test_a_file_store_of_the_default_config_dir_is_the_cli_login(api: FakeApi) -> None:
    cli_login(api)
    store = FileTokenStore(default_config_dir())
    assert store.api_url == API
    loaded = store.load()
    assert loaded is not None and loaded.refresh_token == "refresh-2"
    with Client(token_store=store, transport=api.transport) as pt:
        assert pt.api_url == API and pt.tokens == loaded


def test_a_config_dir_given_to_the_store_and_the_cli_alike(api: FakeApi, tmp_path: Path) -> None:
    cli_login(api, "--config-dir", str(tmp_path / "elsewhere"))
    assert Client(transport=api.transport).tokens is None  # not in the default folder
    pt = Client(token_store=FileTokenStore(tmp_path / "elsewhere"), transport=api.transport)
    assert pt.tokens is not None and pt.tokens.access_token == "access-2"


def test_an_unbound_store_keeps_the_tokens_of_the_clients_api(api: FakeApi, tmp_path: Path) -> None:
    cli_login(api)
    other = Client("http://other.test/", token_store=FileTokenStore(), transport=api.transport)
    assert other.api_url == "http://other.test" and other.tokens is None
    with pytest.raises(NotLoggedIn):
        other.list_jobs()
    assert Client(API, transport=api.transport).tokens is not None


def test_a_store_bound_to_another_api_is_refused(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path, api_url="http://a.test")
    with pytest.raises(ValueError, match=r"tokens of http://a\.test, not http://b\.test"):
        Client("http://b.test", token_store=store)
    assert Client("http://a.test/", token_store=store).api_url == "http://a.test"


def test_the_environment_names_the_api_before_the_saved_one(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_login(api)
    assert resolve_api_url() == API
    monkeypatch.setenv("PEERTRAIN_API", "http://env.test/")
    assert Client().api_url == "http://env.test"
    assert resolve_api_url("http://given.test") == "http://given.test"


def test_credentials_saved_before_the_api_was_remembered_still_name_it(
    config_folder: Path,
) -> None:
    FileTokenStore(api_url=API).save(Tokens("old", "r"))
    assert not (config_folder / "config.json").exists()
    assert Client().api_url == API
    FileTokenStore(api_url="http://second.test").save(Tokens("b"))
    assert Client().api_url == "http://127.0.0.1:8080"  # two APIs: none is the default


def test_given_tokens_stay_in_memory(config_folder: Path) -> None:
    pt = Client(API, tokens=Tokens("a", "r"))
    assert isinstance(pt.token_store, MemoryTokenStore)
    assert not config_folder.exists()


def test_a_url_where_the_config_folder_belongs_is_refused() -> None:
    with pytest.raises(ValueError, match="takes a config folder, not an API URL"):
        FileTokenStore("http://api.test")
