"""Every API error is one line that says what its ``detail`` says: which field, which
peer, why. The bodies are the services' own (``peertrain.common.app.errors``)."""

from __future__ import annotations

from pathlib import Path

import httpx
from fakeapi import FakeApi
from test_cli import API, run
from typer.testing import CliRunner

from peertrain.client import ApiError, FileTokenStore
from peertrain.client.cli import app
from peertrain.client.detail import MAX_ITEMS, describe_detail


def answer(status: int, code: str, message: str, detail: object) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "detail": detail}}
    return httpx.Response(status, json=body, request=httpx.Request("POST", f"{API}/api/jobs"))


def test_a_requests_validation_names_every_field() -> None:
    detail = [
        {"loc": ["body", "training", "lrr"], "msg": "Extra inputs are not permitted"},
        {"loc": ["body", "model", "hidden", 0], "msg": "Input should be greater than 0"},
        {"loc": ["query", "dry_run"], "msg": "Input should be a valid boolean"},
    ]
    line = str(
        ApiError.from_response(answer(422, "validation_failed", "the request is not valid", detail))
    )
    assert line == (
        "the request is not valid: training.lrr: Extra inputs are not permitted; "
        "model.hidden.0: Input should be greater than 0; "
        "dry_run: Input should be a valid boolean (422 validation_failed)"
    )


def test_unusable_peers_are_each_named_with_why_and_other_problems_follow() -> None:
    detail = {
        "peers": [
            {"peer_id": "p1", "problem": "offline"},
            {"peer_id": "p9", "problem": "unknown"},
            {"peer_id": "p4", "problem": "outdated"},
        ],
        "problems": [{"loc": "aggregation.min_peers", "msg": "min_peers=3 is more than 2"}],
    }
    message = "3 of the named peers cannot take part in a job now"
    line = str(ApiError.from_response(answer(409, "peers_unavailable", message, detail)))
    assert line == (
        f"{message}: peer p1 is offline; peer p9 is unknown (or not yours to use); "
        "peer p4 runs a peer runtime too old to read this platform's tasks (update it); "
        "aggregation.min_peers: min_peers=3 is more than 2 (409 peers_unavailable)"
    )


def test_other_details_as_pairs_without_repeating_the_message() -> None:
    quota = {"quota": "running_jobs", "limit": 2, "used": 2}
    assert describe_detail(quota) == "quota=running_jobs, limit=2, used=2"
    assert describe_detail({"dataset_id": "d1"}, "no dataset 'd1'") == ""
    assert describe_detail(["at least 12 characters", "not a common password"]) == (
        "at least 12 characters; not a common password"
    )
    assert describe_detail("two\nlines") == "two lines"
    assert describe_detail(None) == describe_detail([]) == ""


def test_a_long_list_is_cut_and_says_where_the_rest_is() -> None:
    detail = [{"loc": f"f{i}", "msg": "bad"} for i in range(MAX_ITEMS + 3)]
    said = describe_detail(detail)
    assert said.count("bad") == MAX_ITEMS and said.endswith("and 3 more (--json shows all)")
    assert "\n" not in said


def test_the_cli_prints_the_detail_on_its_one_error_line(api: FakeApi, tmp_path: Path) -> None:
    detail = {"peers": [{"peer_id": "box-7", "problem": "offline"}]}
    api.route(
        "POST",
        "/api/jobs",
        lambda r: answer(409, "peers_unavailable", "1 of the named peers cannot take part", detail),
    )
    result = run(api, tmp_path, "job", "create", "-d", "d1", "--arch", "mlp", "--peer", "box-7")
    assert result.exit_code == 1
    assert result.stderr == (
        "peertrain: error: 1 of the named peers cannot take part: peer box-7 is offline "
        "(409 peers_unavailable)\n"
    )


def test_a_wrong_api_says_it_cannot_reach_not_that_you_are_not_logged_in(tmp_path: Path) -> None:
    closed = "http://127.0.0.1:9"
    assert FileTokenStore(tmp_path, api_url=closed).load() is None
    result = CliRunner().invoke(app, ["--api", closed, "--config-dir", str(tmp_path), "job", "ls"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"peertrain: error: cannot reach the PeerTrain API at {closed}: "
    )
    assert result.stderr.count("\n") == 1


def test_not_logged_in_when_the_api_answers(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/api/auth/healthz", {"status": "ok"})
    result = run(api, tmp_path, "job", "ls", login=False)
    assert result.exit_code == 1 and "not logged in" in result.stderr
