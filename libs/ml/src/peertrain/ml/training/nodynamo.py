"""torch's optimizers without importing ``torch._dynamo`` (several seconds of CPU).

A process's first ``torch.optim`` call imports ``torch._dynamo``: about 9 s of CPU on
the shared 2-core machine, paid by every volunteer's peer on its first task, by every
simulation and by every test that trains. torch needs it only to keep compiled graphs
(``torch.compile``) from tracing into the optimizer, and nothing in PeerTrain compiles:
peers, the simulation and the aggregator run eagerly, where the wrappers change
nothing. Two wrappers import it:

- ``Optimizer.add_param_group``, ``zero_grad``, ``state_dict``, ... are marked
  ``torch._disable_dynamo``, which imports ``torch._dynamo`` on the first call only to
  wrap the method in ``torch._dynamo.disable``; outside a compiled region that runs the
  method exactly. :func:`skip_dynamo_import` gives the wrapper its answer in advance,
  through the cache attribute ``torch/_compile.py`` itself reads (``__dynamo_disable``).
- ``step`` is wrapped to run without autograd and with a graph break on each side (a
  no-op in eager mode). :func:`step` runs the optimizer's own step the same way:
  without autograd, skipping only the wrapper (and the step hooks, which PeerTrain does
  not register).

If a torch release changes either wrapper, the hints are not found and torch imports
``torch._dynamo`` as before: slower, never different. The bits of what peers and the
simulation train are pinned by tests (``libs/ml/tests``, ``libs/sim/tests``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch

__all__ = ["skip_dynamo_import", "step"]

_COMPILE = str(Path("torch") / "_compile.py")


def _disabled_function(member: Any) -> Any | None:
    """The original function under a ``torch._disable_dynamo`` wrapper, else ``None``."""
    code = getattr(member, "__code__", None)
    original = getattr(member, "__wrapped__", None)
    if code is None or original is None or not code.co_filename.endswith(_COMPILE):
        return None
    return original


def skip_dynamo_import(*classes: type) -> None:
    """Let the ``torch._disable_dynamo`` methods of ``classes`` (and their bases) call
    their function directly, without importing ``torch._dynamo`` first."""
    for cls in classes:
        for klass in cls.__mro__:
            for member in vars(klass).values():
                original = _disabled_function(member)
                if original is not None and getattr(original, "__dynamo_disable", None) is None:
                    original.__dynamo_disable = original


def step(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.step()``, without the wrappers (one imports ``torch._dynamo``)."""
    wrapped = type(optimizer).step
    inner = inspect.unwrap(wrapped)
    if inner is wrapped or optimizer.defaults.get("differentiable", False):
        optimizer.step()
        return
    with torch.no_grad():
        inner(optimizer)


skip_dynamo_import(torch.optim.Optimizer)
