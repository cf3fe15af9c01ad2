"""Liveness: active -> stale -> offline, from when each peer was last seen.

A pure state machine with no I/O and no clock of its own: every call takes ``now``
(seconds on a monotonic clock). The registry feeds it heartbeats and sweeps it a few
times per interval; it answers the *transitions* worth logging:

* ``went_online``: a heartbeat from a peer that was offline (or never seen);
* ``went_offline``: ``offline_after`` intervals without a heartbeat, or the peer said
  it was leaving.

``stale`` (``stale_after`` intervals without one) is a soft state: shown, not logged.
Each peer has its own interval (it says so in every heartbeat).

While the registry cannot see heartbeats at all (its broker connection is down), time
is *paused* for liveness: a blind registry must not declare everyone offline. On
resume, the blind time is excused: every peer's age continues from where it was (its
``last_seen`` stays the true time of its last heartbeat). And the peers lost the broker
too, so they have still to reconnect (with backoff): for a *grace* after the resume
(``resume_grace_intervals`` of the peer's interval, at least ``resume_grace_s``),
nobody goes offline for silence. A peer that is still silent after it is declared
offline then, late, never an online one early.

One peer's key can be *held* too (:meth:`LivenessTracker.hold`): not judged for silence
until a given time (the shell holds a key on which heartbeats are refused at a flood's
rate; the others are judged as ever).

A registry that sees heartbeats late (its queue holds a backlog, say a flood of junk)
must not judge by the late ones either: :meth:`overdue` lets the shell first wait until
every heartbeat queued before ``now`` is in, and only then :meth:`sweep` at ``now``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Liveness", "LivenessTracker", "Status", "Transition", "TransitionKind"]


class Status(StrEnum):
    """What the registry says about a peer now."""

    ACTIVE = "active"
    STALE = "stale"
    OFFLINE = "offline"


class TransitionKind(StrEnum):
    """A change worth an event."""

    WENT_ONLINE = "went_online"
    WENT_OFFLINE = "went_offline"


@dataclass(frozen=True, slots=True)
class Transition:
    """``peer_id`` went online or offline at ``at`` (tracker time)."""

    peer_id: str
    kind: TransitionKind
    at: float
    last_seen: float
    interval_s: float
    reason: str | None = None
    """For ``went_offline``: ``missed_heartbeats`` or ``left``."""


class Liveness:
    """One peer's liveness record."""

    __slots__ = (
        "excused",
        "held_until",
        "interval_s",
        "last_seen",
        "left_session",
        "online",
        "session",
    )

    def __init__(self, last_seen: float, interval_s: float, *, online: bool) -> None:
        self.last_seen = last_seen
        self.excused = 0.0
        """Time since ``last_seen`` during which the registry was blind."""
        self.interval_s = interval_s
        self.online = online
        """Whether the log says online (the last logged transition)."""
        self.session: str | None = None
        self.left_session: str | None = None
        self.held_until = 0.0
        """Not judged for silence before this (see :meth:`LivenessTracker.hold`)."""


