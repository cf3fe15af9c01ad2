"""A virtual peer's local training: the peer runtime's own call, in or out of process.

:func:`train_task` does what :class:`peertrain.peer.trainer.Trainer` does with a task
once the model and the shard are fetched: build the zoo model, load the version's
weights, :func:`peertrain.ml.training.train_local` with the task's ``training`` block,
round (its learning rate) and seed (``derive_seed(job seed, round, shard)``), and the
delta encoded as ``training.compression`` says
(:func:`peertrain.ml.weights.compression.compress_update`, the peer's own call); with
``training.batch_norm: local`` (FedBN), the virtual peer's own BatchNorm layers, and
with ``topk``, its residual (error feedback), are carried in :class:`TaskInput` and
:class:`Trained` so that worker processes hold no state, as the trainer keeps them.
Same inputs, same calls, same bits.

One difference, which changes no bit: a process builds each zoo model once and loads
every task's weights into it, where a peer builds one per task. Loading (``strict``)
overwrites every parameter and buffer, the optimizer is made per call and clears the
gradients before the first backward, so what a task trains is the version's weights
alone; building (its seeded initialisation, then thrown away) was half a millisecond
per task.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.specs import ModelSpec, TrainingParams
from peertrain.ml.device import select_device
from peertrain.ml.training import Inputs, train_local
from peertrain.ml.weights import keep_local_layers, state_from_bytes, use_local_layers
from peertrain.ml.weights.compression import compress_update
from peertrain.ml.zoo import build_model

__all__ = ["TaskInput", "Trained", "make_pool", "train_many", "train_task"]


@dataclass(frozen=True)
class TaskInput:
    """What a peer has in hand for one task (picklable, for worker processes)."""

    model_bytes: bytes
    x: NDArray[np.float32]
    y: NDArray[np.int64]
    model_spec: ModelSpec
    feature_spec: FeatureSpec
    training: TrainingParams
    seed: int
    round: int
    device: str | None = None
    local: dict[str, torch.Tensor] | None = None
    """With ``training.batch_norm: local`` (FedBN): this peer's own BatchNorm tensors
    from its last round of the job (``None`` at first: it starts from the global)."""
    residual: dict[str, torch.Tensor] | None = None
    """With ``topk`` compression: what this peer's earlier updates of the shard left out
    (``None`` at first)."""


@dataclass(frozen=True)
class Trained:
    """The outcome: the delta, the update as it travels, and the metrics a peer announces."""

    delta: dict[str, torch.Tensor]
    samples: int
    loss: float
    accuracy: float
    duration_s: float
    local: dict[str, torch.Tensor] | None = None
    """With FedBN: the BatchNorm tensors the peer keeps for its next round."""
    sent: dict[str, torch.Tensor] | None = None
    """The delta encoded as ``training.compression`` says (what is uploaded)."""
    residual: dict[str, torch.Tensor] | None = None
    """With ``topk`` compression: what the peer keeps for its next update of the shard."""


_models: dict[tuple[str, str], torch.nn.Module] = {}


def _model(spec: ModelSpec, features: FeatureSpec) -> torch.nn.Module:
    """This process's model for ``spec`` on ``features`` (see the module docstring);
    keyed by their JSON, since a layer graph's args are mappings (unhashable)."""
    key = (spec.model_dump_json(), features.model_dump_json())
    model = _models.get(key)
    if model is None:
        model = _models[key] = build_model(spec, features)
    return model


def train_task(task: TaskInput, threads: int | None = None) -> Trained:
    """Train one task as the peer runtime's trainer does."""
    state = state_from_bytes(task.model_bytes)
    model = _model(task.model_spec, task.feature_spec)
    model.load_state_dict(state, strict=True)
    received = None
    if task.training.batch_norm == "local":
        received = use_local_layers(model, task.local)
    result = train_local(
        model,
        torch.from_numpy(task.x),
        torch.from_numpy(task.y),
        task.training,
        seed=task.seed,
        device=select_device(task.device),
        threads=threads,
        round_=task.round,
        inputs=Inputs.of(task.feature_spec, task.training),
    )
    delta, local = result.delta, None
    if received is not None:
        delta, local = keep_local_layers(model, delta, received)
    encoded = compress_update(delta, task.training.compression, task.residual)
    final = result.final
    return Trained(
        delta,
        result.samples,
        final.loss,
        final.accuracy,
        result.duration_s,
        local,
        sent=encoded.tensors,
        residual=encoded.residual,
    )


def _init_worker(threads: int) -> None:
    torch.set_num_threads(threads)


def make_pool(workers: int, threads: int | None = None) -> Executor:
    """Worker processes for training, each with a bounded number of torch threads
    (default: the CPUs shared out, at least one)."""
    per = threads or max(1, (os.cpu_count() or 1) // workers)
    return ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(per,))


def _train_in_worker(task: TaskInput) -> Trained:
    return train_task(task)


def train_many(tasks: list[TaskInput], pool: Executor | None) -> list[Trained]:
    """Train ``tasks`` (in order), in ``pool`` when there is one."""
    if pool is None or len(tasks) < 2:
        return [train_task(t) for t in tasks]
    chunk = max(1, len(tasks) // (4 * getattr(pool, "_max_workers", 1)))
    return list(pool.map(_train_in_worker, tasks, chunksize=chunk))
