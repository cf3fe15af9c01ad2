"""The ``peertrain`` CLI against the real stack, through the gateway: its error paths.

A wrong password (the real auth service), a job the orchestrator does not know (or an
orchestrator that is not running: then the gateway answers 502), and a server that is
down. Each must be one line on stderr and exit status 1, without a traceback.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from peertrain.client.cli import app
from peertrain.testkit.auth import AuthUnderTest, free_port, shared_auth_service
from peertrain.testkit.common import GATEWAY

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def auth(run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthUnderTest]:
    with shared_auth_service(run_id=run_id, base_dir=tmp_path_factory.getbasetemp()) as svc:
        yield svc


def cli(config_dir: Path, *args: str, api: str = GATEWAY):  # type: ignore[no-untyped-def]
    env = {"PEERTRAIN_CONFIG_DIR": str(config_dir), "COLUMNS": "200"}
    return CliRunner().invoke(app, ["--api", api, *args], env=env)


def one_error_line(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("peertrain: error: ")
    return str(lines[0])


@pytest.fixture(scope="module")
def user(auth: AuthUnderTest) -> tuple[str, str]:
    name, password = f"c{uuid.uuid4().hex[:12]}", f"pass {uuid.uuid4().hex}"
    return name, password


def test_register_login_logout(user: tuple[str, str], tmp_path: Path) -> None:
    name, password = user
    assert cli(tmp_path, "register", "-u", name, "--password", password).exit_code == 0
    login = cli(tmp_path, "login", "-u", name, "--password", password)
    assert login.exit_code == 0, login.output
    assert (tmp_path / "credentials.json").stat().st_mode & 0o777 == 0o600
    me = cli(tmp_path, "whoami", "--json")
    assert me.exit_code == 0 and name in me.stdout
    assert cli(tmp_path, "logout").exit_code == 0
    assert "not logged in" in one_error_line(cli(tmp_path, "whoami"))


def test_wrong_password(user: tuple[str, str], tmp_path: Path) -> None:
    name, _ = user
    line = one_error_line(cli(tmp_path, "login", "-u", name, "--password", "not the password"))
    assert line == "peertrain: error: invalid username or password (401 invalid_credentials)"


def test_unknown_job(user: tuple[str, str], tmp_path: Path) -> None:
    name, password = user
    assert cli(tmp_path, "login", "-u", name, "--password", password).exit_code == 0
    line = one_error_line(cli(tmp_path, "job", "show", str(uuid.uuid4())))  # a whole id
    running = httpx.get(f"{GATEWAY}/api/jobs/x", timeout=5).status_code != 502
    if running:  # the orchestrator answers for itself
        assert "(404 " in line
    else:
        assert "the orchestrator" in line and "(502 bad_gateway: GET /api/jobs/" in line


def test_server_down(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    # no credentials for that API: what matters is that nothing answers there
    line = one_error_line(cli(tmp_path, "job", "ls", api=closed))
    assert line.startswith(f"peertrain: error: cannot reach the PeerTrain API at {closed}: ")
    line = one_error_line(cli(tmp_path, "login", "-u", "ada", "--password", "x", api=closed))
    assert line.startswith(f"peertrain: error: cannot reach the PeerTrain API at {closed}: ")
