"""The simulation: the platform's services' own code, wired to in-memory adapters.

One job, in one process, on a virtual clock:

* the orchestrator's application itself (:class:`OrchestratorApp`, in-memory ports, the
  virtual clock): every appended event reaches it through its subscriptions table, as
  its queues would bring it; its timers are ``tick()`` at virtual times; peers learn
  their tasks from the messages it publishes and report back through ``on_peer``;
* the registry's part, as events: every peer registered and online, offline when it
  vanishes, back online for the next round;
* the dataset service's application (:class:`~peertrain.dataset.application.DatasetApp`):
  the simulation's data stored as a validated dataset, then ``job.created`` delivered to
  it, which shards it for the job;
* the aggregator's application (:class:`~peertrain.aggregator.application.AggregatorApp`)
  as the platform drives it: every job event through its subscriptions (v0,
  aggregation, evaluation, export) and every announced update to ``on_peer`` (decide,
  fetch, check, fold, record);
* virtual peers that train each task message with the peer runtime's call
  (:mod:`.training`) and announce their update when their speed says they are done.

Every event goes through :class:`~peertrain.common.eventlog.MemoryEventLog`; whoever
subscribes to it on the platform gets it here, in log order. Deadlines are virtual: a
round that waits for a straggler costs no wall time.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel

from peertrain.aggregator.application import AGGREGATOR_SUBSCRIPTIONS, AggregatorApp
from peertrain.aggregator.config import AggregatorSettings
from peertrain.aggregator.usecases.versions import final_keys
from peertrain.common.app import MemoryPublisher, Ports, deliver
from peertrain.common.blobs import MemoryBlobStore
from peertrain.common.clock import ManualClock
from peertrain.common.eventlog import VERSION_ONLY, MemoryEventLog, Repository
from peertrain.common.events import EventData, RecordedEvent
from peertrain.common.events.datasets import (
    ArtifactRef,
    ColumnSchema,
    DatasetSharded,
    DatasetShardingFailed,
    DatasetUploaded,
    FeatureSpec,
    sharding_stream,
)
from peertrain.common.events.models import (
    ModelEvaluated,
    ModelVersionCreated,
    UpdateRejected,
    model_key,
)
from peertrain.common.events.peers import PeerRegistered, PeerWentOffline, PeerWentOnline
from peertrain.common.events.tasks import (
    ACCEPTED,
    PROGRESS,
    CancelMessage,
    TaskAcceptedBody,
    TaskMessage,
    TaskProgressBody,
    UpdateAnnounced,
    peer_message_key,
)
from peertrain.common.events.training import (
    JOB_CREATED,
    JobCreated,
    RoundClosed,
    RoundFailed,
    RoundOpened,
    RoundWaiting,
    TaskAssigned,
    job_stream,
)
from peertrain.common.events.weights import WeightsSource, weights_key
from peertrain.common.leases import SoleInstance
from peertrain.common.security import PeerMessage, Principal
from peertrain.common.specs import ShardingSpec, derive_seed, state_shapes
from peertrain.dataset.application import DATASET_SUBSCRIPTIONS, DatasetApp
from peertrain.dataset.config import DatasetSettings
from peertrain.dataset.domain.dataset import raw_prefix
from peertrain.dataset.domain.sharding import FixedStrategy
from peertrain.dataset.prepare import PreparedDataset
from peertrain.dataset.readmodel import MemoryReadModel
from peertrain.dataset.usecases.validate import store_prepared
from peertrain.ml.training import read_samples
from peertrain.ml.weights import dtype_code, read_starting_weights, state_from_bytes, state_to_bytes
from peertrain.orchestrator.application import ORCHESTRATOR_SUBSCRIPTIONS, OrchestratorApp
from peertrain.orchestrator.config import OrchestratorSettings
from peertrain.orchestrator.domain import Job

from .data import SimData
from .peers import HostileMode, Volunteers, hostile_update
from .spec import JobSpec
from .training import TaskInput, Trained, train_many

__all__ = ["EPOCH", "RoundMetrics", "SimResult", "Simulation"]

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Virtual time 0."""
MAX_SETTLE_STEPS = 10_000
HEARTBEAT_S = 5.0
"""The virtual peers' heartbeat interval, as the registry records it."""


