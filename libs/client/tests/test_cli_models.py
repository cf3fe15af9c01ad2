"""``peertrain model download --version N|best`` against a fake API."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest
from fakeapi import FakeApi, error
from typer.testing import CliRunner

from peertrain.client import FileTokenStore, Tokens
from peertrain.client.cli import CliState, app
from peertrain.client.cli.models import default_path

API = "http://api.test"


def run(api: FakeApi, cfg: Path, *args: str):  # type: ignore[no-untyped-def]
    FileTokenStore(cfg, api_url=API).save(Tokens("access-1", "refresh-1"))
    api.known("/api/jobs", "j")  # the job the short id "j" resolves to
    state = CliState(transport=api.transport, poll_interval=0)
    env = {"COLUMNS": "200", "PEERTRAIN_API": API, "PEERTRAIN_CONFIG_DIR": str(cfg)}
    return CliRunner().invoke(app, list(args), obj=state, env=env)


def _file(data: bytes, sha256: str | None = None) -> httpx.Response:
    sha = sha256 or hashlib.sha256(data).hexdigest()
    return httpx.Response(200, content=data, headers={"X-Content-SHA256": sha})


@pytest.mark.parametrize(
    ("version", "fmt", "name"),
    [(None, "pt", "j.pt"), (3, "pt", "j-v3.pt"), ("best", "safetensors", "j-best.safetensors")],
)
def test_default_paths_name_the_version(version: int | str | None, fmt: str, name: str) -> None:
    assert default_path("j", version, fmt) == Path(name)


def test_download_a_version_and_the_best(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    api.route("GET", "/api/models/j/versions/16", lambda r: _file(b"v16"))
    api.route("GET", "/api/models/j/versions/best", lambda r: _file(b"best"))
    result = run(api, tmp_path / "cfg", "model", "download", "j", "--version", "16")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "j-v16.pt").read_bytes() == b"v16"
    args = ("model", "download", "j", "--version", "best", "--format", "safetensors", "--json")
    result = run(api, tmp_path / "cfg", *args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["version"] == "best"
    assert (tmp_path / "j-best.safetensors").read_bytes() == b"best"
    assert api.requests[-1].url.params["format"] == "safetensors"


def test_a_bad_version_is_a_usage_error(api: FakeApi, tmp_path: Path) -> None:
    result = run(api, tmp_path / "cfg", "model", "download", "j", "--version", "last")
    assert result.exit_code == 2 and not api.requests


def test_errors_are_one_line_and_leave_no_file(
    api: FakeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    api.route("GET", "/api/models/j/versions/2", lambda r: _file(b"bad", "00" * 32))
    api.route(
        "GET",
        "/api/models/j/versions/best",
        lambda r: error(409, "no_evaluated_version", "no model version is evaluated yet"),
    )
    result = run(api, tmp_path / "cfg", "model", "download", "j", "--version", "2")
    assert result.exit_code == 1 and "is corrupt" in result.output
    result = run(api, tmp_path / "cfg", "model", "download", "j", "--version", "best")
    assert result.exit_code == 1 and "no model version is evaluated yet" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg"]
