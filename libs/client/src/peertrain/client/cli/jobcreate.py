"""``peertrain job create | rerun | schema``: submitting jobs (or only checking them)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from peertrain.client.sync import Client

from .jobspec import Sets, apply_sets, build_spec, init_from, merge_flags, rerun_spec
from .output import JsonFlag, echo_json
from .shortids import DATASET, JOB, PEER, resolve
from .specoptions import SpecOptions, spec_options
from .state import CliState, state_of

__all__ = ["create", "rerun", "schema"]

DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Have the server check the job (dataset, peers, specs, quota); create nothing.",
    ),
]
InitFromOption = Annotated[
    str | None,
    typer.Option(
        "--init-from",
        metavar="JOB[:vR]",
        help="Start from that job's model version (default: its newest), not fresh weights.",
    ),
]


def submit(state: CliState, spec: dict[str, Any], *, dry_run: bool, json_out: bool) -> None:
    """Create the job (prints its id), or with ``dry_run`` have the server check it and
    print the job it would create."""
    with state.client() as pt:
        if dry_run:
            checked = pt.check_job(spec)
        else:
            job_id = pt.create_job(spec)
    if dry_run:
        if not json_out:
            peers = checked.get("peers") or []
            state.err.print(
                Text(
                    f"the job is valid; nothing was created. It would run on {len(peers)} "
                    f"peer(s): {', '.join(peers)}",
                    style="green",
                )
            )
        echo_json(checked)
        return
    if json_out:
        echo_json({"job_id": job_id})
        return
    state.err.print(f"created job [bold]{spec.get('name')}[/bold] (`peertrain job watch {job_id}`)")
    typer.echo(job_id)


@spec_options
def create(
    ctx: typer.Context,
    spec_opts: SpecOptions,
    name: Annotated[str | None, typer.Option(help="A name for the job.")] = None,
    dataset: Annotated[
        str | None, typer.Option("--dataset", "-d", help="Dataset id (or short id).")
    ] = None,
    peer: Annotated[
        list[str] | None, typer.Option("--peer", help="A peer id or short id (repeatable).")
    ] = None,
    count: Annotated[int | None, typer.Option(min=1, help="Or: select N active peers.")] = None,
    device: Annotated[str | None, typer.Option(help="Selection filter: cpu|cuda|mps")] = None,
    min_memory_gb: Annotated[float | None, typer.Option(help="Selection filter.")] = None,
    init: InitFromOption = None,
    dry_run: DryRun = False,
    json_out: JsonFlag = False,
) -> None:
    """Create a training job from flags and/or a config file; prints the job id.

    The model, training, aggregation and sharding options are `simulate`'s too; a
    model nobody names is an mlp. Ids may be short (a unique start or end). Every
    problem the server finds is reported at once. `peertrain job schema` prints the
    JSON Schema a job file follows.
    """
    state = state_of(ctx)
    spec = merge_flags(spec_opts.spec(), {"name": name, "dataset": dataset})
    spec = build_spec(spec, peers=peer, count=count, device=device, min_memory_gb=min_memory_gb)
    with state.client() as pt:
        # Unknown ones go as given: the server names every problem of a request at once.
        spec["dataset_id"] = resolve(pt, DATASET, str(spec["dataset_id"]), unknown_ok=True)
        if spec.get("peers"):
            spec["peers"] = [resolve(pt, PEER, str(p), unknown_ok=True) for p in spec["peers"]]
        if init:
            spec["init_from"] = init_from(init, partial(resolve, pt, JOB))
        spec_opts.with_model(spec, partial(_input_shape, pt, spec))
        if spec_opts.init_weights is not None:
            uploaded = pt.upload_weights(spec_opts.init_weights)
            state.err.print(
                f"uploaded {spec_opts.init_weights.name}: {len(uploaded['tensors'])} tensors, "
                f"{uploaded['parameters']:,} values (weights {uploaded['weights_id']})"
            )
            spec["init_weights"] = uploaded["weights_id"]
    submit(state, spec, dry_run=dry_run, json_out=json_out)


def _input_shape(pt: Client, spec: dict[str, Any]) -> list[int]:
    """One sample's shape in the job's dataset (a module is checked on such input)."""
    dataset_id = str(spec["dataset_id"])
    shape = pt.get_dataset(dataset_id).get("input_shape")
    if not shape:
        raise typer.BadParameter(
            f"dataset {dataset_id} is not validated yet: its input shape is unknown",
            param_hint="--model",
        )
    return [int(d) for d in shape]


def rerun(
    ctx: typer.Context,
    job_id: str,
    sets: Sets = None,
    name: Annotated[str | None, typer.Option(help="Default: <name>-rerun.")] = None,
    init: InitFromOption = None,
    dry_run: DryRun = False,
    json_out: JsonFlag = False,
) -> None:
    """Create a job like JOB_ID (same dataset, peers and specs), with --set changes;
    --init-from JOB_ID continues training from its model."""
    state = state_of(ctx)
    with state.client() as pt:
        job = pt.get_job(resolve(pt, JOB, job_id))
        spec = apply_sets(rerun_spec(job), sets or [])
        if name:
            spec["name"] = name
        if init:
            spec["init_from"] = init_from(init, partial(resolve, pt, JOB))
    submit(state, spec, dry_run=dry_run, json_out=json_out)


def schema(
    ctx: typer.Context,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write it here (default: stdout).")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """The JSON Schema of a job file (job.yaml / job.json), from the server.

    E.g. with the YAML language server: `# yaml-language-server: $schema=job.schema.json`.
    """
    state = state_of(ctx)
    with state.client() as pt:
        found = pt.job_schema()
    if output is None:
        echo_json(found)
        return
    output.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    if json_out:
        echo_json({"path": str(output)})
    else:
        state.err.print(f"saved {output}")
