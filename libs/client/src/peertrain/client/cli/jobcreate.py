"""``peertrain job create | rerun | schema``: submitting jobs (or only checking them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from .jobspec import (
    SECTIONS,
    Sets,
    apply_sets,
    build_spec,
    init_from,
    load_config,
    rerun_spec,
)
from .modelfile import model_from_file
from .output import JsonFlag, echo_json
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
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="FILE | FILE.py:NAME",
        help="The model: a spec file (JSON/YAML, e.g. a graph), or your own nn.Module, "
        "NAME in FILE.py (a class or function called without arguments), turned into a "
        "graph of standard layers here (needs torch and peertrain-ml). Not with --arch.",
    ),
]
InitWeightsOption = Annotated[
    Path | None,
    typer.Option(
        "--init-weights",
        help="Start from these weights (safetensors, or a .pt state dict): uploaded, then "
        "checked against the model (names, shapes, dtypes).",
    ),
]
_T = "training"
_A = "aggregation"
_FLAG_NAMES = frozenset(SECTIONS)


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


def create(
    ctx: typer.Context,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="A job.yaml or job.json to start from.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="A name for the job.")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Dataset id.")] = None,
    peer: Annotated[
        list[str] | None, typer.Option("--peer", help="A peer id (repeatable).")
    ] = None,
    count: Annotated[int | None, typer.Option(min=1, help="Or: select N active peers.")] = None,
    device: Annotated[str | None, typer.Option(help="Selection filter: cpu|cuda|mps")] = None,
    min_memory_gb: Annotated[float | None, typer.Option(help="Selection filter.")] = None,
    arch: Annotated[
        str | None,
        typer.Option(help="logreg, mlp, cnn or torchvision (with --model-opt name=resnet18)"),
    ] = None,
    model_opt: Annotated[
        list[str] | None, typer.Option("--model-opt", help="KEY=VALUE model field (repeatable)")
    ] = None,
    rounds: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None,
    local_epochs: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None,
    lr: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    optimizer: Annotated[str | None, typer.Option(rich_help_panel=_T)] = None,
    momentum: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    weight_decay: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    seed: Annotated[int | None, typer.Option(rich_help_panel=_T)] = None,
    proximal_mu: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None,
    strategy: Annotated[str | None, typer.Option(rich_help_panel=_A)] = None,
    min_peers: Annotated[int | None, typer.Option(min=1, rich_help_panel=_A)] = None,
    round_deadline: Annotated[
        float | None, typer.Option(help="Seconds.", rich_help_panel=_A)
    ] = None,
    server_lr: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None,
    trim_fraction: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None,
    max_update_norm: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None,
    sharding: Annotated[
        str | None, typer.Option(help="iid, stratified or dirichlet", rich_help_panel="sharding")
    ] = None,
    alpha: Annotated[float | None, typer.Option(rich_help_panel="sharding")] = None,
    sets: Sets = None,
    init: InitFromOption = None,
    model: ModelOption = None,
    init_weights: InitWeightsOption = None,
    dry_run: DryRun = False,
    json_out: JsonFlag = False,
) -> None:
    """Create a training job from flags and/or a config file; prints the job id.

    Every problem the server finds is reported at once. `peertrain job schema` prints
    the JSON Schema a job file follows.
    """
    flags = {k: v for k, v in locals().items() if k in _FLAG_NAMES}
    base = apply_sets(load_config(config) if config else {}, sets or [])
    spec = build_spec(
        base,
        flags,
        peers=peer,
        count=count,
        device=device,
        min_memory_gb=min_memory_gb,
        model_opts=model_opt,
    )
    if init:
        spec["init_from"] = init_from(init)
    state = state_of(ctx)
    if model is not None:
        if arch is not None:
            raise typer.BadParameter("give --model or --arch, not both", param_hint="--model")
        spec["model"] = model_from_file(model, _input_shape(state, spec))
    if init_weights is not None:
        with state.client() as pt:
            uploaded = pt.upload_weights(init_weights)
        state.err.print(
            f"uploaded {init_weights.name}: {len(uploaded['tensors'])} tensors, "
            f"{uploaded['parameters']:,} values (weights {uploaded['weights_id']})"
        )
        spec["init_weights"] = uploaded["weights_id"]
    submit(state, spec, dry_run=dry_run, json_out=json_out)


def _input_shape(state: CliState, spec: dict[str, Any]) -> list[int]:
    """One sample's shape in the job's dataset (a module is checked on such input)."""
    dataset_id = spec.get("dataset_id")
    if not dataset_id:
        raise typer.BadParameter("a module needs the dataset (--dataset)", param_hint="--model")
    with state.client() as pt:
        dataset = pt.get_dataset(str(dataset_id))
    shape = dataset.get("input_shape")
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
        job = pt.get_job(job_id)
    spec = apply_sets(rerun_spec(job), sets or [])
    if name:
        spec["name"] = name
    if init:
        spec["init_from"] = init_from(init)
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
