"""The commands added for issue 15, against a fake API: dry runs, the job schema,
``--version``, NDJSON from ``watch``, ``logs``, ``metrics``, ``config``, ``rerun``,
``dataset rm|preview``, ``peers rm|disable`` and ``model ls``'s metrics."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from fakeapi import FakeApi
from test_cli import run

JOB = {
    "job_id": "j1",
    "name": "iris",
    "state": "completed",
    "dataset_id": "d1",
    "peers": ["p1", "p2"],
    "model": {"arch": "mlp", "hidden": [16]},
    "training": {"rounds": 3, "lr": 0.1},
    "aggregation": {"strategy": "fedavg", "min_peers": 2},
    "sharding": {"strategy": "iid", "alpha": 0.5, "seed": 0},
}


def echo(status: int = 201):  # type: ignore[no-untyped-def]
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.params.get("dry_run") == "true":
            return httpx.Response(200, json={"dry_run": True, **body})
        return httpx.Response(status, json={"job_id": "j2"})

    return answer


def test_dry_run_asks_the_server_and_creates_nothing(api: FakeApi, tmp_path: Path) -> None:
    api.route("POST", "/api/jobs", echo())
    args = ("job", "create", "-d", "d1", "--arch", "mlp", "--peer", "p1", "--peer", "p2")
    result = run(api, tmp_path, *args, "--dry-run")
    assert result.exit_code == 0, result.output
    assert api.requests[-1].url.params["dry_run"] == "true"
    assert json.loads(result.stdout)["dry_run"] is True
    assert "nothing was created" in result.stderr and "p1, p2" in result.stderr


def test_create_and_rerun_take_set(api: FakeApi, tmp_path: Path) -> None:
    api.route("POST", "/api/jobs", echo())
    api.route("GET", "/api/jobs/j1", JOB)
    result = run(
        api, tmp_path, "job", "rerun", "j1", "--set", "training.lr=0.01",
        "--set", "model.hidden=[64, 32]", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"job_id": "j2"}
    sent = json.loads(api.requests[-1].content)
    assert sent["name"] == "iris-rerun" and sent["peers"] == ["p1", "p2"]
    assert sent["training"] == {"rounds": 3, "lr": 0.01}
    assert sent["model"] == {"arch": "mlp", "hidden": [64, 32]}
    assert sent["sharding"] == {"strategy": "iid", "alpha": 0.5}  # no seed: not a request field
    moved = run(api, tmp_path, "job", "rerun", "j1", "--set", "selection.count=4", "--dry-run")
    checked = json.loads(moved.stdout)
    assert checked["selection"] == {"count": 4} and "peers" not in checked
    bad = run(api, tmp_path, "job", "rerun", "j1", "--set", "training")
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output


def test_init_from_names_a_jobs_version_or_its_newest(api: FakeApi, tmp_path: Path) -> None:
    api.route("POST", "/api/jobs", echo())
    api.route("GET", "/api/jobs/j1", {**JOB, "init_from": {"job_id": "j0", "version": 2}})
    base = ("job", "create", "-d", "d1", "--arch", "mlp", "--peer", "p1", "--dry-run")
    for given, wanted in (
        ("j1:v3", {"job_id": "j1", "version": 3}),
        ("j1:3", {"job_id": "j1", "version": 3}),
        ("j1", {"job_id": "j1"}),
    ):
        result = run(api, tmp_path, *base, "--init-from", given)
        assert json.loads(result.stdout)["init_from"] == wanted, result.output
    assert run(api, tmp_path, *base, "--init-from", "j1:vx").exit_code == 2
    again = json.loads(run(api, tmp_path, "job", "rerun", "j1", "--dry-run").stdout)
    assert again["init_from"] == {"job_id": "j0", "version": 2}  # a rerun keeps its start
    warm = run(api, tmp_path, "job", "rerun", "j1", "--init-from", "j1:v3", "--dry-run")
    assert json.loads(warm.stdout)["init_from"] == {"job_id": "j1", "version": 3}


def test_schema_and_version(api: FakeApi, tmp_path: Path) -> None:
    schema = {"title": "PeerTrain job", "type": "object", "properties": {"name": {}}}
    api.route("GET", "/api/jobs/schema", schema, public=True)
    result = run(api, tmp_path, "job", "schema", login=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == schema
    assert "authorization" not in api.requests[-1].headers  # no login needed
    out = tmp_path / "job.schema.json"
    assert run(api, tmp_path, "job", "schema", "-o", str(out)).exit_code == 0
    assert json.loads(out.read_text()) == schema
    version = run(api, tmp_path, "--version")
    assert version.exit_code == 0 and version.stdout.startswith("peertrain ")


def test_watch_json_streams_one_line_per_change(api: FakeApi, tmp_path: Path) -> None:
    polls = iter(
        [
            {"job_id": "j", "state": "running", "rounds": 2, "current_round": 1},
            {"job_id": "j", "state": "running", "rounds": 2, "current_round": 1},
            {"job_id": "j", "state": "failed", "rounds": 2, "current_round": 2, "error": "boom"},
        ]
    )
    api.route("GET", "/api/jobs/j", lambda r: httpx.Response(200, json=next(polls)))
    api.route("GET", "/api/jobs/j/metrics", {"rounds": [{"round": 1, "accuracy": 0.5}]})
    result = run(api, tmp_path, "job", "watch", "j", "--json")
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["state"] for line in lines] == ["running", "failed"]
    assert lines[-1]["last_round"] == {"round": 1, "accuracy": 0.5}
    assert "job j failed: boom" in result.stderr


EVENTS = [
    {"id": "e1", "type": "round.opened", "occurred_at": "2026-01-01T10:00:00+00:00",
     "data": {"round": 1, "attempt": 1, "model_version": 0}},
    {"id": "e2", "type": "task.progress", "occurred_at": "2026-01-01T10:00:05+00:00",
     "data": {"round": 1, "peer_id": "p1", "epoch": 1, "epochs": 2, "loss": 0.5,
              "accuracy": 0.75, "samples": 60, "duration_s": 1.5}},
    {"id": "e3", "type": "task.failed", "occurred_at": "2026-01-01T10:00:06+00:00",
     "data": {"round": 1, "peer_id": "p2", "shard": 1, "error": "CUDA out of memory",
              "traceback": "Traceback (most recent call last):\n  File \"t.py\"\nRuntimeError"}},
    {"id": "e4", "type": "round.closed", "occurred_at": "2026-01-01T10:00:09+00:00",
     "data": {"round": 1, "reason": "deadline", "included": [{"shard": 0}]}},
]  # fmt: skip


def test_logs_tell_what_happened_and_follow_until_the_end(api: FakeApi, tmp_path: Path) -> None:
    pages = iter(
        [
            {"items": EVENTS[:2], "next_offset": None},
            {"items": EVENTS[:3], "next_offset": None},
            {"items": [*EVENTS, {"id": "e5", "type": "job.cancelled", "data": {"by": "u1"}}]},
        ]
    )
    api.route("GET", "/api/jobs/j/events", lambda r: httpx.Response(200, json=next(pages)))
    result = run(api, tmp_path, "job", "logs", "j", "--follow")
    assert result.exit_code == 3, result.output
    out = result.stdout
    assert out.count("round 1 opened") == 1  # each event once, although re-read
    assert "peer p1 epoch 1/2 loss 0.5000 accuracy 0.7500" in out
    assert "peer p2 FAILED shard 1: CUDA out of memory" in out and "RuntimeError" in out
    assert "round 1 closed (deadline): 1 update(s)" in out and "job cancelled by u1" in out
    api.route("GET", "/api/jobs/j/events", {"items": EVENTS})
    once = run(api, tmp_path, "job", "logs", "j", "--json")
    assert once.exit_code == 0
    assert [json.loads(x)["id"] for x in once.stdout.splitlines()] == ["e1", "e2", "e3", "e4"]


def test_a_progress_event_of_several_epochs_names_them() -> None:
    from peertrain.client.cli.logview import event_text

    data = {**EVENTS[1]["data"], "epoch": 3, "epochs": 3, "earlier": [{"epoch": 1}, {"epoch": 2}]}
    assert "peer p1 epochs 1,2,3/3 loss 0.5000" in event_text({**EVENTS[1], "data": data}).plain


def test_checks_and_their_verdicts_are_logged_in_words() -> None:
    from peertrain.client.cli.logview import event_text

    check = {
        "type": "task.assigned",
        "data": {"round": 2, "shard": 1, "peer_id": "p2", "checks": "t1"},
    }
    assert event_text(check).plain.endswith("round 2: shard 1 sent to peer p2 to check task t1")
    verdict = {
        "type": "update.checked",
        "data": {"round": 2, "shard": 1, "peer_id": "p1", "other_peer_id": "p2", "agree": False}
        | {"distance": 0.8511, "tolerance": 0.001},
    }
    assert event_text(verdict).plain.endswith(
        "round 2: check of shard 1: the updates of peers p1 and p2 DISAGREE "
        "(distance 0.851, tolerance 0.001)"
    )


def test_a_closed_round_says_which_accepted_updates_it_left_out_and_why() -> None:
    from peertrain.client.cli.logview import event_text

    closed = {
        "type": "round.closed",
        "data": {
            "round": 3,
            "reason": "complete",
            "included": [{"shard": 0}, {"shard": 1}],
            "dropped": [{"shard": 2, "peer_id": "p2", "norm": 9.0, "bound": 3.0}],
            "unconfirmed": [{"shard": 3, "peer_id": "p3"}],
        },
    }
    assert event_text(closed).plain.endswith(
        "round 3 closed (complete): 2 update(s); left out: shard 2 of peer p2 "
        "(norm outlier), shard 3 of peer p3 (check unconfirmed)"
    )
    plain = {"type": "round.closed", "data": {"round": 1, "reason": "complete", "included": []}}
    assert event_text(plain).plain.endswith("round 1 closed (complete): 0 update(s)")


def test_metrics_and_config(api: FakeApi, tmp_path: Path) -> None:
    metrics = {
        "job_id": "j",
        "initial": {"version": 0, "loss": 2.3, "accuracy": 0.1},
        "rounds": [{"round": 1, "loss": 0.7, "accuracy": 0.81, "peers": 2, "duration_s": 4.0}],
        "peers": [{"peer_id": "p1", "round": 1, "epoch": 1, "epochs": 1, "loss": 0.9,
                   "accuracy": 0.6, "samples": 50, "duration_s": 1.0}],
    }  # fmt: skip
    api.route("GET", "/api/jobs/j/metrics", metrics)
    api.route("GET", "/api/jobs/j/config", {"rounds": 3, "shards": []})
    table = run(api, tmp_path, "job", "metrics", "j", "--peers")
    assert table.exit_code == 0, table.output
    assert "0.8100" in table.stdout and "2.3000" in table.stdout and "p1" in table.stdout
    assert json.loads(run(api, tmp_path, "job", "metrics", "j", "--json").stdout) == metrics
    assert json.loads(run(api, tmp_path, "job", "config", "j").stdout) == {
        "rounds": 3,
        "shards": [],
    }


def test_metrics_show_the_bytes_each_round_moved(api: FakeApi, tmp_path: Path) -> None:
    metrics = {
        "job_id": "j",
        "compression": "int8",
        "initial": None,
        "rounds": [{"round": 1, "loss": 0.7, "accuracy": 0.81, "peers": 8, "duration_s": 4.0,
                    "bytes_up": 1_600_000, "bytes_up_dense": 6_400_000,
                    "bytes_down_per_peer": 800_000}],
        "peers": [],
    }  # fmt: skip
    api.route("GET", "/api/jobs/j/metrics", metrics)
    table = run(api, tmp_path, "job", "metrics", "j")
    assert table.exit_code == 0, table.output
    assert "1.6 MB (4.0x)" in table.stdout and "800.0 kB" in table.stdout
    assert "updates as int8" in table.stdout


def test_dataset_preview_and_rm(api: FakeApi, tmp_path: Path) -> None:
    preview = {"kind": "table", "columns": ["sepal", "label"], "rows": [[5.1, "setosa"]]}
    api.route("GET", "/api/datasets/d1/preview", preview)
    api.route("DELETE", "/api/datasets/d1", lambda r: httpx.Response(204))
    shown = run(api, tmp_path, "dataset", "preview", "d1")
    assert shown.exit_code == 0 and "setosa" in shown.stdout and "sepal" in shown.stdout
    refused = run(api, tmp_path, "dataset", "rm", "d1")  # asks; no answer: aborted
    assert refused.exit_code == 1 and api.requests[-1].method == "GET"
    gone = run(api, tmp_path, "dataset", "rm", "d1", "--yes", "--json")
    assert gone.exit_code == 0 and json.loads(gone.stdout) == {"dataset_id": "d1", "deleted": True}
    assert api.requests[-1].method == "DELETE"


def test_peers_disable_enable_and_rm(api: FakeApi, tmp_path: Path) -> None:
    def patch(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"peer_id": "p1", **json.loads(request.content)})

    api.route("PATCH", "/api/registry/peers/p1", patch)
    api.route("DELETE", "/api/registry/peers/p1", lambda r: httpx.Response(204))
    off = run(api, tmp_path, "peers", "disable", "p1", "--json")
    assert json.loads(off.stdout) == {"peer_id": "p1", "disabled": True}
    on = run(api, tmp_path, "peers", "disable", "p1", "--enable")
    assert on.exit_code == 0 and json.loads(api.requests[-1].content) == {"disabled": False}
    assert run(api, tmp_path, "peers", "rm", "p1", "-y").exit_code == 0
    assert api.requests[-1].method == "DELETE"


def test_model_ls_shows_each_versions_holdout_metrics(api: FakeApi, tmp_path: Path) -> None:
    api.known("/api/jobs", "j")
    versions = {
        "job_id": "j",
        "versions": [
            {"version": 1, "sha256": "ab" * 32, "peers": ["p1", "p2"],
             "evaluation": {"loss": 0.4321, "accuracy": 0.9123}},
            {"version": 2, "sha256": "cd" * 32, "peers": ["p1"], "evaluation": None},
        ],
        "final_available": True,
    }  # fmt: skip
    api.route("GET", "/api/models/j", versions)
    result = run(api, tmp_path, "model", "ls", "j")
    assert result.exit_code == 0, result.output
    assert "0.4321" in result.stdout and "0.9123" in result.stdout
    assert "final model: yes" in result.stderr


def test_cancel_and_login_answer_json(api: FakeApi, tmp_path: Path) -> None:
    api.route("POST", "/api/jobs/j/cancel", {"job_id": "j", "state": "running"}, status=202)
    cancelled = run(api, tmp_path, "job", "cancel", "j", "--json")
    assert json.loads(cancelled.stdout) == {"job_id": "j", "state": "running"}
    login = run(
        api, tmp_path / "other", "login", "-u", "ada", "--password", "right-password", "--json",
        login=False,
    )  # fmt: skip
    assert login.exit_code == 0 and json.loads(login.stdout)["username"] == "ada"
    out = run(api, tmp_path / "other", "logout", "--json")
    assert json.loads(out.stdout) == {"logged_out": True, "server_told": True}


def test_job_show_prints_the_models_size_and_no_graph_nodes(api: FakeApi, tmp_path: Path) -> None:
    nodes = [{"name": f"n{i}", "op": "relu", "inputs": ["x"]} for i in range(50)]
    model = {"arch": "graph", "input_shape": [4], "nodes": nodes, "output": "n49"}
    api.route(
        "GET", "/api/jobs/j1", {"job_id": "j1", "name": "g", "state": "running", "model": model}
    )
    layers = [{"name": "n0", "module": "fc"}] + [
        {"name": f"n{i}", "module": None} for i in range(49)
    ]
    api.route("GET", "/api/jobs/j1/model", {"parameters": 12345, "layers": layers})
    shown = run(api, tmp_path, "job", "show", "j1")
    assert shown.exit_code == 0, shown.output
    assert "a layer graph of 50 nodes" in shown.stdout and '"n49"' not in shown.stdout
    assert "architecture: 12,345 parameters, 50 layers (1 with state)" in shown.stdout
    # A server without the route: no architecture line, no error.
    api.routes.pop(("GET", "/api/jobs/j1/model"))
    older = run(api, tmp_path, "job", "show", "j1")
    assert older.exit_code == 0 and "architecture" not in older.stdout


def test_job_show_says_how_many_tasks_a_round_gave_out_and_closed_on(
    api: FakeApi, tmp_path: Path
) -> None:
    rnd = {
        "round": 3,
        "attempt": 1,
        "state": "closed",
        "close_reason": "complete",
        "accepted": [0, 1, 3],
        "shards": 4,
        "closes_on": 3,
        "surplus": [2],
    }
    api.route(
        "GET", "/api/jobs/j1", {"job_id": "j1", "name": "g", "state": "running", "round": rnd}
    )
    shown = run(api, tmp_path, "job", "show", "j1")
    assert shown.exit_code == 0, shown.output
    want = "round 3 (attempt 1): 4 task(s), closes on 3 accepted; closed (complete) on 3, 1 surplus"
    assert want in " ".join(shown.stdout.split())


def test_job_show_names_the_task_each_check_checks(api: FakeApi, tmp_path: Path) -> None:
    def task(n: int, peer: str, checks: str | None = None) -> dict[str, object]:
        return {"task_id": f"j1.r1.a1.s0.{n}", "round": 1, "shard": 0, "peer_id": peer} | {
            "state": "updated",
            "checks": checks,
        }

    tasks = [task(1, "peer-a"), task(2, "peer-b", "j1.r1.a1.s0.1"), task(3, "peer-c")]
    api.route(
        "GET", "/api/jobs/j1", {"job_id": "j1", "name": "g", "state": "running"} | {"tasks": tasks}
    )
    shown = run(api, tmp_path, "job", "show", "j1", "--wide")
    assert shown.exit_code == 0, shown.output
    lines = [" ".join(line.split()) for line in shown.stdout.splitlines()]
    assert any(line.startswith("TASK ROUND SHARD PEER STATE CHECKS") for line in lines)
    assert "j1.r1.a1.s0.2 1 0 peer-b updated j1.r1.a1.s0.1 -" in lines
    assert "j1.r1.a1.s0.3 1 0 peer-c updated - -" in lines