@dataclass(frozen=True)
class RoundMetrics:
    """One round's model version, as the aggregator evaluated it on the holdout."""

    round: int
    loss: float
    accuracy: float
    peers: int
    """Updates the round aggregated."""
    attempts: int
    rejected: int
    """Updates refused in the round (all attempts)."""
    virtual_s: float
    """Virtual seconds from the job's start to the evaluation."""


@dataclass
class SimResult:
    """What a simulated job ends with."""

    state: str
    """``completed``, ``failed`` or ``cancelled``."""
    rounds: list[RoundMetrics]
    state_dict: dict[str, torch.Tensor]
    """The last model version's weights (the final model when completed)."""
    final_pt: bytes | None
    """``final.pt`` as the platform exports it (``None`` unless completed)."""
    error: str | None
    virtual_s: float
    wall_s: float
    log: MemoryEventLog = field(repr=False)
    blobs: MemoryBlobStore | None = field(default=None, repr=False)
    """The bucket as the job left it (model versions, accepted updates)."""
    local_layers: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict, repr=False)
    """With ``training.batch_norm: local`` (FedBN): each peer's own BatchNorm tensors,
    by peer id, as it keeps them after its last round."""

    def summary(self) -> dict[str, Any]:
        """JSON-able: state, rounds, last accuracy and loss, times."""
        last = self.rounds[-1] if self.rounds else None
        return {
            "state": self.state,
            "rounds": len(self.rounds),
            "accuracy": last.accuracy if last else None,
            "loss": last.loss if last else None,
            "virtual_s": round(self.virtual_s, 3),
            "wall_s": round(self.wall_s, 3),
            "error": self.error,
        }


def _online(peer_id: str) -> PeerWentOnline:
    """A peer's heartbeats heard (as the registry records it)."""
    return PeerWentOnline(peer_id=peer_id, interval_s=HEARTBEAT_S)


def _ref(task: TaskMessage) -> dict[str, Any]:
    """The fields naming the task in every message about it."""
    return task.model_dump(include={"task_id", "job_id", "round", "attempt", "shard"})


def _principal(peer_id: str) -> Principal:
    """Who a virtual peer's messages come from (verified, as a peer token would be)."""
    no_token = f"sim-{peer_id}"
    return Principal(
        subject=peer_id, roles=frozenset({"peer"}), token_id=no_token, issued_at=0, expires_at=0
    )


