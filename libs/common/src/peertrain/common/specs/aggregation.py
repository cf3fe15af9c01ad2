"""A job's ``aggregation`` block, validated (the strategies live in peertrain.ml)."""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import SpecInvalid
from .model import spec_errors

__all__ = [
    "AGGREGATION_MODES",
    "AGGREGATION_STRATEGIES",
    "MIN_UPDATE_NORM",
    "AggregationMode",
    "AggregationName",
    "AggregationSpec",
    "parse_aggregation_spec",
]

AggregationName = Literal["fedavg", "fedprox", "fedadam", "trimmed_mean", "median"]
"""The aggregation strategies a job may name (``peertrain.ml.aggregation`` has one class
for each, registered under the same name)."""

AGGREGATION_STRATEGIES: tuple[str, ...] = get_args(AggregationName)

AggregationMode = Literal["sync", "async"]
"""``sync``: a round waits for its peers; ``async``: buffered asynchronous rounds (FedBuff,
Nguyen et al. 2022), a new version every ``buffer_size`` accepted updates."""

AGGREGATION_MODES: tuple[str, ...] = get_args(AggregationMode)

MIN_UPDATE_NORM = 100.0
"""The default ``max_update_norm`` of a model of up to 1,111 values, and the bound of a
block that was never sized for its model (see :meth:`AggregationSpec.sized_for`)."""

UPDATE_NORM_PER_ROOT = 3.0
"""A sized bound is this many times the root of the model's number of values: an update
moving every value by 3 on average (the root mean square of a value's change). Honest
updates of a ResNet-18 after a local epoch at lr 0.05 with momentum move them by about
1.5 (L2 norms near 4,900 over 11.2 million values)."""


