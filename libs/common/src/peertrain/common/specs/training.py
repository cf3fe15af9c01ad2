"""A job's ``training`` block, validated, and seeds derived from it."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from .augment import AugmentSpec
from .compression import CompressionSpec
from .errors import SpecInvalid
from .model import spec_errors
from .schedule import ConstantSchedule, LrSchedule

__all__ = ["ParamPrefix", "TrainingParams", "derive_seed", "matches", "parse_training_params"]


ParamPrefix = Annotated[
    str, StringConstraints(min_length=1, max_length=300, pattern=r"^[A-Za-z0-9_.]+$")
]
"""A parameter's name, or a prefix of names ending at a dot (``layer1``, ``fc.weight``)."""


def matches(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether parameter ``name`` is one of ``prefixes`` or lies under one."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


class TrainingParams(BaseModel):
    """How peers train locally (the job's ``training`` block).

    Attributes
    ----------
    rounds
        Federated rounds of the job (the orchestrator's; ignored by local training).
    local_epochs
        Passes over the local shard per round.
    batch_size, lr, optimizer, momentum, nesterov, weight_decay
        The local optimiser: ``sgd`` (with ``momentum``, and Nesterov's variant when
        ``nesterov``), ``adam`` (``weight_decay`` as an L2 term) or ``adamw`` (decoupled
        weight decay).
    lr_schedule
        How ``lr`` changes over the rounds (:func:`~peertrain.common.specs.lr_for_round`);
        the default keeps it constant.
    seed
        The job's seed; peers derive per-round seeds from it with :func:`derive_seed`.
    proximal_mu
        FedProx's proximal coefficient; 0 disables the term.
    grad_clip_norm
        Each step's gradients are scaled to at most this L2 norm (all parameters
        together); ``None``: no clipping.
    label_smoothing
        Cross-entropy's label smoothing; 0: none.
    precision
        ``bf16`` or ``fp16`` autocast (``fp16`` with a gradient scaler) on CUDA peers;
        other peers train in ``fp32``, so CPU results stay bit-identical.
    channels_last
        Image batches and convolution weights in channels-last memory, on CUDA peers.
    freeze
        Parameters left as they are (fine-tuning): each entry a parameter's name or a
        prefix of names (``layer1`` freezes ``layer1.0.conv1.weight``...).
    head, head_lr
        Parameters (names or prefixes, as ``freeze``) trained at ``head_lr`` instead of
        ``lr`` (the schedule scales both alike).
    batch_norm
        ``aggregate`` (default): BatchNorm layers (weights, biases, running statistics)
        are aggregated like every other tensor. ``local`` (FedBN, Li et al., 2021):
        each peer keeps its own BatchNorm layers between its rounds of the job (in its
        memory: a peer that restarts starts again from the global ones), trains with
        them in place of the received ones, and still sends its delta relative to the
        received version, so the global (exported) model's BatchNorm layers are the
        aggregate of the peers' own. A peer-side rule: the server aggregates as usual.
    augment
        Image augmentation of each training batch on the peers (random crop with
        padding, horizontal flip, colour jitter; :class:`~.augment.AugmentSpec`); only
        for image datasets stored as pixels. ``None``: none.
    compression
        How the peers' updates travel (:class:`~.compression.CompressionSpec`):
        ``none`` (float32, the default), ``fp16``, ``int8`` or ``topk`` (with error
        feedback kept on the peer between its rounds of the job).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int = Field(default=10, ge=1, le=10_000)
    local_epochs: int = Field(default=1, ge=1, le=1_000)
    batch_size: int = Field(default=32, ge=1, le=65_536)
    lr: float = Field(default=0.01, gt=0, le=10)
    optimizer: Literal["sgd", "adam", "adamw"] = "sgd"
    momentum: float = Field(default=0.0, ge=0, lt=1)
    nesterov: bool = False
    weight_decay: float = Field(default=0.0, ge=0, le=1)
    lr_schedule: LrSchedule = ConstantSchedule()
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    proximal_mu: float = Field(default=0.0, ge=0, le=1_000)
    grad_clip_norm: float | None = Field(default=None, gt=0, le=1e6)
    label_smoothing: float = Field(default=0.0, ge=0, lt=1)
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    channels_last: bool = False
    freeze: tuple[ParamPrefix, ...] = Field(default=(), max_length=100)
    head: tuple[ParamPrefix, ...] = Field(default=(), max_length=100)
    head_lr: float | None = Field(default=None, gt=0, le=10)
    batch_norm: Literal["aggregate", "local"] = "aggregate"
    augment: AugmentSpec | None = None
    compression: CompressionSpec = CompressionSpec()

    @model_validator(mode="after")
    def _settings_agree(self) -> TrainingParams:
        if self.nesterov and (self.optimizer != "sgd" or self.momentum <= 0):
            raise ValueError(
                "nesterov needs optimizer sgd with momentum > 0 "
                f"(got optimizer {self.optimizer}, momentum {self.momentum})"
            )
        if (self.head_lr is None) != (not self.head):
            raise ValueError("head and head_lr go together: name the head's parameters and its lr")
        schedule = self.lr_schedule
        if schedule.warmup_rounds > self.rounds:
            raise ValueError(
                f"lr_schedule.warmup_rounds={schedule.warmup_rounds} outlasts the job's "
                f"{self.rounds} rounds"
            )
        if schedule.kind == "cosine" and schedule.min_lr > self.lr:
            raise ValueError(
                f"lr_schedule.min_lr={schedule.min_lr} is above lr={self.lr}: "
                "a cosine schedule decays from lr to min_lr"
            )
        return self


def parse_training_params(value: Any) -> TrainingParams:
    """Validate a ``training`` block.

    Raises
    ------
    SpecInvalid
        With one ``{"loc", "msg"}`` item per problem in ``detail``.
    """
    if isinstance(value, TrainingParams):
        return value
    try:
        return TrainingParams.model_validate(value or {})
    except ValidationError as exc:
        raise SpecInvalid("the training spec is not valid", detail=spec_errors(exc)) from None


def derive_seed(*parts: object) -> int:
    """A seed in ``[0, 2**63)`` that is a stable function of ``parts``.

    E.g. ``derive_seed(job_seed, round_index, shard_index)``: the same on every machine
    and Python version (SHA-256, not ``hash``).
    """
    digest = hashlib.sha256("\x1f".join(repr(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)
