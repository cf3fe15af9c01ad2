"""The job-spec options ``job create`` and ``simulate`` share: one set, one meaning.

``--config``, ``--set``, the model (``--arch``, ``--model-opt``, ``--model``,
``--init-weights``), training, aggregation and sharding flags. A command decorated with
:func:`spec_options` gets them all as one :class:`SpecOptions` argument named
``spec_opts``; nothing is defaulted here (a field nobody gave is left to the job's own
default, the same for both: an ``mlp`` when no model is named).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from .jobspec import SECTIONS, apply_sets, load_config, merge_flags
from .modelfile import model_from_file

__all__ = ["SpecOptions", "spec_options"]

_T = "training"
_A = "aggregation"
_S = "sharding"
_M = "model"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SpecOptions:
    """What the shared options were given (``None``: not given)."""

    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="A job.yaml or job.json to start from.")
    ] = None
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE, e.g. training.lr=0.01 (repeatable)."),
    ] = None
    arch: Annotated[
        str | None,
        typer.Option(
            help="logreg, mlp (the default), cnn or torchvision (with --model-opt name=resnet18)",
            rich_help_panel=_M,
        ),
    ] = None
    model_opt: Annotated[
        list[str] | None,
        typer.Option("--model-opt", help="KEY=VALUE model field (repeatable)", rich_help_panel=_M),
    ] = None
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="FILE | FILE.py:NAME",
            help="The model: a spec file (JSON/YAML, e.g. a graph), or your own nn.Module, "
            "NAME in FILE.py (a class or function called without arguments), turned into a "
            "graph of standard layers here (needs torch and peertrain-ml). Not with --arch.",
            rich_help_panel=_M,
        ),
    ] = None
    init_weights: Annotated[
        Path | None,
        typer.Option(
            "--init-weights",
            help="Start from these weights (safetensors, or a .pt state dict), checked "
            "against the model (names, shapes, dtypes).",
            rich_help_panel=_M,
        ),
    ] = None
    rounds: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None
    local_epochs: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None
    batch_size: Annotated[int | None, typer.Option(min=1, rich_help_panel=_T)] = None
    lr: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None
    optimizer: Annotated[str | None, typer.Option(rich_help_panel=_T)] = None
    momentum: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None
    weight_decay: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None
    seed: Annotated[int | None, typer.Option(rich_help_panel=_T)] = None
    proximal_mu: Annotated[float | None, typer.Option(rich_help_panel=_T)] = None
    strategy: Annotated[str | None, typer.Option(rich_help_panel=_A)] = None
    min_peers: Annotated[int | None, typer.Option(min=1, rich_help_panel=_A)] = None
    round_deadline: Annotated[float | None, typer.Option(help="Seconds.", rich_help_panel=_A)] = (
        None
    )
    server_lr: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None
    trim_fraction: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None
    max_update_norm: Annotated[float | None, typer.Option(rich_help_panel=_A)] = None
    sharding: Annotated[
        str | None, typer.Option(help="iid, stratified or dirichlet", rich_help_panel=_S)
    ] = None
    alpha: Annotated[float | None, typer.Option(rich_help_panel=_S)] = None

    def spec(self) -> dict[str, Any]:
        """The job spec these options give: the ``--config`` file, with ``--set`` and
        then the flags applied (no ``--model`` yet: see :meth:`with_model`)."""
        if self.model is not None and self.arch is not None:
            raise typer.BadParameter("give --model or --arch, not both", param_hint="--model")
        base = apply_sets(load_config(self.config) if self.config else {}, self.sets or [])
        flags = {f.name: getattr(self, f.name) for f in fields(self) if f.name in SECTIONS}
        return merge_flags(base, flags, self.model_opt)

    def with_model(self, spec: dict[str, Any], input_shape: Callable[[], list[int]]) -> None:
        """Put ``--model`` in ``spec``; a module is traced on ``input_shape()``."""
        if self.model is not None:
            spec["model"] = model_from_file(self.model, input_shape())


_NAMES = [f.name for f in fields(SpecOptions)]


def spec_options(command: F) -> F:
    """``command`` with every :class:`SpecOptions` option, passed to it as ``spec_opts``."""
    hints = inspect.get_annotations(SpecOptions, eval_str=True)
    own = inspect.signature(command, eval_str=True)
    params = [p for p in own.parameters.values() if p.name != "spec_opts"]
    shared = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=hints[name]
        )
        for name in _NAMES
    ]
    # typer passes every parameter by name: keyword-only, they may come in any order.
    own_params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name, None) for name in _NAMES}
        return command(*args, spec_opts=SpecOptions(**given), **kwargs)

    wrapper.__signature__ = own.replace(parameters=[*own_params, *shared])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        p.name: p.annotation
        for p in wrapper.__signature__.parameters.values()  # type: ignore[attr-defined]
    }
    return wrapper  # type: ignore[return-value]
