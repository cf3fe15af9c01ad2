"""``peertrain job ls | show | cancel | events | config | metrics``: reading jobs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import typer
from rich.text import Text

from peertrain.client.errors import ApiError

from .output import Col, JsonFlag, WideFlag, echo_json, fmt_float, fmt_time, key_values, table
from .shortids import DATASET, JOB, resolve, short_ids, shown_id
from .state import state_of
from .watchview import STATE_STYLE, fmt_duration

__all__ = ["cancel", "config", "events", "list_jobs", "metrics", "show_job"]


def job_state(value: Any) -> Text:
    """A job or task state, coloured."""
    return Text(str(value or "-"), style=STATE_STYLE.get(str(value), ""))


StateFilter = Literal["sharding", "running", "completed", "failed", "cancelled"]


def _kept(job: dict[str, Any], state: str | None, dataset_id: str | None, name: str | None) -> bool:
    # The server filters too; this keeps a server that ignores the query honest.
    return (
        (state is None or job.get("state") == state)
        and (dataset_id is None or job.get("dataset_id") == dataset_id)
        and (name is None or name.lower() in str(job.get("name") or "").lower())
    )


def list_jobs(
    ctx: typer.Context,
    state_filter: Annotated[
        StateFilter | None, typer.Option("--state", help="Only jobs in this state.")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option("--dataset", "-d", help="Only jobs on this dataset (id or short id)."),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Only jobs whose name holds this (any case).")
    ] = None,
    wide: WideFlag = False,
    json_out: JsonFlag = False,
) -> None:
    """Your jobs, newest first."""
    state = state_of(ctx)
    with state.client() as pt:
        # a deleted dataset's jobs stay: its whole id still filters them
        dataset_id = resolve(pt, DATASET, dataset, unknown_ok=True) if dataset else None
        found = pt.list_jobs(state=state_filter, dataset_id=dataset_id, name=name)
    found = [j for j in found if _kept(j, state_filter, dataset_id, name)]
    if json_out:
        echo_json(found)
        return
    jobs = short_ids(str(j.get("job_id") or "") for j in found)
    datasets = short_ids(str(j.get("dataset_id") or "") for j in found)
    rows = [
        [
            shown_id(j.get("job_id"), jobs, wide),
            j.get("name") or "-",
            job_state(j.get("state")),
            f"{_or_dash(j.get('current_round'))}/{_or_dash(j.get('rounds'))}",
            fmt_float(j.get("accuracy")),
            fmt_float(j.get("loss")),
            fmt_time(j.get("created_at"), short=not wide),
            shown_id(j.get("dataset_id"), datasets, wide),
            j.get("peers"),
            fmt_time(j.get("finished_at")),
        ]
        for j in found
    ]
    columns: list[str | Col] = [
        "JOB",
        Col("NAME", flex=True),
        "STATE",
        "ROUND",
        "ACCURACY",
        "LOSS",
        "CREATED",
        Col("DATASET", wide=True),
        Col("PEERS", wide=True),
        Col("FINISHED", wide=True),
    ]
    table(state.out, columns, rows, empty="no jobs found", wide=wide)


def _or_dash(value: Any) -> Any:
    return "-" if value is None else value


def _round_line(rnd: dict[str, Any]) -> str:
    """``round 3 (attempt 1): 8 task(s), closes on 6 accepted; closed (complete) on 6,
    2 surplus``: how many tasks the round gave out, and on how many it closed."""
    accepted = len(rnd.get("accepted") or [])
    surplus = len(rnd.get("surplus") or [])
    line = (
        f"round {rnd.get('round', '-')} (attempt {rnd.get('attempt', '-')}): "
        f"{rnd.get('shards', '-')} task(s), closes on {rnd.get('closes_on', '-')} accepted"
    )
    if rnd.get("state") == "open":
        return f"{line}; open, {accepted} accepted so far"
    line += f"; {rnd.get('state', '-')} ({rnd.get('close_reason') or '-'}) on {accepted}"
    return line + (f", {surplus} surplus (ended, no strike)" if surplus else "")


def show_job(
    ctx: typer.Context, job_id: str, wide: WideFlag = False, json_out: JsonFlag = False
) -> None:
    """One job: state, progress, latest metrics, its model's size, its tasks (and why
    any failed)."""
    state = state_of(ctx)
    with state.client() as pt:
        job_id = resolve(pt, JOB, job_id)
        job = pt.get_job(job_id)
        if json_out:
            echo_json(job)
            return
        summary = _model_summary(pt, job_id)
    model = job.get("model")
    nodes = model.get("nodes") if isinstance(model, dict) else None
    skip = ("tasks", "peers", "latest", "error", "waiting")
    key_values(state.out, job, skip=skip + (("model",) if isinstance(nodes, list) else ()))
    if isinstance(nodes, list):  # a graph: its nodes would fill the screen
        state.out.print(f"model: a layer graph of {len(nodes)} nodes (--json shows them)")
    if summary is not None:
        layers = summary.get("layers") or []
        with_state = sum(1 for layer in layers if layer.get("module"))
        state.out.print(
            f"architecture: {summary.get('parameters', 0):,} parameters, {len(layers)} layers "
            f"({with_state} with state)"
        )
    waiting = job.get("waiting")
    if isinstance(waiting, dict):
        state.out.print(
            Text(
                f"waiting: round {waiting.get('round', '-')} (attempt "
                f"{waiting.get('attempt', '-')}) waits for peers: {waiting.get('online', '-')} "
                f"online, {waiting.get('needed', '-')} needed, since "
                f"{fmt_time(waiting.get('since'))}; the job fails at "
                f"{fmt_time(waiting.get('until'))} (aggregation.peer_wait_s)",
                style="yellow",
            )
        )
    rnd = job.get("round")
    if isinstance(rnd, dict) and "closes_on" in rnd:
        state.out.print(Text(_round_line(rnd)))
    latest = job.get("latest")
    if isinstance(latest, dict):
        state.out.print(
            f"latest: round {latest.get('round', '-')}  loss {fmt_float(latest.get('loss'))}"
            f"  accuracy {fmt_float(latest.get('accuracy'))}"
        )
    peers = job.get("peers")
    if isinstance(peers, list) and peers:
        state.out.print(Text("peers: " + ", ".join(str(p) for p in peers)))
    if job.get("error"):
        state.out.print(Text(f"error: {job['error']}", style="red"))
    tasks = [t for t in job.get("tasks") or [] if isinstance(t, dict)]
    task_ids = short_ids(str(t.get(k) or "") for t in tasks for k in ("task_id", "checks"))
    peer_ids = short_ids(str(t.get("peer_id") or "") for t in tasks)
    checks = any(t.get("checks") for t in tasks)  # aggregation.verify: which task each checks
    rows = [
        [
            shown_id(t.get("task_id"), task_ids, wide),
            t.get("round"),
            t.get("shard"),
            shown_id(t.get("peer_id"), peer_ids, wide),
            job_state(t.get("state")),
            *(
                [shown_id(t["checks"], task_ids, wide) if t.get("checks") else "-"]
                if checks
                else []
            ),
            _first_line(t.get("error")),
        ]
        for t in tasks
    ]
    if rows:
        columns: list[str | Col] = [
            "TASK",
            "ROUND",
            "SHARD",
            "PEER",
            "STATE",
            *(["CHECKS"] if checks else []),
            Col("ERROR", flex=True),
        ]
        table(state.out, columns, rows, title="tasks", wide=wide)
    for t in tasks:
        if t.get("traceback"):
            state.out.print(Text(f"task {t.get('task_id')} traceback:", style="bold red"))
            state.out.print(Text(str(t["traceback"])))


def _model_summary(pt: Any, job_id: str) -> dict[str, Any] | None:
    """The job's architecture summary; ``None`` from a server without it (404)."""
    try:
        found: dict[str, Any] = pt.job_model(job_id)
    except ApiError as exc:
        if exc.status != 404:
            raise
        return None
    return found


