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
    "ASYNC_SERVER_LR",
    "MIN_UPDATE_NORM",
    "AggregationMode",
    "AggregationName",
    "AggregationSpec",
    "DeadlineRule",
    "VerifySpec",
    "parse_aggregation_spec",
]

ASYNC_SERVER_LR = 0.5
"""The server step a new asynchronous job records when it names none (FedAdam keeps its
own default, 0.1): with 1.0 a fast peer's second update of a version lands, on the next
one, on top of its first, and the model overshoots. MNIST MLP, 4 equal peers, IID,
buffer 2, after 10 versions: loss 4.42 and accuracy 0.833 with 1.0, 0.350 and 0.933 with
0.5 (a synchronous run of the same updates: 0.27 and 0.941); on ``bench-async``'s skewed
split 1.0 swings toward the fast peers' shards (docs/async.md)."""

AggregationName = Literal["fedavg", "fedprox", "fedadam", "trimmed_mean", "median"]
"""The aggregation strategies a job may name (``peertrain.ml.aggregation`` has one class
for each, registered under the same name)."""

AGGREGATION_STRATEGIES: tuple[str, ...] = get_args(AggregationName)

DeadlineRule = Literal["fixed", "adaptive"]
"""How a synchronous round's deadline is set: ``round_deadline_s`` every round, or from
the job's measured task durations (see :class:`AggregationSpec`)."""

AggregationMode = Literal["sync", "async"]
"""``sync``: a round waits for its peers; ``async``: buffered asynchronous rounds (FedBuff,
Nguyen et al. 2022), a new version every ``buffer_size`` accepted updates."""

Calibration = Literal["none", "cached"]
"""``cached``: an asynchronous version's step is calibrated with every shard's latest
update (CA2FL, Wang et al. 2024), so the shards of slow peers count in every version
and the model drifts less toward the fast peers' data."""
CALIBRATED_STRATEGIES = frozenset({"fedavg", "fedprox", "fedadam"})
"""The strategies ``calibration: cached`` works with (those that step on a weighted mean)."""

AGGREGATION_MODES: tuple[str, ...] = get_args(AggregationMode)

MIN_UPDATE_NORM = 100.0
"""The default ``max_update_norm`` of a model of up to 1,111 values, and the bound of a
block that was never sized for its model (see :meth:`AggregationSpec.sized_for`)."""

UPDATE_NORM_PER_ROOT = 3.0
"""A sized bound is this many times the root of the model's number of values: an update
moving every value by 3 on average (the root mean square of a value's change). Honest
updates of a ResNet-18 after a local epoch at lr 0.05 with momentum move them by about
1.5 (L2 norms near 4,900 over 11.2 million values)."""


