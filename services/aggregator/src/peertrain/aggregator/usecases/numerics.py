"""The torch side of the aggregator: blocking functions, run with ``asyncio.to_thread``.

Nothing here touches the network or the log; everything numeric comes from
:mod:`peertrain.ml`. Bytes from peers are only ever read as safetensors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from peertrain.aggregator.domain import UpdateRefused, codes
from peertrain.common.events.training import JobConfigured
from peertrain.common.specs import CompressionSpec
from peertrain.ml.aggregation import RoundAccumulator, Strategy, make_strategy
from peertrain.ml.device import limit_threads
from peertrain.ml.errors import NotSafetensors, UpdateInvalid
from peertrain.ml.export.write import final_pt_bytes, final_safetensors_bytes
from peertrain.ml.training import EvalMetrics, Inputs, evaluate, read_samples
from peertrain.ml.weights import (
    buffer_names,
    l2_norm,
    state_from_bytes,
    state_to_bytes,
)
from peertrain.ml.weights.compression import (
    CompressionInvalid,
    load_encoded_update,
    max_encoded_bytes,
)
from peertrain.ml.zoo import build_model

__all__ = [
    "RoundWork",
    "State",
    "clipped",
    "decode_update",
    "eval_threads",
    "evaluate_state",
    "export_file",
    "final_files",
    "initial_state",
    "model_buffers",
    "new_strategy",
    "non_finite",
    "state_nbytes",
]

State = dict[str, torch.Tensor]

SMALL_EVALUATION = 1 << 28
"""Parameters x holdout rows below which an evaluation runs on one thread."""
CORES = torch.get_num_threads()
"""Torch's own thread count in this process (the machine's cores), before any change."""


def eval_threads(parameters: int, rows: int, setting: int | None, cores: int = CORES) -> int:
    """The CPU threads a holdout evaluation runs on: ``setting`` when given; else one
    for a small evaluation (parameters x rows below :data:`SMALL_EVALUATION`: a few
    milliseconds of work), the cores for a larger one.

    A small model's forward pass split over threads waits for each to be scheduled: on
    a busy 2-core machine the digits MLP's evaluation took 184 ms at the 90th
    percentile on 2 threads, 0.13 ms on one.
    """
    if setting is not None:
        return setting
    return 1 if parameters * rows < SMALL_EVALUATION else cores


def model_buffers(configured: JobConfigured) -> frozenset[str]:
    """The state dict's buffers (BatchNorm's running statistics and counts) of the job's
    model, from the model built on the ``meta`` device (no memory, no initialisation)."""
    with torch.device("meta"):
        model = build_model(configured.model, configured.feature_spec)
    return buffer_names(model)


def new_strategy(
    configured: JobConfigured, *, server_state: bytes | None, spill_dir: Path
) -> Strategy:
    """The job's strategy, with the server state stored after the base version; it
    averages the model's buffers plainly (:class:`peertrain.ml.aggregation.base.Setup`)."""
    strategy = make_strategy(
        configured.aggregation,
        training=configured.training,
        spill_dir=spill_dir,
        buffers=model_buffers(configured),
    )
    if server_state is not None:
        strategy.load_state_bytes(server_state)
    return strategy


def initial_state(configured: JobConfigured, source: bytes | None = None) -> bytes:
    """Version 0: the model built from the job's spec with ``training.seed``; or, for a
    job started from another's model version, that version's weights (``source``),
    once they are checked to be exactly this model's tensors.

    Raises
    ------
    UpdateRefused
        ``source`` is not safetensors, or not this model's tensors (names, shapes,
        dtypes) with finite values.
    """
    model = build_model(configured.model, configured.feature_spec, seed=configured.training.seed)
    reference = model.state_dict()
    if source is None:
        return state_to_bytes(reference)
    try:
        weights = state_from_bytes(source)
    except NotSafetensors as exc:
        raise UpdateRefused(codes.NOT_SAFETENSORS, f"not a safetensors file: {exc}") from None
    expected = {k: (tuple(t.shape), t.dtype) for k, t in reference.items()}
    found = {k: (tuple(t.shape), t.dtype) for k, t in weights.items()}
    if found != expected:
        raise UpdateRefused(codes.WRONG_TENSORS, "the source version is not this model's tensors")
    if not all(bool(torch.isfinite(t).all()) for t in weights.values()):
        raise UpdateRefused(codes.NON_FINITE, "the source version has non-finite values")
    return state_to_bytes({k: weights[k] for k in reference})


_DENSE = CompressionSpec()


def state_nbytes(state: Mapping[str, torch.Tensor], compression: CompressionSpec = _DENSE) -> int:
    """Bytes of the tensors' data of an update of this model encoded as ``compression``
    (the most it may weigh, header aside; float32 by default)."""
    return max_encoded_bytes(state, compression)


