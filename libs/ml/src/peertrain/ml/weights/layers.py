"""Stateful layers in a state dict: which tensors are buffers, and FedBN's local layers.

One rule for every runtime (the aggregator, the peer runtime, the simulator):

* :func:`buffer_names`: the state dict's buffers (BatchNorm's ``running_mean``,
  ``running_var``, ``num_batches_tracked``), which aggregation averages plainly;
* :func:`batch_norm_names`: every tensor of every BatchNorm layer (its ``weight`` and
  ``bias`` too), which ``training.batch_norm: "local"`` (FedBN, Li et al., 2021) keeps
  on each peer between rounds: :func:`use_local_layers` before training,
  :func:`keep_local_layers` after it.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from .delta import compute_delta

__all__ = ["batch_norm_names", "buffer_names", "keep_local_layers", "use_local_layers"]


def buffer_names(model: nn.Module) -> frozenset[str]:
    """The state-dict keys of ``model`` that are buffers (persistent ones: a
    non-persistent buffer is not in the state dict)."""
    keys = set(model.state_dict(keep_vars=True))
    return frozenset(name for name, _ in model.named_buffers() if name in keys)


def batch_norm_names(model: nn.Module) -> frozenset[str]:
    """The state-dict keys of every BatchNorm layer of ``model`` (parameters and
    buffers), found by type (``torch.nn.modules.batchnorm._BatchNorm``)."""
    names: set[str] = set()
    for prefix, module in model.named_modules():
        if isinstance(module, _BatchNorm):
            for key in module.state_dict(keep_vars=True):
                names.add(f"{prefix}.{key}" if prefix else key)
    return frozenset(names)


def use_local_layers(
    model: nn.Module, local: Mapping[str, torch.Tensor] | None
) -> dict[str, torch.Tensor]:
    """FedBN, before training: load the peer's own BatchNorm tensors into ``model``
    (which holds the received global version) in place of the global ones.

    Parameters
    ----------
    model
        The model with the received version's weights loaded.
    local
        What :func:`keep_local_layers` returned after this peer's last round of the
        job; ``None`` (a first round, or a peer that restarted): the global values are
        kept, and become this peer's from now on.

    Returns
    -------
    dict of str to Tensor
        The received global values of the BatchNorm tensors (on the CPU), for
        :func:`keep_local_layers`.

    Raises
    ------
    ValueError
        When ``local`` holds other tensors than the model's BatchNorm layers.
    """
    names = batch_norm_names(model)
    state = model.state_dict()
    received = {name: state[name].detach().cpu().clone() for name in sorted(names)}
    if local is not None:
        if set(local) != names:
            raise ValueError("the kept BatchNorm tensors are not this model's")
        with torch.no_grad():
            for name, tensor in local.items():
                state[name].copy_(tensor)
    return received


def keep_local_layers(
    model: nn.Module, delta: Mapping[str, torch.Tensor], received: Mapping[str, torch.Tensor]
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """FedBN, after training: the peer's BatchNorm tensors to keep, and the delta
    relative to the *received* version (as every update is).

    The delta's BatchNorm entries become ``trained - received``: the aggregate of the
    deltas makes the global BatchNorm layers the (weighted) mean of the peers' own.

    Returns
    -------
    tuple
        ``(delta, local)``: the update to send, and the tensors to pass to
        :func:`use_local_layers` in this peer's next round of the job.
    """
    state = model.state_dict()
    local = {name: state[name].detach().cpu().clone() for name in received}
    rebased = dict(delta)
    rebased.update(compute_delta(local, received))
    return rebased, local