def _first_line(value: Any) -> str:
    lines = str(value or "").splitlines()
    return lines[0] if lines else "-"


def cancel(ctx: typer.Context, job_id: str, json_out: JsonFlag = False) -> None:
    """Ask a job to stop; it ends `cancelled`."""
    state = state_of(ctx)
    with state.client() as pt:
        job_id = resolve(pt, JOB, job_id)
        answer = pt.cancel_job(job_id)
    if json_out:
        echo_json(answer)
        return
    state.err.print(f"cancelling {job_id}")


def events(ctx: typer.Context, job_id: str, json_out: JsonFlag = False) -> None:
    """A job's event history, oldest first (`job logs` tells it in words)."""
    state = state_of(ctx)
    with state.client() as pt:
        job_id = resolve(pt, JOB, job_id)
        items = pt.job_events(job_id)
    if json_out:
        echo_json(items)
        return
    envelope = {"id", "type", "occurred_at", "stream", "seq", "version", "metadata"}
    rows = [
        [
            e.get("seq"),
            fmt_time(e.get("occurred_at")),
            e.get("type") or "-",
            e.get("data") if "data" in e else {k: v for k, v in e.items() if k not in envelope},
        ]
        for e in items
    ]
    columns: list[str | Col] = ["SEQ", "AT", "TYPE", Col("DATA", flex=True)]
    table(state.out, columns, rows, empty="no events")


