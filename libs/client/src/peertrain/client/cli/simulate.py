"""``peertrain simulate``: a job on virtual peers, in this process, with no stack.

``peertrain.sim`` (distribution ``peertrain-sim``) runs the platform's own code; it is
imported only here and only when the command runs, so the client stays lean.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.text import Text

from peertrain.client.errors import ClientError
from peertrain.client.jobs import JobProgress

from .output import JsonFlag, echo_json
from .specoptions import SpecOptions, spec_options
from .state import state_of
from .watchview import render_watch

__all__ = ["INSTALL_HINT", "simulate"]

INSTALL_HINT = (
    "peertrain simulate needs the simulation runtime: `pip install peertrain-sim` "
    "(in a checkout: `uv sync`, or `bash deploy/local/venv.sh`)"
)
EXIT_FAILED = 1


class SimulationUnavailable(ClientError):
    """``peertrain.sim`` is not installed."""


def _sim() -> ModuleType:
    try:
        return importlib.import_module("peertrain.sim")
    except ImportError as exc:
        raise SimulationUnavailable(f"{INSTALL_HINT} ({exc})") from None


def _progress(state: str, rounds: list[Any], total: int, peers: int) -> JobProgress:
    job = {
        "job_id": "simulation",
        "name": f"{peers} virtual peers",
        "state": state,
        "rounds": total,
        "current_round": len(rounds),
    }
    items = [
        {
            "round": r.round,
            "loss": r.loss,
            "accuracy": r.accuracy,
            "peers": r.peers,
            "duration_s": r.virtual_s - (rounds[i - 1].virtual_s if i else 0.0),
        }
        for i, r in enumerate(rounds)
    ]
    return JobProgress(job, {"rounds": items})


@spec_options
def simulate(
    ctx: typer.Context,
    spec_opts: SpecOptions,
    data: Annotated[Path, typer.Option("--data", help="The dataset: a .csv or .zip.")],
    peers: Annotated[int, typer.Option("--peers", min=1, help="Virtual peers.")],
    label_column: Annotated[
        str | None, typer.Option("--label-column", help="Label column (default: the last).")
    ] = None,
    missing_values: Annotated[
        str | None,
        typer.Option(
            "--missing-values",
            help="Tables: the cell values that mean missing, comma-separated, as for "
            "dataset upload (default: empty, NA, N/A, NaN, null, None, ?, -).",
        ),
    ] = None,
    peers_per_round: Annotated[
        int | None, typer.Option("--peers-per-round", min=1, help="Peers sampled each round.")
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Worker processes for training.")
    ] = 0,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            min=1,
            help="torch threads per training process (default: 1 in this process; "
            "the cores shared out among --workers). Bits depend on it.",
        ),
    ] = None,
    dropout: Annotated[
        float, typer.Option("--dropout", min=0.0, max=0.99, help="Chance a peer vanishes.")
    ] = 0.0,
    hostile: Annotated[
        float, typer.Option("--hostile", min=0.0, max=0.99, help="Share of hostile peers.")
    ] = 0.0,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the final model (.pt) here.")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Simulate a job on virtual peers in this process: no login, no stack.

    Runs the platform's own rules (rounds, deadlines, rejections, aggregation) and
    training on the data given; prints the per-round table as `job watch` does.
    The job options (--config, --set, the model, training, aggregation and sharding)
    are `job create`'s, with the same defaults (a model nobody names is an mlp); a
    module given as --model FILE.py:NAME is checked on rows shaped like the data's;
    --init-weights starts from those weights. Exit status: 0 completed, 1 failed.
    """
    state = state_of(ctx)
    sim = _sim()
    spec = spec_opts.spec()
    source: Any = data
    if spec_opts.model is not None or missing_values is not None:
        # The data first: a module is traced on a batch shaped like its rows.
        source = sim.load_data(data, label_column=label_column, missing_values=missing_values)
    if spec_opts.model is not None:
        spec_opts.with_model(spec, lambda: list(source.feature_spec.input_shape))
    try:
        job = sim.parse_job_spec(spec)
    except ValueError as exc:
        raise typer.BadParameter(" ".join(str(exc).split()), param_hint="--config") from None
    volunteers = sim.Volunteers(dropout=dropout, hostile=hostile, seed=job.training.seed)
    total = job.training.rounds
    seen: list[Any] = []
    with Live(console=state.err if json_out else state.out, auto_refresh=False) as live:

        def on_round(metrics: Any) -> None:
            seen.append(metrics)
            if not json_out:
                live.update(render_watch(_progress("running", seen, total, peers)), refresh=True)

        result = sim.run(
            job,
            source,
            peers=peers,
            label_column=label_column,
            peers_per_round=peers_per_round,
            volunteers=volunteers,
            workers=workers,
            threads=threads,
            on_round=on_round,
            init_weights=spec_opts.init_weights,
        )
        if not json_out:
            live.update(render_watch(_progress(result.state, seen, total, peers)), refresh=True)
    if output is not None and result.final_pt is not None:
        output.write_bytes(result.final_pt)
    if json_out:
        echo_json(
            {
                **result.summary(),
                "peers": peers,
                "model": str(output) if output is not None and result.final_pt else None,
                "per_round": [vars(r) for r in result.rounds],
            }
        )
    elif output is not None and result.final_pt is not None:
        state.err.print(f"final model written to {output}")
    if result.state != "completed":
        state.err.print(Text(f"simulation {result.state}: {result.error}", style="red"))
        raise typer.Exit(EXIT_FAILED)