class Simulation:
    """One job on virtual peers (see the module docstring).

    Parameters
    ----------
    spec
        The job's model, training, aggregation and sharding blocks.
    data
        The prepared dataset.
    peers
        How many virtual peers (one shard each).
    volunteers
        Dropout, speeds, hostile peers.
    pool
        Worker processes for training (``None``: in this process).
    device
        Training device (``None``: CUDA when present, as a peer picks).
    on_round
        Called with each round's metrics as soon as it is evaluated.
    """

    def __init__(
        self,
        spec: JobSpec,
        data: SimData,
        *,
        peers: int,
        volunteers: Volunteers | None = None,
        pool: Executor | None = None,
        device: str | None = None,
        on_round: Callable[[RoundMetrics], None] | None = None,
        job_id: str = "sim",
        max_attempts: int = 3,
        work_dir: Path | None = None,
        init_weights: bytes | None = None,
    ) -> None:
        if peers < 1:
            raise ValueError("peers must be at least 1")
        self.spec, self.data, self.volunteers = spec, data, volunteers or Volunteers()
        self.pool, self.device, self.on_round = pool, device, on_round
        self.job_id, self.max_attempts = job_id, max_attempts
        self.init_weights = init_weights
        self.peer_ids = [f"peer-{i:05d}" for i in range(peers)]
        self._index = {p: k for k, p in enumerate(self.peer_ids)}
        self._task_keys = {peer_message_key(p, "task"): p for p in self.peer_ids}
        self._cancel_keys = {peer_message_key(p, "cancel"): p for p in self.peer_ids}
        self._cancelled: set[str] = set()
        """Tasks the orchestrator told their peer to stop (surplus): never announced."""
        self._training: dict[str, tuple[str, datetime]] = {}
        """Each peer's last task and when it starts training it."""
        self.hostile = self.volunteers.hostile_peers(self.peer_ids)
        self._local: dict[tuple[str, int], dict[str, torch.Tensor]] = {}
        self._residuals: dict[tuple[str, int], dict[str, torch.Tensor]] = {}
        self._sent_delta: dict[str, dict[str, torch.Tensor]] = {}
        """What each ``replay`` peer sent last."""
        self.speeds = self.volunteers.speeds(self.peer_ids)
        self.clock = ManualClock(EPOCH)
        self.log = MemoryEventLog(self.clock)  # events carry virtual times
        self.blobs = MemoryBlobStore()
        self.publisher = MemoryPublisher()
        # the service's defaults (not the environment's), but the attempts asked for, and
        # each report recorded as it comes (batching them waits in real time, and a
        # simulated peer's reports come one at a time)
        orchestrating = OrchestratorSettings.model_construct(
            max_round_attempts=max_attempts, report_linger_s=0.0
        )
        self.orchestrator = OrchestratorApp(
            Ports(
                log=self.log,
                blobs=self.blobs,
                clock=self.clock,
                publisher=self.publisher,
                leases=SoleInstance(),
            ),
            orchestrating,
            # seeded, so that a run repeats (on the platform: 63 random bits)
            check_keys=lambda: derive_seed(spec.training.seed, "check_key"),
        )
        self.jobs: dict[str, Job] = self.orchestrator.jobs
        self._tmp = tempfile.TemporaryDirectory(prefix="peertrain-sim-")
        scratch = work_dir or Path(self._tmp.name)
        # evaluation leaves torch's threads as they are: simulated peers train in this
        # process too (or in workers with threads of their own)
        settings = AggregatorSettings(
            work_dir=scratch / "aggregator", eval_threads=torch.get_num_threads()
        )
        settings.work_dir.mkdir(parents=True, exist_ok=True)  # as the aggregator's start-up does
        self.aggregator = AggregatorApp(
            Ports(log=self.log, blobs=self.blobs, leases=SoleInstance()), settings
        )
        self._scratch = scratch
        self._inbox: list[RecordedEvent] = []
        self._assigned: list[str] = []
        """Task ids in the order their ``task.assigned`` was appended."""
        self._sent = 0
        """Messages of :attr:`publisher` the virtual peers have read."""
        self._features: tuple[dict[str, Any], FeatureSpec] | None = None
        self._timeline: list[tuple[datetime, int, Callable[[], Awaitable[None]]]] = []
        self._ticks = 0
        self._offline: set[str] = set()
        self._busy: dict[str, datetime] = {}
        self._shards: dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = {}
        self._included: dict[int, tuple[int, int]] = {}
        self._rejected: dict[int, int] = {}
        self.rounds: list[RoundMetrics] = []
        self.log.on_append(self._inbox.extend)

    @property
    def now(self) -> datetime:
        """The virtual time."""
        return self.clock.now()

    # -- running ----------------------------------------------------------------------

    async def run(self) -> SimResult:
        """Run the job to its end."""
        started = time.perf_counter()
        try:
            await self._peers_online()
            await self._create()
            await self._shard()
            await self._settle()
            job = self.jobs[self.job_id]
            while job.terminal is None and self._timeline:
                when, _, action = heapq.heappop(self._timeline)
                self.clock.set(when)
                await action()
                await self._settle()
                job = self.jobs[self.job_id]
        finally:
            self._tmp.cleanup()
        return self._result(time.perf_counter() - started)

    def _at(self, when: datetime, action: Callable[[], Awaitable[None]]) -> None:
        self._ticks += 1
        heapq.heappush(self._timeline, (when, self._ticks, action))

    async def _starting_weights(self) -> WeightsSource | None:
        """The weights the job starts from, stored as an upload is, once they are checked
        to be the model's tensors (names, dtypes, shapes), as the orchestrator checks an
        upload against the job (the aggregator would start from fresh weights instead)."""
        if self.init_weights is None:
            return None
        state = read_starting_weights(self.init_weights)  # WeightsInvalid: not weights
        got = {k: (dtype_code(t), tuple(t.shape)) for k, t in state.items()}
        want = state_shapes(self.spec.model, self.data.feature_spec.data_shape)
        if got != want:
            wrong = sorted(k for k in got.keys() | want.keys() if got.get(k) != want.get(k))
            raise ValueError(
                f"the starting weights are not the model's tensors: {', '.join(wrong[:10])}"
                + (f" and {len(wrong) - 10} more" if len(wrong) > 10 else "")
            )
        key = weights_key(self.job_id)
        put = await self.blobs.put_bytes(key, state_to_bytes(state))
        return WeightsSource(weights_id=self.job_id, key=key, sha256=put.sha256)

    async def _create(self) -> None:
        spec = self.spec
        init_weights = await self._starting_weights()
        created = JobCreated(
            job_id=self.job_id,
            owner_id="sim",
            name="simulation",
            dataset_id="sim",
            peers=tuple(self.peer_ids),
            sharding=ShardingSpec(
                strategy=spec.sharding.strategy,
                alpha=spec.sharding.alpha,
                seed=spec.training.seed,
            ),
            model=spec.model,
            training=spec.training,
            aggregation=spec.aggregation.for_new_job(),
            init_weights=init_weights,
        )
        if spec.aggregation.min_peers > len(self.peer_ids):
            raise ValueError(
                f"min_peers={spec.aggregation.min_peers} is more than the {len(self.peer_ids)} "
                "peer(s)"
            )
        if (problem := spec.aggregation.over_select_problem(len(self.peer_ids))) is not None:
            raise ValueError(problem)
        await self.orchestrator.open_job(created, actor="sim")

    async def _peers_online(self) -> None:
        """What the registry appends for peers that enrolled, registered and came online."""
        for peer_id in self.peer_ids:
            registered = PeerRegistered(
                peer_id=peer_id, owner_id="sim", name=peer_id, queue=f"peer.{peer_id}"
            )
            await self._registry(peer_id, registered, _online(peer_id))

    async def _registry(self, peer_id: str, *facts: EventData) -> None:
        registry = Repository(self.log, VERSION_ONLY, producer="registry")
        await registry.execute(f"peer:{peer_id}", lambda _: list(facts))

    async def _shard(self) -> None:
        """What the dataset service does on ``job.created``, by its own application: the
        simulation's data is stored as a validated dataset (``sim``), then ``job.created``
        is delivered to :class:`DatasetApp`, which shards it (by the split the data
        names, if it names one) and copies the holdout; the peers keep their shards as
        they read them."""
        data, n = self.data, len(self.peer_ids)
        if data.shards is not None and len(data.shards) != n:
            raise ValueError(f"the data has {len(data.shards)} shards for {n} peers")
        settings = DatasetSettings.model_construct(work_dir=self._scratch / "dataset")
        ports = Ports(log=self.log, blobs=self.blobs, clock=self.clock)
        dataset = DatasetApp.of(ports, settings, MemoryReadModel(clock=self.clock))
        if data.shards is not None:
            fixed = FixedStrategy(data.shards)
            dataset.sharding_strategy = lambda _job: fixed
        await asyncio.to_thread(settings.work_dir.mkdir, parents=True, exist_ok=True)
        await self._store_dataset(dataset)
        created = [
            e for e in await self.log.read_stream(job_stream(self.job_id)) if e.type == JOB_CREATED
        ]
        await deliver(DATASET_SUBSCRIPTIONS, dataset, created[0])
        [outcome] = await self.log.read_stream(sharding_stream(self.job_id))
        if isinstance(outcome.data, DatasetShardingFailed):
            raise ValueError(outcome.data.message)
        assert isinstance(outcome.data, DatasetSharded)
        for ref in outcome.data.shards:
            x, y = read_samples(await self.blobs.get_bytes(ref.key))  # as a peer reads it
            self._shards[ref.index] = (x.numpy(), y.numpy())

    async def _store_dataset(self, dataset: DatasetApp) -> None:
        """The simulation's data as the dataset ``sim`` of the owner ``sim``: uploaded,
        then stored and recorded validated as validation does, from the arrays as they
        are (encoded already: no CSV to read again)."""
        data, spec = self.data, self.data.feature_spec
        files = self._scratch / "data"
        files.mkdir(exist_ok=True)
        pixels = data.train_x.dtype == np.uint8  # kept as such: the shards' format
        train_x, train_y, holdout = files / "X.npy", files / "y.npy", files / "holdout.npz"
        np.save(train_x, np.ascontiguousarray(data.train_x, dtype=None if pixels else np.float32))
        np.save(train_y, np.asarray(data.train_y, dtype=np.int32))
        np.savez(
            holdout,
            X=data.holdout_x if pixels else data.holdout_x.astype(np.float32),
            y=data.holdout_y.astype(np.int64),
        )
        train_rows, holdout_rows = len(data.train_y), len(data.holdout_y)
        counts = np.bincount(data.train_y, minlength=data.num_classes)
        held = np.bincount(data.holdout_y, minlength=data.num_classes)
        features = (
            tuple(ColumnSchema(name=c.name, type=c.type) for c in spec.columns)
            if spec.kind == "table"
            else (ColumnSchema(name="image", type="image"),)
        )
        prepared = PreparedDataset(
            kind=spec.kind,
            rows=train_rows + holdout_rows,
            train_rows=train_rows,
            holdout_rows=holdout_rows,
            columns=(*features, ColumnSchema(name=spec.label_column, type="label")),
            label_column=spec.label_column,
            classes=spec.classes,
            class_counts=tuple(int(c) for c in counts + held),
            holdout_class_counts=tuple(int(c) for c in held),
            feature_spec=spec,
            train_x=train_x,
            train_y=train_y,
            holdout=holdout,
            preview={},
            holdout_seed=spec.holdout.seed if spec.holdout is not None else 0,
            notes=data.notes,
        )
        raw = await self.blobs.put_bytes(f"{raw_prefix('sim')}raw", b"")
        uploaded = DatasetUploaded(
            dataset_id="sim",
            owner_id="sim",
            name="simulation",
            filename="simulation",
            raw=ArtifactRef(key=raw.key, sha256=raw.sha256, size=raw.size),
            label_column=spec.label_column,
            holdout_fraction=min(0.5, max(holdout_rows / prepared.rows, 1e-9)),
        )
        saved = await dataset.execute("sim", lambda _: [uploaded], new=True, actor="sim")
        assert saved.state is not None
        await store_prepared(dataset, saved.state, saved.events[0], prepared)

    async def _settle(self) -> None:
        """Deliver what was appended, in log order, to whoever subscribes to it, until
        quiet; the peers start on the tasks they were sent meanwhile."""
        for _ in range(MAX_SETTLE_STEPS):
            while self._inbox:
                batch = list(self._inbox)
                self._inbox.clear()
                for event in batch:
                    await self._deliver(event)
            await self._start_tasks()
            if not self._inbox:
                return

    async def _tick(self) -> None:
        """The orchestrator's timer going off (deadlines, waits, retries)."""
        await self.orchestrator.tick()

    async def _deliver(self, event: RecordedEvent) -> None:
        """Hand one appended event to whoever subscribes to it on the platform."""
        data = event.data
        if isinstance(data, RoundClosed | RoundFailed) and self._offline:
            # who vanished in the round is back for the next (before anyone moves on)
            back, self._offline = sorted(self._offline), set()
            for peer_id in back:
                await self._registry(peer_id, _online(peer_id))
        await deliver(ORCHESTRATOR_SUBSCRIPTIONS, self.orchestrator, event)
        if not event.stream.startswith("job:"):
            if isinstance(data, ModelEvaluated):
                self._evaluated(data)
            elif isinstance(data, ModelVersionCreated) and data.version > 0:
                await self._forget_updates(data.version)
            elif isinstance(data, UpdateRejected):
                self._rejected[data.round] = self._rejected.get(data.round, 0) + 1
            return
        # the aggregator hears every job event: it acts on some, and folds the others
        await deliver(AGGREGATOR_SUBSCRIPTIONS, self.aggregator, event)
        if isinstance(data, TaskAssigned):
            self._assigned.append(data.task_id)
        elif isinstance(data, RoundOpened):
            self._at(data.deadline, self._tick)
        elif isinstance(data, RoundClosed):
            self._included[data.round] = (len(data.included), data.attempt)
            if data.dropped:  # left out as norm outliers: refused at the close
                self._rejected[data.round] = self._rejected.get(data.round, 0) + len(data.dropped)
        elif isinstance(data, RoundFailed):
            if data.retry_at is not None:
                self._at(data.retry_at, self._tick)  # the retry's backoff ends
        elif isinstance(data, RoundWaiting):
            self._at(data.until, self._tick)  # the wait for peers ends

    async def _forget_updates(self, version: int) -> None:
        """Drop a round's uploads and accepted copies once nothing reads them again:
        memory stays O(model x peers per round), not x rounds. That is when its version
        exists; in an asynchronous job, when the last version that may include an update
        of one of its tasks does (``max_staleness`` later)."""
        agg = self.spec.aggregation
        round_ = version - agg.max_staleness if agg.is_async else version
        if round_ < 1:
            return
        await self.blobs.delete_prefix(f"jobs/{self.job_id}/rounds/{round_}/")
        await self.blobs.delete_prefix(f"models/{self.job_id}/updates/r{round_}.")

    def _evaluated(self, data: ModelEvaluated) -> None:
        if data.version < 1:
            return
        peers, attempts = self._included.get(data.version, (0, 1))
        metrics = RoundMetrics(
            round=data.version,
            loss=data.loss,
            accuracy=data.accuracy,
            peers=peers,
            attempts=attempts,
            rejected=self._rejected.get(data.version, 0),
            virtual_s=(self.now - EPOCH).total_seconds(),
        )
        self.rounds.append(metrics)
        if self.on_round is not None:
            self.on_round(metrics)

    # -- virtual peers ----------------------------------------------------------------

    def _task_messages(self) -> list[tuple[str, TaskMessage, FeatureSpec]]:
        """The task messages the orchestrator sent since the last look, with their peer
        and feature spec, in the order the tasks were assigned."""
        fresh, self._sent = self.publisher.sent[self._sent :], len(self.publisher.sent)
        sent: dict[str, tuple[str, TaskMessage, FeatureSpec]] = {}
        for message in fresh:
            stopping = self._cancel_keys.get(message.routing_key)
            if stopping is not None:  # a job's end needs no answer; a task's stops it
                self._stop(stopping, CancelMessage.model_validate_json(message.body))
                continue
            peer_id = self._task_keys.get(message.routing_key)
            if peer_id is not None:
                raw = json.loads(message.body)
                features = self._features_of(raw.pop("feature_spec"))
                task = TaskMessage.model_validate({**raw, "feature_spec": features})
                sent[task.task_id] = (peer_id, task, features)
        assigned, self._assigned = self._assigned, []
        return [sent[t] for t in assigned if t in sent]

    def _stop(self, peer_id: str, cancel: CancelMessage) -> None:
        """A peer told to stop a task (a surplus one) drops it, as its trainer does: its
        update is never announced, and a peer training it is free again now."""
        if cancel.task_id is None:
            return
        self._cancelled.add(cancel.task_id)
        task_id, started = self._training.get(peer_id, ("", self.now))
        if task_id == cancel.task_id:
            self._busy[peer_id] = max(self.now, started)

    def _features_of(self, raw: dict[str, Any]) -> FeatureSpec:
        """The job's feature spec, parsed once (a wide one costs more than training)."""
        if self._features is None or self._features[0] != raw:
            self._features = (raw, FeatureSpec.model_validate(raw))
        return self._features[1]

    async def _start_tasks(self) -> None:
        """Train every task just sent (in the pool when there is one) and schedule its
        announcement at the time its peer finishes; a peer that drops out goes silent
        and is seen offline a little later."""
        work: list[tuple[str, TaskMessage, TaskInput]] = []
        for peer_id, task, features in self._task_messages():
            if not self.volunteers.answers(self._index[peer_id], task.round, task.attempt):
                continue  # online and silent: the round's deadline ends the wait
            if self.volunteers.drops_out(peer_id, task.round, task.attempt):
                self._at(
                    self.now + timedelta(seconds=self.volunteers.offline_after_s),
                    partial(self._goes_offline, peer_id),
                )
                continue
            x, y = self._shards[task.shard]
            if peer_id in self.hostile and self._mode(peer_id) == "tenth":
                x, y = x[: max(1, len(y) // 10)], y[: max(1, len(y) // 10)]
            work.append(
                (
                    peer_id,
                    task,
                    TaskInput(
                        model_bytes=self.blobs.objects[task.model.key],
                        x=x,
                        y=y,
                        model_spec=task.model_spec,
                        feature_spec=features,
                        training=task.training,
                        seed=task.seed,
                        round=task.round,
                        device=self.device,
                        local=self._local.get((peer_id, task.shard)),
                        residual=self._residuals.get((peer_id, task.shard)),
                    ),
                )
            )
        if not work:
            return
        for peer_id, task, _ in work:  # as the peer's trainer does before it trains
            accepted = TaskAcceptedBody(**_ref(task), device=self.device or "cpu")
            await self._report(peer_id, ACCEPTED, accepted)
        trained = train_many([w[2] for w in work], self.pool)
        vol = self.volunteers
        for (peer_id, task, inputs), result in zip(work, trained, strict=True):
            if result.local is not None:  # FedBN: the virtual peer keeps its own layers
                self._local[(peer_id, task.shard)] = result.local
            if result.residual is not None:  # top-k: and what its updates left out
                self._residuals[(peer_id, task.shard)] = result.residual
            epochs = inputs.training.local_epochs
            busy = vol.seconds_per_sample * len(inputs.y) * epochs / self.speeds[peer_id]
            start = max(self.now, self._busy.get(peer_id, self.now))
            done = start + timedelta(seconds=busy)
            self._busy[peer_id] = done
            self._training[peer_id] = (task.task_id, start)
            self._at(done, partial(self._announce, peer_id, task, result))

    def _mode(self, peer_id: str) -> HostileMode:
        return self.volunteers.mode_of(self._index[peer_id])

    async def _goes_offline(self, peer_id: str) -> None:
        """What the registry appends when a peer's heartbeats stop."""
        self._offline.add(peer_id)
        gone = PeerWentOffline(peer_id=peer_id, reason="missed_heartbeats", last_seen=self.now)
        await self._registry(peer_id, gone)

    async def _announce(self, peer_id: str, task: TaskMessage, result: Trained) -> None:
        """Upload and announce, as the peer's trainer does (hostile peers send theirs)."""
        if task.task_id in self._cancelled:
            return
        if peer_id in self.hostile:
            mode = self._mode(peer_id)
            last = self._sent_delta.get(peer_id)
            seed = derive_seed(self.volunteers.seed, "noise", peer_id, task.task_id)
            data = hostile_update(result.delta, mode, last=last, seed=seed)
            if mode == "replay" and last is None:
                self._sent_delta[peer_id] = result.delta
        else:
            data = state_to_bytes(result.delta if result.sent is None else result.sent)
        epochs = task.training.local_epochs
        progress = TaskProgressBody(  # the last epoch's (the simulation trains at once)
            **_ref(task),
            epoch=epochs,
            epochs=epochs,
            loss=result.loss,
            accuracy=result.accuracy,
            samples=result.samples,
            duration_s=max(0.0, result.duration_s),
        )
        await self._report(peer_id, PROGRESS, progress)
        put = await self.blobs.put_bytes(task.upload.key, data)
        body = UpdateAnnounced(
            **_ref(task),
            key=task.upload.key,
            sha256=put.sha256,
            size=put.size,
            samples=result.samples,
            train_loss=result.loss,
            train_accuracy=result.accuracy,
            duration_s=max(0.0, result.duration_s),
        )
        message = PeerMessage(peer_id, "update", body, _principal(peer_id), None)
        await self.aggregator.on_peer(message)

    async def _report(self, peer_id: str, kind: str, body: BaseModel) -> None:
        """A peer's telemetry about its task, to the orchestrator."""
        await self.orchestrator.on_peer(PeerMessage(peer_id, kind, body, _principal(peer_id), None))

    # -- the end ----------------------------------------------------------------------

    def _result(self, wall_s: float) -> SimResult:
        job = self.jobs[self.job_id]
        versions = [v for v in job.versions if f"{model_key(self.job_id, v)}" in self.blobs.objects]
        state_dict: dict[str, torch.Tensor] = {}
        if versions:
            state_dict = state_from_bytes(self.blobs.objects[model_key(self.job_id, max(versions))])
        pt_key, _ = final_keys(self.job_id)
        return SimResult(
            state=job.terminal or "running",
            rounds=list(self.rounds),
            state_dict=state_dict,
            final_pt=self.blobs.objects.get(pt_key) if job.terminal == "completed" else None,
            error=job.error if job.terminal else "stalled: nothing left to happen",
            virtual_s=(self.now - EPOCH).total_seconds(),
            wall_s=wall_s,
            log=self.log,
            blobs=self.blobs,
            local_layers={peer: dict(t) for (peer, _), t in sorted(self._local.items())},
        )