class VerifySpec(BaseModel):
    """The ``aggregation.verify`` block: which tasks are trained twice, and how close two
    honest updates of one task are.

    A checked task is trained again by another of the job's online peers, from the same
    model version, shard and seed; the aggregator compares the two updates and, when
    they disagree, a third peer trains it too (the tie-break; a fourth if the third
    agrees with neither). A peer whose update the others do not confirm gets a strike
    (``check_mismatch``) and its update leaves the round for the confirmed one. Which
    tasks are checked:

    * every task of a peer with fewer than ``probation`` confirmations (a task of its own
      whose update another peer's agreed with) in the job: a newcomer's first tasks;
    * every task of a peer with a strike in the job (escalation);
    * ``share`` of the other tasks, by a seeded hash of the round and shard (and the
      task's number, in an asynchronous job).

    Checks and tie-breaks go to peers already confirmed (and never struck) where there
    are such, so a lazy checker rarely decides anything. In an asynchronous job a checked
    update joins a version only once its check confirmed it, and its peer waits for that
    before its next task (docs/checked-work.md).

    Attributes
    ----------
    share
        Share of the tasks of confirmed peers that are checked; 0 (the default) turns
        checking off altogether, probation and escalation included.
    tolerance
        The largest relative distance ``||a - b|| / max(||a||, ||b||)`` at which two
        updates of one task agree. Calibrated on honest runs: 1.4e-7 between 1 and 2
        CPU threads; a lazy update is at 0.89 (a tenth of the shard) to 1.41 (noise).
    probation
        Confirmed tasks of its own a peer needs in a job before only ``share`` of its
        tasks is checked (2: a peer honest once, then lazy, is still checked).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    share: float = Field(default=0.0, ge=0, le=1)
    tolerance: float = Field(default=1e-3, gt=0, lt=1)
    probation: int = Field(default=2, ge=0, le=1_000)

    @property
    def enabled(self) -> bool:
        """Whether any task is checked."""
        return self.share > 0


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
        Server step; ``None`` for the strategy's default (1.0, or 0.1 for FedAdam; a new
        asynchronous job records :data:`ASYNC_SERVER_LR` instead, see :meth:`for_new_job`).
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
    over_select
        Stragglers (the orchestrator's rule): a round gives out this many tasks more
        than it needs and closes on the first ``n`` accepted updates, ``n`` being
        ``peers_per_round``, or every shard but ``over_select`` when that is ``None``;
        the tasks still open then are ended (``task.lost`` ``surplus``: no strike, their
        peers are told to stop, a late update is ignored). 0 (the default): a round
        waits for every task it gave out, or its deadline.
    deadline
        ``fixed`` (the default): every round stays open ``round_deadline_s``.
        ``adaptive``: ``deadline_factor`` times the ``deadline_quantile`` of the task
        durations (task assigned to update accepted) of the job's last closed rounds,
        within ``[deadline_floor_s, round_deadline_s]``; ``round_deadline_s`` until a
        round closed with a measured task.
    deadline_quantile, deadline_factor, deadline_floor_s
        The adaptive deadline's quantile of the measured durations, its multiple of that
        quantile, and the shortest deadline it sets.
    verify
        Checked work (:class:`VerifySpec`): off unless ``verify.share`` is above 0.
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
    calibration
        ``async``: ``none`` (plain FedBuff) or ``cached``: each version steps on the
        latest update of every shard that has sent one, corrected by what the buffer's
        updates changed since their shard's previous one (CA2FL, Wang et al. 2024: the
        server keeps one update per shard). On a skewed split of uneven peers it keeps
        the slow peers' shards in every version (see ``docs/async.md``). FedAvg, FedProx
        and FedAdam only.
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
    over_select: int = Field(default=0, ge=0, le=10_000)
    deadline: DeadlineRule = "fixed"
    deadline_quantile: float = Field(default=0.9, gt=0, le=1)
    deadline_factor: float = Field(default=2.0, ge=1, le=100)
    deadline_floor_s: float = Field(default=10.0, gt=0, le=7 * 24 * 3600)
    verify: VerifySpec = VerifySpec()
    mode: AggregationMode = "sync"
    buffer_size: int | None = Field(default=None, ge=1, le=100_000)
    max_staleness: int = Field(default=10, ge=0, le=1_000)
    staleness_exponent: float = Field(default=0.5, ge=0, le=10)
    calibration: Calibration = "none"

    @model_validator(mode="after")
    def _sample_holds_min_peers(self) -> AggregationSpec:
        if self.peers_per_round is not None and self.peers_per_round < self.min_peers:
            raise ValueError(
                f"peers_per_round={self.peers_per_round} is below min_peers={self.min_peers}: "
                "no round could close"
            )
        return self

    @model_validator(mode="after")
    def _floor_under_deadline(self) -> AggregationSpec:
        if self.deadline == "adaptive" and self.deadline_floor_s > self.round_deadline_s:
            raise ValueError(
                f"deadline_floor_s={self.deadline_floor_s:g} is above "
                f"round_deadline_s={self.round_deadline_s:g}: the adaptive deadline lies "
                "between the two"
            )
        return self

    def over_select_problem(self, peers: int) -> str | None:
        """Why ``over_select`` does not fit a job of ``peers`` peers (``None``: it fits):
        a round must keep ``n`` to close on, ``min_peers`` or more, and give out
        ``n + over_select`` tasks among the job's peers."""
        extra = self.over_select
        if extra == 0:
            return None
        if self.peers_per_round is None:
            n = peers - extra
            if n < self.min_peers:
                return (
                    f"over_select={extra} leaves {n} of the job's {peers} peer(s) to close "
                    f"a round on, fewer than min_peers={self.min_peers}"
                )
            return None
        if self.peers_per_round + extra > peers:
            return (
                f"peers_per_round={self.peers_per_round} plus over_select={extra} is more "
                f"than the job's {peers} peer(s)"
            )
        return None

    def round_size(self, shards: int) -> tuple[int, int]:
        """How many of a job's ``shards`` a synchronous round gives out, and on how many
        accepted updates it closes (``over_select``, ``peers_per_round``).

        Without over-selection: ``peers_per_round`` (or every shard) both times. With
        ``over_select`` ``m``: ``n + m`` given out (at most every shard) and ``n`` to
        close on, ``n`` being ``peers_per_round`` or ``shards - m``; never fewer than
        ``min_peers`` (nor more than it gives out).
        """
        shards = max(shards, 0)
        if self.over_select == 0:
            size = shards if self.peers_per_round is None else min(self.peers_per_round, shards)
            return size, size
        base = shards - self.over_select if self.peers_per_round is None else self.peers_per_round
        given = min(shards, base + self.over_select)
        closes_on = min(given, max(self.min_peers, given - self.over_select))
        return given, closes_on

    @model_validator(mode="after")
    def _async_knobs_only_async(self) -> AggregationSpec:
        if self.mode == "sync" and self.buffer_size is not None:
            raise ValueError('buffer_size applies to mode "async" only')
        if self.mode == "async" and self.peers_per_round is not None:
            raise ValueError(
                'peers_per_round applies to mode "sync" only: an asynchronous job gives '
                "every idle peer a task"
            )
        if self.mode == "async" and self.over_select:
            raise ValueError(
                'over_select applies to mode "sync" only: an asynchronous job never waits '
                "for its slowest peers"
            )
        if self.mode == "sync" and self.calibration != "none":
            raise ValueError(
                'calibration applies to mode "async" only: a synchronous round already has '
                "an update of every shard it gave out"
            )
        if self.calibration == "cached" and self.strategy not in CALIBRATED_STRATEGIES:
            raise ValueError(
                f'calibration "cached" works with {", ".join(sorted(CALIBRATED_STRATEGIES))}, '
                f"not {self.strategy}: it corrects a weighted mean, which {self.strategy} "
                "does not take"
            )
        if self.mode == "async" and self.deadline == "adaptive":
            raise ValueError(
                'deadline "adaptive" applies to mode "sync" only: an asynchronous task is '
                "given round_deadline_s"
            )
        return self

    @property
    def is_async(self) -> bool:
        """Buffered asynchronous rounds (``mode: async``)."""
        return self.mode == "async"

    def for_new_job(self) -> AggregationSpec:
        """This block as a new job records it (``job.created``): an asynchronous job that
        names no ``server_lr`` gets :data:`ASYNC_SERVER_LR`, FedAdam aside. Recorded, not
        applied when the block is read, so jobs created before keep the step they ran
        with."""
        if self.is_async and self.server_lr is None and self.strategy != "fedadam":
            return self.model_copy(update={"server_lr": ASYNC_SERVER_LR})
        return self

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
