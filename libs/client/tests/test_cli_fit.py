"""A CLI that fits (issue 33): short ids, 80-column tables, ``job ls`` filters,
one-line usage errors, one set of job options, every round from ``watch --json``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import typer
from fakeapi import FakeApi
from test_cli import API, run
from typer.testing import CliRunner

from peertrain.client import FileTokenStore, Tokens
from peertrain.client.cli import CliState, app
from peertrain.client.cli.shortids import JOB, AmbiguousId, UnknownId, match_id, short_ids
from peertrain.client.cli.specoptions import SpecOptions

# UUIDv7s made within the same second share their first 13 characters.
IDS = [
    "0192f3a4-5b6c-7d8e-9fab-0123456789ab",
    "0192f3a4-5b6c-7a11-8b22-c0ffee000001",
    "0192f3a4-5b6c-7f00-a000-feedbeef0002",
]


def run_at(api: FakeApi, cfg: Path, width: int, *args: str):  # type: ignore[no-untyped-def]
    if FileTokenStore(cfg, api_url=API).load() is None:
        FileTokenStore(cfg, api_url=API).save(Tokens("access-1", "refresh-1"))
    state = CliState(transport=api.transport, poll_interval=0)
    env = {"COLUMNS": str(width), "PEERTRAIN_API": API, "PEERTRAIN_CONFIG_DIR": str(cfg)}
    return CliRunner().invoke(app, list(args), obj=state, env=env)


def test_short_ids_are_the_shortest_unique_ends_of_eight_characters_or_more() -> None:
    assert short_ids(IDS) == {i: i[-8:] for i in IDS}
    clash = ["x0-12345678", "y1-12345678"]
    assert short_ids(clash) == {clash[0]: "0-12345678", clash[1]: "1-12345678"}
    assert short_ids(["j1", "j2"]) == {"j1": "j1", "j2": "j2"}
    three = ["a-12345678", "b-12345678", "c-92345678"]
    assert short_ids(three) == {i: i for i in three[:2]} | {three[2]: "92345678"}


def test_an_id_is_matched_by_its_whole_a_unique_start_or_a_unique_end() -> None:
    jobs = [{"job_id": i, "name": f"job{n}"} for n, i in enumerate(IDS)]
    assert match_id(JOB, IDS[1], jobs) == IDS[1]
    assert match_id(JOB, "0192f3a4-5b6c-7a", jobs) == IDS[1]
    assert match_id(JOB, IDS[2][-8:], jobs) == IDS[2]
    assert match_id(JOB, IDS[0][-8:].upper(), jobs) == IDS[0]
    with pytest.raises(AmbiguousId) as ambiguous:
        match_id(JOB, "0192f3a4", jobs)
    assert str(ambiguous.value) == (
        f"'0192f3a4' names 3 jobs: {IDS[0]} (job0), {IDS[1]} (job1), {IDS[2]} (job2); "
        "give more of the id"
    )
    with pytest.raises(UnknownId, match="no job has an id that starts or ends with 'zzz'"):
        match_id(JOB, "zzz", jobs)


def _jobs(api: FakeApi) -> None:
    items = [{"job_id": i, "name": f"job{n}", "state": "running"} for n, i in enumerate(IDS)]
    api.route("GET", "/api/jobs", {"items": items, "next_offset": None})


def test_every_job_command_takes_a_short_id_and_refuses_an_ambiguous_or_unknown_one(
    api: FakeApi, tmp_path: Path
) -> None:
    _jobs(api)
    api.route("GET", f"/api/jobs/{IDS[1]}", {"job_id": IDS[1], "state": "running"})
    api.route("GET", f"/api/jobs/{IDS[1]}/model", {"parameters": 1, "layers": []})
    shown = run(api, tmp_path, "job", "show", IDS[1][-8:], "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["job_id"] == IDS[1]
    ambiguous = run(api, tmp_path, "job", "cancel", "0192f3a4")
    assert ambiguous.exit_code == 1
    assert ambiguous.stderr.startswith("peertrain: error: '0192f3a4' names 3 jobs: ")
    assert f"{IDS[2]} (job2)" in ambiguous.stderr and len(ambiguous.stderr.splitlines()) == 1
    unknown = run(api, tmp_path, "job", "events", "nope")
    assert (unknown.exit_code, unknown.stderr) == (
        1,
        "peertrain: error: no job has an id that starts or ends with 'nope'\n",
    )


PEERS = [
    {
        "peer_id": IDS[n],
        "name": name,
        "status": status,
        "disabled": n == 2,
        "specs": {"device": "cuda", "gpus": [{"memory_gb": 24}]},
        "last_seen": "2026-01-01T10:00:00+00:00",
        "shared": True,
    }
    for n, (name, status) in enumerate(
        [
            ("a-rather-long-workstation-name-in-the-lab", "active"),
            ("gpu-box", "stale"),
            ("laptop", "offline"),
        ]
    )
]


def test_peers_ls_fits_80_columns_without_splitting_a_word(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/api/registry/peers", {"items": PEERS, "next_offset": None})
    result = run_at(api, tmp_path, 80, "peers", "ls")
    assert result.exit_code == 0, result.output
    lines = result.stdout.rstrip("\n").splitlines()
    assert all(len(line) <= 80 for line in lines), result.stdout
    rows = lines[2:]  # the header and its rule, then one line per peer: nothing wrapped
    assert len(rows) == len(PEERS), result.stdout
    for row, peer, status in zip(
        rows, PEERS, ["active", "stale", "offline (disabled)"], strict=True
    ):
        assert row.startswith(peer["peer_id"][-8:] + " ") and status in row, row
    assert "…" in rows[0]  # the long name ends in an ellipsis instead of wrapping
    # what the table shows is taken back
    api.route("GET", f"/api/registry/peers/{IDS[1]}", PEERS[1])
    again = run_at(api, tmp_path, 80, "peers", "show", rows[1].split()[0], "--json")
    assert json.loads(again.stdout)["name"] == "gpu-box"


def test_wide_shows_full_ids_and_every_column(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/api/registry/peers", {"items": PEERS, "next_offset": None})
    result = run_at(api, tmp_path, 80, "peers", "ls", "--wide")
    assert result.exit_code == 0, result.output
    assert "SHARED" in result.stdout and PEERS[0]["name"] in result.stdout
    for peer in PEERS:
        assert peer["peer_id"] in result.stdout


def test_job_ls_filters_on_the_server_and_checks_its_answer(api: FakeApi, tmp_path: Path) -> None:
    dataset = "0192f3a4-0000-7000-8000-00000000d5e7"
    api.route("GET", "/api/datasets", {"items": [{"id": dataset, "name": "iris"}]})
    jobs = [
        {"job_id": IDS[0], "name": "Iris-MLP", "state": "running", "dataset_id": dataset},
        {"job_id": IDS[1], "name": "iris-cnn", "state": "failed", "dataset_id": dataset},
        {"job_id": IDS[2], "name": "mnist", "state": "running", "dataset_id": "other"},
    ]
    api.route("GET", "/api/jobs", {"items": jobs, "next_offset": None})  # ignores the query
    args = ("job", "ls", "--state", "running", "--dataset", "d5e7", "--name", "IRIS", "--json")
    result = run(api, tmp_path, *args)
    assert result.exit_code == 0, result.output
    assert [j["job_id"] for j in json.loads(result.stdout)] == [IDS[0]]
    sent = api.requests[-1].url.params
    assert (sent["state"], sent["dataset_id"], sent["name"]) == ("running", dataset, "IRIS")
    table = run_at(api, tmp_path, 80, "job", "ls", "--name", "iris")
    lines = table.stdout.rstrip("\n").splitlines()
    assert len(lines) == 4 and all(len(line) <= 80 for line in lines), table.stdout
    assert "failed" in lines[3] and IDS[1][-8:] in lines[3]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["simulate", "--data", "x.csv"],
            "Missing option '--peers'. Try 'peertrain simulate --help'.",
        ),
        (
            ["job", "create", "--rounds", "x"],
            "Invalid value for '--rounds': Input should be a valid integer, unable to parse "
            "string as an integer. Try 'peertrain job create --help'.",
        ),
        (
            ["job", "ls", "--nope"],
            "No such option: --nope (Possible options: --name). Try 'peertrain job ls --help'.",
        ),
    ],
)
def test_usage_errors_are_one_line(
    args: list[str], line: str, api: FakeApi, tmp_path: Path
) -> None:
    result = run(api, tmp_path, *args)
    assert result.exit_code == 2
    assert result.stderr == f"peertrain: error: {line}\n"


def test_job_create_needs_no_arch_and_shares_its_job_options_with_simulate(
    api: FakeApi, tmp_path: Path
) -> None:
    api.route("POST", "/api/jobs", lambda r: httpx.Response(201, json={"job_id": "j9"}))
    api.known("/api/datasets", "d1")
    result = run(api, tmp_path, "job", "create", "-d", "d1", "--count", "2", "--rounds", "3")
    assert result.exit_code == 0, result.output
    sent = json.loads(api.requests[-1].content)
    assert "model" not in sent and sent["training"] == {"rounds": 3}  # the server's mlp
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    ctx = typer.Context(command)

    def options(*path: str) -> set[str]:
        found = command
        for name in path:
            found = found.get_command(ctx, name)  # type: ignore[attr-defined,assignment]
        return {p.name for p in found.params if p.name}

    shared = set(SpecOptions.__dataclass_fields__)
    assert shared <= options("simulate") and shared <= options("job", "create")


def test_watch_json_tells_every_round_even_when_several_ended_between_polls(
    api: FakeApi, tmp_path: Path
) -> None:
    rounds = [{"round": n, "loss": 1 / n, "accuracy": n / 15} for n in range(1, 16)]
    polls = iter(
        [(1, "running"), (5, "running"), (5, "running"), (12, "running"), (15, "completed")]
    )
    metrics = iter([1, 5, 5, 12, 15])

    def job(request: httpx.Request) -> httpx.Response:
        done, state = next(polls)
        return httpx.Response(
            200, json={"job_id": "j", "state": state, "rounds": 15, "current_round": done}
        )

    api.route("GET", "/api/jobs/j", job)
    api.route(
        "GET",
        "/api/jobs/j/metrics",
        lambda r: httpx.Response(200, json={"rounds": rounds[: next(metrics)]}),
    )
    result = run(api, tmp_path, "job", "watch", "j", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    told = [line["last_round"]["round"] for line in lines]
    assert told == list(range(1, 16))  # none skipped, none twice
    assert [line["rounds_done"] for line in lines] == list(range(1, 16))
    assert lines[-1]["state"] == "completed" and lines[5]["state"] == "running"


def test_model_commands_take_a_short_job_id_too(api: FakeApi, tmp_path: Path) -> None:
    _jobs(api)
    api.route("GET", f"/api/models/{IDS[2]}", {"job_id": IDS[2], "versions": []})
    result = run(api, tmp_path, "model", "ls", IDS[2][-8:], "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["job_id"] == IDS[2]