def decode_update(
    data: bytes,
    reference: Mapping[str, torch.Tensor],
    max_norm: float,
    compression: CompressionSpec = _DENSE,
) -> State:
    """Decode an update (encoded as the job's ``compression``) into the dense float32
    delta of ``reference``, then check it; refusals carry a machine-readable code.

    Raises
    ------
    UpdateRefused
        ``not_safetensors``, ``bad_encoding``, ``wrong_tensors``, ``non_finite`` or
        ``norm_too_large``.
    """
    try:
        return load_encoded_update(data, reference, compression, max_norm=max_norm)
    except NotSafetensors as exc:
        raise UpdateRefused(codes.NOT_SAFETENSORS, f"not a safetensors file: {exc}") from None
    except CompressionInvalid as exc:
        raise UpdateRefused(codes.BAD_ENCODING, str(exc)[:1000]) from None
    except UpdateInvalid as exc:
        reason = "; ".join(exc.problems)[:1000]
        raise UpdateRefused(codes.refusal_code(exc.problem_codes), reason) from None


def clipped(
    update: Mapping[str, torch.Tensor], factor: float, buffers: Iterable[str] = ()
) -> State:
    """``update`` with its floating-point tensors scaled by ``factor`` (norm clipping).

    ``buffers`` (BatchNorm's running statistics) are left as they are: they are
    averaged plainly, so the global statistics stay the mean of the peers' own, never
    pulled towards the old ones. Their values still count in the norm the clipping
    bound is measured with, and are bounded by ``max_update_norm`` and refused when
    not finite, as every tensor is.
    """
    keep = frozenset(buffers)
    return {
        name: t * torch.tensor(factor, dtype=t.dtype)
        if t.is_floating_point() and name not in keep
        else t
        for name, t in update.items()
    }


def update_norm(update: Mapping[str, torch.Tensor]) -> float:
    """The update's L2 norm (recorded with ``update.accepted``): over its floating-point
    tensors, running statistics included (integer counters are left out)."""
    return float(l2_norm(update))


@dataclass
class RoundWork:
    """A round attempt being folded as its updates arrive (memory O(model))."""

    round: int
    attempt: int
    strategy: Strategy
    accumulator: RoundAccumulator

    @classmethod
    def begin(
        cls,
        configured: JobConfigured,
        round_: int,
        attempt: int,
        base: Mapping[str, torch.Tensor],
        *,
        server_state: bytes | None,
        spill_dir: Path,
    ) -> RoundWork:
        """Start folding round ``round_`` on top of ``base`` (its model version)."""
        strategy = new_strategy(configured, server_state=server_state, spill_dir=spill_dir)
        acc = strategy.begin_round(base, reference_weight=configured.reference_weight)
        return cls(round_, attempt, strategy, acc)

    def keys(self) -> set[str]:
        """The update keys folded so far."""
        return set(self.accumulator.keys)

    def close(self) -> None:
        """Release what the round holds (spilled updates)."""
        self.accumulator.close()


def load_holdout(data: bytes) -> tuple[torch.Tensor, torch.Tensor]:
    """The holdout ``.npz`` (``X`` float32 or uint8 pixels, ``y`` int64), never
    unpickling anything."""
    return read_samples(data)


def evaluate_state(
    configured: JobConfigured,
    state: Mapping[str, torch.Tensor],
    holdout: tuple[torch.Tensor, torch.Tensor],
    *,
    device: str,
    batch_size: int,
    threads: int | None = None,
) -> EvalMetrics:
    """Loss, accuracy and per-class accuracy of ``state`` on the job's holdout, on the
    CPU threads :func:`eval_threads` gives for ``threads`` (a process-wide setting)."""
    x, y = holdout
    model = build_model(configured.model, configured.feature_spec)
    model.load_state_dict(dict(state))
    parameters = sum(t.numel() for t in state.values())
    limit_threads(eval_threads(parameters, len(y), threads))
    inputs = Inputs.of(configured.feature_spec)
    return evaluate(model, x, y, batch_size=batch_size, device=device, inputs=inputs)


def final_files(
    configured: JobConfigured, state: Mapping[str, torch.Tensor]
) -> tuple[bytes, bytes]:
    """``final.pt`` and ``final.safetensors`` bytes."""
    spec, features = configured.model, configured.feature_spec
    return final_pt_bytes(spec, features, state), final_safetensors_bytes(spec, features, state)


def export_file(configured: JobConfigured, state: Mapping[str, torch.Tensor], fmt: str) -> bytes:
    """One file as ``final.pt`` (``fmt="pt"``) or ``final.safetensors`` is written, of
    any weights of the job's model: the same specs and preprocessing ride along."""
    spec, features = configured.model, configured.feature_spec
    if fmt == "pt":
        return final_pt_bytes(spec, features, state)
    return final_safetensors_bytes(spec, features, state)


def non_finite(state: Mapping[str, torch.Tensor]) -> str | None:
    """Why a model version's weights cannot be used (``None``: all finite)."""
    bad = sorted(
        name
        for name, t in state.items()
        if t.is_floating_point() and not bool(torch.isfinite(t).all())
    )
    if not bad:
        return None
    return f"has non-finite weights (in {', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''})"


def load_state(data: bytes) -> State:
    """A stored model version (our own safetensors)."""
    return state_from_bytes(data)