class LivenessTracker:
    """Liveness of many peers.

    Parameters
    ----------
    default_interval_s
        Interval assumed for peers seeded without one.
    stale_after, offline_after
        Missed intervals before a peer is stale, then offline.
    min_interval_s, max_interval_s
        Bounds on the interval a peer may claim.
    resume_grace_intervals, resume_grace_s
        After a blind spot, nobody goes offline for silence for this many of its
        intervals, and at least this many seconds (time for every peer to reconnect).
    """

    def __init__(
        self,
        *,
        default_interval_s: float = 5.0,
        stale_after: float = 2.0,
        offline_after: float = 3.0,
        min_interval_s: float = 0.5,
        max_interval_s: float = 300.0,
        resume_grace_intervals: float = 5.0,
        resume_grace_s: float = 20.0,
    ) -> None:
        if not 0 < stale_after <= offline_after:
            raise ValueError("need 0 < stale_after <= offline_after")
        if resume_grace_intervals < 0 or resume_grace_s < 0:
            raise ValueError("a grace cannot be negative")
        self.default_interval_s = default_interval_s
        self.stale_after = stale_after
        self.offline_after = offline_after
        self.min_interval_s = min_interval_s
        self.max_interval_s = max_interval_s
        self.resume_grace_intervals = resume_grace_intervals
        self.resume_grace_s = resume_grace_s
        self._peers: dict[str, Liveness] = {}
        self._paused_at: float | None = None
        self._resumed_at: float | None = None

    # -- input --------------------------------------------------------------------------

    def seed(self, peer_id: str, now: float, *, interval_s: float | None, online: bool) -> None:
        """Start tracking a peer the log knows (after a restart): an online one gets
        ``offline_after`` intervals from ``now`` to show up before it goes offline."""
        if peer_id not in self._peers:
            interval = self._clamp(interval_s or self.default_interval_s)
            self._peers[peer_id] = Liveness(now, interval, online=online)

    def seen(
        self, peer_id: str, now: float, *, interval_s: float, session: str | None = None
    ) -> Transition | None:
        """A heartbeat (or announce) from ``peer_id``; ``went_online`` if it was offline.

        A heartbeat from a session that already said it was leaving is a late message
        of a stopped run: ignored.
        """
        peer = self._peers.get(peer_id)
        interval = self._clamp(interval_s)
        if peer is None:
            peer = self._peers[peer_id] = Liveness(now, interval, online=False)
        elif session is not None and session == peer.left_session:
            return None
        if now >= peer.last_seen:
            peer.last_seen = now
            peer.excused = 0.0
        peer.interval_s = interval
        peer.session = session
        peer.left_session = None
        if peer.online:
            return None
        peer.online = True
        return Transition(peer_id, TransitionKind.WENT_ONLINE, now, peer.last_seen, interval)

    def left(self, peer_id: str, now: float, *, session: str | None = None) -> Transition | None:
        """The peer said it is leaving: offline now (``went_offline`` if it was online)."""
        peer = self._peers.get(peer_id)
        if peer is None:
            return None
        if session is not None and peer.session is not None and session != peer.session:
            return None  # an old run's goodbye arriving after a new run started
        peer.left_session = session or peer.session or ""
        if not peer.online:
            return None
        peer.online = False
        return Transition(
            peer_id,
            TransitionKind.WENT_OFFLINE,
            now,
            peer.last_seen,
            peer.interval_s,
            reason="left",
        )

    def forget(self, peer_id: str) -> None:
        """Stop tracking a peer."""
        self._peers.pop(peer_id, None)

    def hold(self, peer_id: str, until: float) -> None:
        """Judge ``peer_id`` (only it) for silence no earlier than ``until``."""
        peer = self._peers.get(peer_id)
        if peer is not None and until > peer.held_until:
            peer.held_until = until

    # -- blindness ----------------------------------------------------------------------

    def pause(self, now: float) -> None:
        """The registry cannot see heartbeats from ``now`` on: stop the clocks."""
        if self._paused_at is None:
            self._paused_at = now

    def resume(self, now: float) -> None:
        """Heartbeats flow again: every peer's age goes on from where it stopped, and
        nobody goes offline for silence before its grace after ``now`` is over."""
        if self._paused_at is None:
            return
        paused_at, self._paused_at = self._paused_at, None
        self._resumed_at = now
        for peer in self._peers.values():
            peer.excused += max(0.0, now - max(paused_at, peer.last_seen))

    def grace_s(self, interval_s: float) -> float:
        """The grace after a blind spot of a peer heartbeating every ``interval_s``."""
        return max(self.resume_grace_s, self.resume_grace_intervals * interval_s)

    @property
    def paused(self) -> bool:
        """Whether liveness is paused (the registry is blind)."""
        return self._paused_at is not None

    # -- output -------------------------------------------------------------------------

    def overdue(self, now: float) -> bool:
        """Whether :meth:`sweep` at ``now`` would declare any peer offline."""
        if self._paused_at is not None:
            return False
        return any(self._due(peer, now) for peer in self._peers.values())

    def sweep(self, now: float) -> list[Transition]:
        """The ``went_offline`` transitions due at ``now`` (none while paused)."""
        if self._paused_at is not None:
            return []
        due: list[Transition] = []
        for peer_id, peer in self._peers.items():
            if self._due(peer, now):
                peer.online = False
                due.append(
                    Transition(
                        peer_id,
                        TransitionKind.WENT_OFFLINE,
                        now,
                        peer.last_seen,
                        peer.interval_s,
                        reason="missed_heartbeats",
                    )
                )
        return due

    def status(self, peer_id: str, now: float) -> Status:
        """The peer's status at ``now`` (``offline`` for peers not tracked)."""
        peer = self._peers.get(peer_id)
        if peer is None or not peer.online:
            return Status.OFFLINE
        if self._paused_at is not None:
            now = self._paused_at
        age = now - peer.last_seen - peer.excused
        if age > self.offline_after * peer.interval_s and not self._spared(peer, now):
            return Status.OFFLINE
        if age > self.stale_after * peer.interval_s:
            return Status.STALE
        return Status.ACTIVE

    def get(self, peer_id: str) -> Liveness | None:
        """The peer's record, if tracked."""
        return self._peers.get(peer_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self._peers)

    def __len__(self) -> int:
        return len(self._peers)

    def __contains__(self, peer_id: object) -> bool:
        return peer_id in self._peers

    def _due(self, peer: Liveness, now: float) -> bool:
        """An online peer silent for more than ``offline_after`` of its intervals, and
        neither in a grace after a blind spot nor held."""
        if not peer.online:
            return False
        age = now - peer.last_seen - peer.excused
        return age > self.offline_after * peer.interval_s and not self._spared(peer, now)

    def _spared(self, peer: Liveness, now: float) -> bool:
        """Silence does not count at ``now``: in the grace after a resume, or held."""
        if now < peer.held_until:
            return True
        resumed = self._resumed_at
        return resumed is not None and now < resumed + self.grace_s(peer.interval_s)

    def _clamp(self, interval_s: float) -> float:
        return min(self.max_interval_s, max(self.min_interval_s, interval_s))