def config(ctx: typer.Context, job_id: str, json_out: JsonFlag = False) -> None:
    """The job's config.json (what peers and the aggregator train from; written once
    its data is sharded). Always JSON; --json is accepted for uniformity."""
    del json_out
    state = state_of(ctx)
    with state.client() as pt:
        echo_json(pt.job_config(resolve(pt, JOB, job_id)))


def _fmt_bytes(value: Any) -> str:
    """``1.5 MB``-style (powers of 1000, as transfer sizes go); ``-`` when unknown."""
    if not isinstance(value, int):
        return "-"
    size = float(value)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return "-"  # not reached


def _bytes_up(r: dict[str, Any]) -> str:
    """A round's update bytes, and how many times fewer than float32 when compressed."""
    up, dense = r.get("bytes_up"), r.get("bytes_up_dense")
    shown = _fmt_bytes(up)
    if isinstance(up, int) and up > 0 and isinstance(dense, int) and dense > 1.05 * up:
        shown += f" ({dense / up:.1f}x)"
    return shown


def metrics(
    ctx: typer.Context,
    job_id: str,
    peers: Annotated[bool, typer.Option("--peers", help="Also each peer's epochs.")] = False,
    wide: WideFlag = False,
    json_out: JsonFlag = False,
) -> None:
    """Holdout loss and accuracy per round, and the bytes each round moved (its accepted
    updates up, its model version down to each peer); with --peers, each peer's epochs."""
    state = state_of(ctx)
    with state.client() as pt:
        job_id = resolve(pt, JOB, job_id)
        found = pt.job_metrics(job_id)
    if json_out:
        echo_json(found)
        return
    initial = found.get("initial") if isinstance(found.get("initial"), dict) else None
    rows: list[list[Any]] = []
    if initial:
        loss, accuracy = fmt_float(initial.get("loss")), fmt_float(initial.get("accuracy"))
        rows.append([0, loss, accuracy, "-", "-", "-", "-"])
    for r in found.get("rounds") or []:
        if isinstance(r, dict):
            rows.append(
                [
                    r.get("round"),
                    fmt_float(r.get("loss")),
                    fmt_float(r.get("accuracy")),
                    r.get("peers"),
                    _bytes_up(r),
                    _fmt_bytes(r.get("bytes_down_per_peer")),
                    fmt_duration(r.get("duration_s")),
                ]
            )
    columns = ["ROUND", "LOSS", "ACCURACY", "UPDATES", "UP", "DOWN/PEER", "ROUND TIME"]
    kind = found.get("compression") or "none"
    title = "holdout" if kind == "none" else f"holdout (updates as {kind})"
    table(state.out, columns, rows, title=title, empty="no rounds evaluated yet")
    if not peers:
        return
    reports = [p for p in found.get("peers") or [] if isinstance(p, dict)]
    peer_ids = short_ids(str(p.get("peer_id") or "") for p in reports)
    epochs = [
        [
            shown_id(p.get("peer_id"), peer_ids, wide),
            p.get("round"),
            f"{p.get('epoch')}/{p.get('epochs')}",
            fmt_float(p.get("loss")),
            fmt_float(p.get("accuracy")),
            p.get("samples"),
            fmt_duration(p.get("duration_s")),
        ]
        for p in reports
    ]
    columns = ["PEER", "ROUND", "EPOCH", "LOSS", "ACCURACY", "SAMPLES", "TIME"]
    table(
        state.out, columns, epochs, title="peers' epochs", empty="no epochs reported yet", wide=wide
    )