class AggregationSpec(BaseModel):
    """The job's ``aggregation`` block.

    Attributes
    ----------
    strategy
        ``fedavg``, ``fedprox``, ``fedadam``, ``trimmed_mean`` or ``median``.
    min_peers
        Fewest accepted updates a round may close with (the orchestrator's rule).
    round_deadline_s
        Seconds a round stays open (the orchestrator's rule).
    peer_wait_s
        Seconds a round (or a retry) waits for ``min_peers`` of the job's peers to be
        online before the job fails (``too_few_peers_online``); the orchestrator's rule.
    server_lr
        Server step; ``None`` for the strategy's default (1.0, or 0.1 for FedAdam).
    trim_fraction
        Share trimmed at each end by ``trimmed_mean``.
    max_update_norm
        Updates with a larger L2 norm are rejected; also sizes the exact accumulator.
        ``None`` (the default): sized for the model when the job is configured,
        ``max(100, 3 * sqrt(values))`` for a model state of ``values`` numbers (an
        update moving every value by 3 on average), so a ResNet's honest updates (norms
        up to about 5,000) pass while a small model keeps 100. Read it as
        :attr:`AggregationSpec.update_bound`.
    norm_clip
        Each update a round aggregates is scaled down to at most ``norm_clip`` times the
        median L2 norm of the round's accepted updates (norm clipping, as DP-FedAvg
        does, with an adaptive bound); ``None`` turns clipping off.
    norm_outlier
        An accepted update whose norm is over ``norm_outlier`` times the median norm of
        its round's accepted updates is left out of the round's version when the round
        closes (``round.closed`` ``dropped``), and counts against its peer; ``None``
        leaves only the absolute ``max_update_norm``.
    peers_per_round
        How many of the job's peers get a task each round: a seeded sample, drawn afresh
        every round (McMahan et al.'s ``C * K``); ``None``, every peer every round. Each
        peer still trains only its own shard; ``min_peers`` counts within the sample.
    exclude_after
        A peer with this many refusals counted against it in a job (invalid updates,
        announcements for tasks not its own) is excluded from the job's later work.
    beta1, beta2, tau
        FedAdam's moment decays and adaptivity constant.
    mode
        ``sync`` (the default): every round waits for its peers. ``async``: buffered
        asynchronous rounds (FedBuff): a peer gets its next task as soon as its update
        is accepted, and a new version is built every ``buffer_size`` accepted updates,
        whatever version each started from (see ``docs/async.md``).
    buffer_size
        ``async``: accepted updates per model version (FedBuff's K); ``None``: half the
        job's peers, at least one (fixed when the job is configured).
    max_staleness
        ``async``: an update whose task started from a version more than this many
        versions older than the newest is refused (``too_stale``, not a strike) and its
        peer gets a fresh task.
    staleness_exponent
        ``async``: an update ``s`` versions stale is weighted ``samples / (1 + s) **
        staleness_exponent`` (0.5: FedBuff's ``1 / sqrt(1 + s)``; 0: staleness ignored).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: AggregationName = "fedavg"
    min_peers: int = Field(default=1, ge=1, le=10_000)
    round_deadline_s: float = Field(default=600.0, gt=0, le=7 * 24 * 3600)
    peer_wait_s: float = Field(default=300.0, gt=0, le=7 * 24 * 3600)
    server_lr: float | None = Field(default=None, gt=0, le=100)
    trim_fraction: float = Field(default=0.1, ge=0, lt=0.5)
    max_update_norm: float | None = Field(default=None, gt=0, le=1e9)
    norm_clip: float | None = Field(default=2.0, gt=0, le=1e6)
    norm_outlier: float | None = Field(default=5.0, gt=1, le=1e6)
    peers_per_round: int | None = Field(default=None, ge=1, le=100_000)
    exclude_after: int = Field(default=3, ge=1, le=10_000)
    beta1: float = Field(default=0.9, ge=0, lt=1)
    beta2: float = Field(default=0.99, ge=0, lt=1)
    tau: float = Field(default=1e-3, gt=0, le=10)
    mode: AggregationMode = "sync"
    buffer_size: int | None = Field(default=None, ge=1, le=100_000)
    max_staleness: int = Field(default=10, ge=0, le=1_000)
    staleness_exponent: float = Field(default=0.5, ge=0, le=10)

    @model_validator(mode="after")
    def _sample_holds_min_peers(self) -> AggregationSpec:
        if self.peers_per_round is not None and self.peers_per_round < self.min_peers:
            raise ValueError(
                f"peers_per_round={self.peers_per_round} is below min_peers={self.min_peers}: "
                "no round could close"
            )
        return self

    @model_validator(mode="after")
    def _async_knobs_only_async(self) -> AggregationSpec:
        if self.mode == "sync" and self.buffer_size is not None:
            raise ValueError('buffer_size applies to mode "async" only')
        if self.mode == "async" and self.peers_per_round is not None:
            raise ValueError(
                'peers_per_round applies to mode "sync" only: an asynchronous job gives '
                "every idle peer a task"
            )
        return self

    @property
    def is_async(self) -> bool:
        """Buffered asynchronous rounds (``mode: async``)."""
        return self.mode == "async"

    def buffer_for(self, peers: int) -> int:
        """``buffer_size``, or half of ``peers`` (at least one) when it is not set."""
        return self.buffer_size if self.buffer_size is not None else max(1, peers // 2)

    @property
    def update_bound(self) -> float:
        """The bound on an update's L2 norm: ``max_update_norm``, or
        :data:`MIN_UPDATE_NORM` for a block never sized for its model."""
        return MIN_UPDATE_NORM if self.max_update_norm is None else self.max_update_norm

    def sized_for(self, values: int) -> AggregationSpec:
        """The block with ``max_update_norm`` set: the job's own, else
        ``max(100, ceil(3 * sqrt(values)))`` for a model state of ``values`` numbers. The
        orchestrator writes the sized block into a job's configuration, which every
        consumer (the aggregator, the simulation) reads."""
        if self.max_update_norm is not None:
            return self
        root = math.sqrt(max(values, 0))
        bound = max(MIN_UPDATE_NORM, float(math.ceil(UPDATE_NORM_PER_ROOT * root)))
        return self.model_copy(update={"max_update_norm": bound})


def parse_aggregation_spec(value: Any) -> AggregationSpec:
    """Validate an ``aggregation`` block.

    Raises
    ------
    SpecInvalid
        With one ``{"loc", "msg"}`` item per problem in ``detail``.
    """
    if isinstance(value, AggregationSpec):
        return value
    try:
        return AggregationSpec.model_validate(value or {})
    except ValidationError as exc:
        raise SpecInvalid("the aggregation spec is not valid", detail=spec_errors(exc)) from None
