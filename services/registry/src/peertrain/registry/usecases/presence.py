"""Presence: heartbeats into the liveness tracker, transitions into the log.

The hot path (:meth:`Presence.heartbeat`) touches memory only. Transitions go on a
queue that one writer task appends, in order, retrying while the database is away,
so a slow or absent MongoDB never slows heartbeat consumption. The sweeper turns
silence into ``went_offline``, judged only once the heartbeat consumer has caught up
with the moment it judges (see :meth:`Presence.judge_after`): a heartbeat that waits in
the queue behind a flood of junk still counts for the time it was sent.

While the heartbeat consumer is disconnected the registry is blind: liveness is paused
(:meth:`Presence.blind`), and once it sees again every peer gets a grace to reconnect
before its silence counts (:meth:`Presence.seeing`; the rule is the tracker's).

A flood of refused heartbeats on one peer's key (its own token over its rate, or junk
riding on its key) may delay that peer's own honest heartbeats, in the broker as in the
queue, where no marker can see them. So while heartbeats on a key are refused at a
flood's rate, that peer alone is held (not judged for silence) until ``flood_quiet_s``
after the flood: the flooder is declared offline late, never early, and every other
peer's liveness is judged as ever. A peer's broker user may only publish on its own
key, so a flood costs the flooder only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime

import structlog

from peertrain.common.clock import SYSTEM_CLOCK, Clock
from peertrain.common.events.peers import Heartbeat, Leaving
from peertrain.common.periodic import Background
from peertrain.registry.directory import PeerDirectory
from peertrain.registry.domain.floods import FloodWatch
from peertrain.registry.domain.liveness import LivenessTracker, Status, Transition, TransitionKind
from peertrain.registry.domain.peer import decide_offline, decide_online
from peertrain.registry.metrics import (
    CATCH_UP_WAIT,
    HEARTBEAT_FLOODS,
    HEARTBEAT_LAG,
    HEARTBEATS,
    LIVENESS_PAUSED,
    LOOP_LAG,
    PEERS,
    TRANSITIONS,
)

from .streams import PeerStreams

__all__ = ["Presence"]

log = structlog.get_logger(__name__)


class Presence:
    """Liveness of every peer, and the events that record its transitions.

    Parameters
    ----------
    tracker
        The pure liveness state machine.
    streams
        Where transitions are appended.
    directory
        The read model (to seed the tracker after a restart).
    sweep_interval_s
        How often silence is checked.
    flood_refusals_per_s, flood_quiet_s
        Refused heartbeats on one peer's key in one second that make a flood, and how
        long after its last one that peer stays held.
    """

    def __init__(
        self,
        tracker: LivenessTracker,
        streams: PeerStreams,
        directory: PeerDirectory,
        *,
        clock: Clock | None = None,
        sweep_interval_s: float = 0.2,
        flood_refusals_per_s: int = 50,
        flood_quiet_s: float = 2.0,
    ) -> None:
        self.tracker = tracker
        self.streams = streams
        self.directory = directory
        self.clock = clock or SYSTEM_CLOCK
        self.sweep_interval_s = sweep_interval_s
        self._pending: asyncio.Queue[Transition] = asyncio.Queue()
        self._caught_up: Callable[[], Awaitable[None]] | None = None
        self.floods = FloodWatch(flood_refusals_per_s)
        self.flood_quiet_s = flood_quiet_s
        self._tasks = (
            Background("registry-sweeper", self._sweep_forever),
            Background("registry-transitions", self._write_forever),
        )

    # -- start-up -------------------------------------------------------------------------

    def seed(self) -> int:
        """Track every peer the log says is online: each gets ``offline_after`` intervals
        from now to heartbeat before it is declared offline."""
        now = self.clock.monotonic()
        seeded = 0
        for record in self.directory.records():
            if record.online:
                self.tracker.seed(record.peer_id, now, interval_s=record.interval_s, online=True)
                seeded += 1
        return seeded

    # -- telemetry (the hot path) ------------------------------------------------------------

    def heartbeat(self, peer_id: str, message: Heartbeat) -> None:
        """A verified heartbeat: memory only."""
        transition = self.tracker.seen(
            peer_id, self.clock.monotonic(), interval_s=message.interval_s, session=message.session
        )
        HEARTBEATS.inc()
        HEARTBEAT_LAG.observe(max(0.0, self.clock.time() - message.sent_at))
        if transition is not None:
            self._pending.put_nowait(transition)

    def leaving(self, peer_id: str, message: Leaving) -> None:
        """A verified goodbye: offline now."""
        transition = self.tracker.left(peer_id, self.clock.monotonic(), session=message.session)
        if transition is not None:
            self._pending.put_nowait(transition)

    def forget(self, peer_id: str) -> None:
        """Stop tracking a removed peer (its offline transition is already in the log)."""
        self.tracker.forget(peer_id)
        self.floods.forget(peer_id)

    def judge_after(self, caught_up: Callable[[], Awaitable[None]]) -> None:
        """Before declaring anyone offline, await ``caught_up()``: it returns once every
        heartbeat queued before the call has been consumed. (Without it, offline is
        judged by the heartbeats consumed so far: right only for a consumer never
        behind.)"""
        self._caught_up = caught_up

    # -- blindness ------------------------------------------------------------------------

    def blind(self) -> None:
        """The heartbeat consumer lost its connection: liveness pauses."""
        if not self.tracker.paused:
            log.warning("heartbeat consumer away: liveness paused")
        self.tracker.pause(self.clock.monotonic())
        LIVENESS_PAUSED.set(1)

    def seeing(self) -> None:
        """The heartbeat consumer is consuming again: liveness resumes, and every peer
        gets the tracker's grace to reconnect before its silence counts."""
        if self.tracker.paused:
            log.info(
                "heartbeat consumer back: liveness resumes after a grace",
                grace_s=self.tracker.resume_grace_s,
                grace_intervals=self.tracker.resume_grace_intervals,
            )
        self.tracker.resume(self.clock.monotonic())
        LIVENESS_PAUSED.set(0)

    def refused(self, peer_id: str | None) -> None:
        """A heartbeat on ``peer_id``'s key was refused (``None``: no peer's key). At a
        flood's rate, that peer (only it) is held until ``flood_quiet_s`` after it."""
        if peer_id is None or peer_id not in self.tracker:
            return  # nobody tracked whose heartbeats it could delay
        now = self.clock.monotonic()
        if not self.floods.refused(peer_id, now):
            return
        record = self.tracker.get(peer_id)
        if record is not None and record.held_until <= now:  # the flood's first refusal
            HEARTBEAT_FLOODS.inc()
            log.warning("heartbeat flood on a peer's key: only its liveness held", peer_id=peer_id)
        self.tracker.hold(peer_id, now + self.flood_quiet_s)

    # -- reading --------------------------------------------------------------------------

    def status(self, peer_id: str) -> Status:
        """The peer's liveness now."""
        return self.tracker.status(peer_id, self.clock.monotonic())

    def last_seen(self, peer_id: str) -> datetime | None:
        """When the registry last heard from the peer (``None``: not since start-up)."""
        peer = self.tracker.get(peer_id)
        return None if peer is None else self.clock.wall_of(peer.last_seen)

    def interval_s(self, peer_id: str) -> float | None:
        """The heartbeat interval the peer runs at now (``None``: not since start-up)."""
        peer = self.tracker.get(peer_id)
        return None if peer is None else peer.interval_s

    def count_by_status(self) -> dict[Status, int]:
        """How many tracked peers are in each status."""
        now = self.clock.monotonic()
        counts = dict.fromkeys(Status, 0)
        for peer_id in self.tracker:
            counts[self.tracker.status(peer_id, now)] += 1
        return counts

    # -- background -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the sweeper and the transition writer."""
        for task in self._tasks:
            task.start()

    async def stop(self) -> None:
        """Stop the background tasks (pending transitions are re-derived after a restart)."""
        for task in self._tasks:
            await task.stop()

    async def drain(self) -> None:
        """Wait until every pending transition is in the log (tests, shutdown)."""
        await self._pending.join()

    async def _sweep_forever(self) -> None:
        ticks = 0
        while True:
            woke = self.clock.monotonic() + self.sweep_interval_s
            await asyncio.sleep(self.sweep_interval_s)
            LOOP_LAG.observe(max(0.0, self.clock.monotonic() - woke))
            await self.sweep()
            ticks += 1
            if ticks % max(1, round(5 / self.sweep_interval_s)) == 0:  # every ~5 s
                for status, n in self.count_by_status().items():
                    PEERS.labels(status=status.value).set(n)

    async def sweep(self) -> None:
        """Declare offline whoever was silent too long as of now, counting every
        heartbeat sent before now, however long it waits in the queue."""
        now = self.clock.monotonic()
        if self._caught_up is not None and self.tracker.overdue(now):
            waited = self.clock.monotonic()
            await self._caught_up()
            CATCH_UP_WAIT.observe(self.clock.monotonic() - waited)
        for transition in self.tracker.sweep(now):
            self._pending.put_nowait(transition)

    async def settle(self) -> None:
        """Record every pending transition, in order (the writer task's work, done now
        when it does not run: the simulation and unit tests; else wait for it)."""
        if self._tasks[1].running:
            await self.drain()
            return
        while not self._pending.empty():
            await self._write_retrying(self._pending.get_nowait())
            self._pending.task_done()

    async def _write_forever(self) -> None:
        while True:
            transition = await self._pending.get()
            await self._write_retrying(transition)
            self._pending.task_done()

    async def _write_retrying(self, transition: Transition) -> None:
        delay = 0.1
        while True:
            try:
                await self._write(transition)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database is away: keep the order, retry
                log.warning(
                    "could not record a liveness transition; retrying",
                    peer_id=transition.peer_id,
                    kind=transition.kind.value,
                    error=repr(exc),
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _write(self, t: Transition) -> None:
        if t.kind is TransitionKind.WENT_ONLINE:
            recorded = await self.streams.execute(
                t.peer_id, lambda r: decide_online(r, t.interval_s), actor=t.peer_id
            )
        else:
            last_seen = self.clock.wall_of(t.last_seen)
            reason = t.reason or "missed_heartbeats"
            recorded = await self.streams.execute(
                t.peer_id, lambda r: decide_offline(r, reason, last_seen), actor=t.peer_id
            )
        if recorded:
            TRANSITIONS.labels(kind=t.kind.value).inc()
            log.info("peer liveness changed", peer_id=t.peer_id, transition=t.kind.value)
