"""``--model``: a job's model from a file: a model spec (JSON/YAML, e.g. a graph), or the
researcher's own ``nn.Module`` named as ``FILE.py:NAME``, turned into a graph here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import typer

from ..modules import with_module
from .jobspec import load_config

__all__ = ["model_from_file"]


def _module_object(path: Path, name: str) -> Any:
    """``NAME`` from the researcher's own ``path`` (their code, run on their machine)."""
    if not path.is_file():
        raise typer.BadParameter(f"no file {path}", param_hint="--model")
    loaded = importlib.util.spec_from_file_location(f"peertrain_user_model_{path.stem}", path)
    if loaded is None or loaded.loader is None:
        raise typer.BadParameter(f"{path} is not a Python file", param_hint="--model")
    module = importlib.util.module_from_spec(loaded)
    sys.modules[loaded.name] = module
    loaded.loader.exec_module(module)
    factory = getattr(module, name, None)
    if factory is None:
        raise typer.BadParameter(f"{path} has no {name!r}", param_hint="--model")
    # A class (its forward is a plain function) or a factory is called; an instance is
    # the module itself.
    called = isinstance(factory, type) or (callable(factory) and not hasattr(factory, "forward"))
    return factory() if called else factory


def model_from_file(text: str, input_shape: list[int]) -> dict[str, Any]:
    """The model spec ``--model`` names: ``FILE.json``/``FILE.yaml`` as it is, or
    ``FILE.py:NAME`` (a module class or function called without arguments, or a module
    instance) as a graph, checked on an input of ``input_shape`` (the dataset's)."""
    file, sep, name = text.rpartition(":")
    if sep and file.endswith(".py") and name.isidentifier():
        import torch  # the researcher's machine has it: their module needs it

        module = _module_object(Path(file), name)
        example = torch.zeros(2, *input_shape)
        spec: dict[str, Any] = with_module({}, module, example)["model"]
        return spec
    return load_config(Path(text))
