"""The ``peertrain`` command against a fake API (``CliState.transport``)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fakeapi import FakeApi, error
from typer.testing import CliRunner

from peertrain.client import FileTokenStore, RetryPolicy, Tokens, base
from peertrain.client.cli import CliState, app
from peertrain.client.cli.watchview import fmt_duration, sparkline

API = "http://api.test"
FULL = "0192f3a4-5b6c-7d8e-9fab-0123456789ab"


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    return tmp_path / "cfg"


def run(api: FakeApi, cfg: Path, *args: str, login: bool = True):  # type: ignore[no-untyped-def]
    if login and FileTokenStore(cfg, api_url=API).load() is None:
        FileTokenStore(cfg, api_url=API).save(Tokens("access-1", "refresh-1"))
    state = CliState(transport=api.transport, poll_interval=0)
    env = {"COLUMNS": "200", "PEERTRAIN_API": API, "PEERTRAIN_CONFIG_DIR": str(cfg)}
    return CliRunner().invoke(app, list(args), obj=state, env=env)


def test_login_saves_private_tokens_and_refresh_saves_back(api: FakeApi, cfg: Path) -> None:
    result = run(api, cfg, "login", "-u", "ada", "--password", "right-password", login=False)
    assert result.exit_code == 0, result.output
    path = cfg / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())[API]["refresh_token"] == "refresh-2"
    api.route("GET", "/api/jobs", {"items": []})
    api.expire()
    assert run(api, cfg, "job", "ls", "--json").exit_code == 0
    assert json.loads(path.read_text())[API]["refresh_token"] == "refresh-3"


def test_wrong_password_one_line_exit_1(api: FakeApi, cfg: Path) -> None:
    result = run(api, cfg, "login", "-u", "ada", "--password", "nope", login=False)
    assert result.exit_code == 1
    assert result.stderr == "peertrain: error: wrong username or password (401 unauthorized)\n"
    assert "Traceback" not in result.output


def test_server_down_one_line(cfg: Path, api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    # the default tries, without the waits between them
    monkeypatch.setattr(base, "DEFAULT_RETRY", RetryPolicy(base_s=0.0, cap_s=0.0))
    FileTokenStore(cfg, api_url="http://127.0.0.1:9").save(Tokens("a"))
    result = CliRunner().invoke(
        app, ["--api", "http://127.0.0.1:9", "--config-dir", str(cfg), "job", "ls"]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "peertrain: error: cannot reach the PeerTrain API at http://127.0.0.1:9: "
    )
    assert result.stderr.count("\n") == 1


def test_not_logged_in(api: FakeApi, cfg: Path) -> None:
    result = run(api, cfg, "dataset", "ls", login=False)
    assert result.exit_code == 1 and "not logged in" in result.stderr


def test_usage_errors_exit_2(api: FakeApi, cfg: Path) -> None:
    assert run(api, cfg, "job", "create", "--dataset", "d").exit_code == 2
    assert run(api, cfg, "job", "show").exit_code == 2
    assert run(api, cfg, "model", "download", "j", "--format", "onnx").exit_code == 2


def test_unexpected_errors_hide_the_traceback_unless_debug(api: FakeApi, cfg: Path) -> None:
    api.route("GET", "/api/jobs", lambda r: httpx.Response(200, json=["not", "a", "mapping"]))
    api.route("GET", f"/api/jobs/{FULL}", lambda r: 1 / 0)
    result = run(api, cfg, "job", "show", FULL)  # a full id: used as it is, not listed
    assert result.exit_code == 1 and "unexpected error: ZeroDivisionError" in result.stderr
    assert "Traceback" not in result.output
    debug = run(api, cfg, "--debug", "job", "show", FULL)
    assert isinstance(debug.exception, ZeroDivisionError)


def test_json_output_is_plain_json(api: FakeApi, cfg: Path) -> None:
    peers = [
        {
            "peer_id": "p1",
            "name": "box",
            "status": "active",
            "specs": {"device": "cpu", "ram_gb": 8},
        }
    ]
    api.route("GET", "/api/registry/peers", {"items": peers, "next_offset": None})
    result = run(api, cfg, "peers", "ls", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == peers
    table = run(api, cfg, "peers", "ls")
    assert "p1" in table.stdout and "active" in table.stdout and "8.0" in table.stdout


def test_job_create_from_config_and_flags(api: FakeApi, cfg: Path, tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "name: iris\ndataset_id: d1\nmodel: {arch: mlp}\n"
        "training: {rounds: 5}\nselection: {count: 2}\n"
    )
    api.route(
        "POST",
        "/api/jobs",
        lambda r: httpx.Response(201, json={"job_id": "j1", "echo": json.loads(r.content)}),
    )
    result = run(
        api, cfg, "job", "create", "--config", str(config), "--rounds", "7", "--lr", "0.05"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "j1\n"
    sent = json.loads(api.requests[-1].content)
    assert sent["training"] == {"rounds": 7, "lr": 0.05} and sent["selection"] == {"count": 2}


def test_unknown_job_says_so(api: FakeApi, cfg: Path) -> None:
    api.route("GET", "/api/jobs/nope", lambda r: error(404, "not_found", "no such job"))
    result = run(api, cfg, "job", "show", "nope")
    assert (result.exit_code, result.stderr) == (
        1,
        "peertrain: error: no such job (404 not_found)\n",
    )


def _watch(api: FakeApi, final: dict[str, object]) -> None:
    jobs = iter(
        [
            {"job_id": "j", "name": "iris", "state": "running", "rounds": 3, "current_round": 1},
            {"job_id": "j", "name": "iris", "rounds": 3, "current_round": 2, **final},
        ]
    )
    rounds = [
        {"round": 1, "loss": 0.9, "accuracy": 0.5, "duration_s": 10.0, "peers": ["a", "b"]},
        {"round": 2, "loss": 0.5, "accuracy": 0.75, "duration_s": 12.0, "peers": ["a", "b"]},
    ]
    api.route("GET", "/api/jobs/j", lambda r: httpx.Response(200, json=next(jobs)))
    api.route("GET", "/api/jobs/j/metrics", {"rounds": rounds, "peers": []})


def test_watch_completed(api: FakeApi, cfg: Path) -> None:
    _watch(api, {"state": "completed"})
    result = run(api, cfg, "job", "watch", "j")
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in (
        "ROUND",
        "ACCURACY",
        "ETA",
        "2/3",
        "0.7500",
        "0.5000",
        "12s",
        "completed",
        "accuracy ",
    ):
        assert text in out, (text, out)


def test_watch_failed_exits_1_with_the_reason(api: FakeApi, cfg: Path) -> None:
    _watch(
        api,
        {
            "state": "failed",
            "tasks": [
                {"task_id": "t", "round": 2, "peer_id": "b", "error": "CUDA out of memory\nmore"}
            ],
        },
    )
    result = run(api, cfg, "job", "watch", "j")
    assert result.exit_code == 1
    assert "job j failed: CUDA out of memory (round 2 on peer b)" in result.stderr


def test_watch_cancelled_exits_3(api: FakeApi, cfg: Path) -> None:
    _watch(api, {"state": "cancelled"})
    assert run(api, cfg, "job", "watch", "j").exit_code == 3


def test_sparkline() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([None, 0.3]) == " ▅" and sparkline([]) == ""


def test_durations_under_ten_seconds_keep_a_decimal() -> None:
    assert [fmt_duration(s) for s in (0.37, 9.2, 12.4, 185, 3720, None)] == [
        "0.4s",
        "9.2s",
        "12s",
        "3m05s",
        "1h02m",
        "-",
    ]


def test_model_download(api: FakeApi, cfg: Path, tmp_path: Path) -> None:
    api.route("GET", "/api/models/j/final", b"safetensors-bytes")
    api.known("/api/jobs", "j")
    out = tmp_path / "m.safetensors"
    result = run(api, cfg, "model", "download", "j", "-o", str(out), "--format", "safetensors")
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == b"safetensors-bytes"
    assert api.requests[-1].url.params["format"] == "safetensors"


def test_dataset_upload_wait_rejected(api: FakeApi, cfg: Path, tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1,2\n")
    api.route("POST", "/api/datasets", {"dataset_id": "d9"}, status=202)
    api.route(
        "GET",
        "/api/datasets/d9",
        {"id": "d9", "status": "rejected", "error": {"code": "bad", "message": "only one class"}},
    )
    result = run(api, cfg, "dataset", "upload", str(path), "--wait")
    assert result.exit_code == 1
    assert result.stderr.endswith("peertrain: error: dataset d9 was rejected: only one class\n")


def test_dataset_upload_sends_missing_values_and_shows_the_notes(
    api: FakeApi, cfg: Path, tmp_path: Path
) -> None:
    path = tmp_path / "d.csv"
    path.write_text("t,y\n1,a\nunknown,b\n")
    note = "column 't' is kept numeric: 390 of its 400 present cells are numbers"
    dataset = {
        "id": "d7",
        "status": "validated",
        "rows": 400,
        "classes": ["a", "b"],
        "notes": [note],
        "schema": [
            {"name": "t", "type": "numeric", "missing": 12, "reason": "numeric: 97.5% ..."},
            {"name": "y", "type": "label", "missing": 0, "reason": "label: 2 classes"},
        ],
    }
    api.route("POST", "/api/datasets", {"dataset_id": "d7"}, status=202)
    api.route("GET", "/api/datasets/d7", dataset)
    args = ("dataset", "upload", str(path), "--missing-values", "unknown, n/a", "--wait")
    result = run(api, cfg, *args)
    assert result.exit_code == 0, result.output
    upload = next(r for r in api.requests if r.method == "POST")
    assert b'name="missing_values"\r\n\r\nunknown, n/a\r\n' in upload.content
    assert f"note: {note}" in result.stderr
    shown = run(api, cfg, "dataset", "show", "d7")
    assert shown.exit_code == 0, shown.output
    assert f"note: {note}" in shown.stdout
    assert "WHY" in shown.stdout and "numeric: 97.5% ..." in shown.stdout


def test_runs_as_a_module_without_its_script() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "peertrain.client.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "peertrain" in done.stdout.lower() and "dataset" in done.stdout
