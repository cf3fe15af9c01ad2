"""Virtual volunteers: who drops out, how fast each one is, who is hostile.

Every draw is seeded (``derive_seed``), so a simulation is repeatable. Hostile peers
train honestly and then send one of the hostile updates the platform's stack tests
send (``tests/stack/hostile_peer.py``): the platform's own rules refuse or exclude them.
Lazy peers (``zeros``, ``replay``, ``noise``, ``tenth``) send plausible updates that
pass every check on their numbers: only checked work (``aggregation.verify``) finds them.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Literal, get_args

import torch

from peertrain.common.specs import derive_seed
from peertrain.ml.weights import state_to_bytes

__all__ = ["HOSTILE_MODES", "LAZY_MODES", "HostileMode", "Volunteers", "hostile_update"]

HostileMode = Literal["norm", "nan", "shape", "flip", "zeros", "replay", "noise", "tenth"]
HOSTILE_MODES: tuple[HostileMode, ...] = get_args(HostileMode)
LAZY_MODES: tuple[HostileMode, ...] = ("zeros", "replay", "noise", "tenth")
"""Updates that look honest (finite, in bounds) but are not the work: ``zeros`` (all
zero), ``replay`` (the update it sent last, again; its first is honest), ``noise``
(Gaussian noise with the norm of the honest update), ``tenth`` (trained on the first
tenth of its shard only)."""


@dataclass(frozen=True)
class Volunteers:
    """How the virtual peers behave.

    Attributes
    ----------
    dropout
        Chance that a peer given a task in a round vanishes (it is seen offline
        ``offline_after_s`` later; its task is lost and given to a spare peer, as on the
        platform); it comes back for the next round.
    hostile
        Share of the peers that are hostile (the first ``round(hostile * peers)`` of a
        seeded shuffle).
    hostile_indices
        Peers that are hostile besides, by index (peer ``k`` owns shard ``k``): a
        script, as the platform's tests start given peers in a hostile mode.
    hostile_mode
        ``norm``: the honest delta times 100; ``nan``: one NaN; ``shape``: one tensor a
        row too long; ``flip``: the delta times -20 (the ``storm`` peer's update); or
        one of :data:`LAZY_MODES`.
    hostile_modes
        ``(peer index, mode)``: peers hostile in a mode of their own (``hostile_mode``
        is the others').
    speed_sigma
        Peer speeds are log-normal with this sigma (0: all equally fast).
    slowdowns
        Peer ``k`` is ``slowdowns[k]`` times slower than nominal (as ``peertrain-peer run
        --slowdown``); when given, one factor per peer, and ``speed_sigma`` is unused.
    seconds_per_sample
        Virtual seconds a peer of speed 1 takes per sample and local epoch.
    offline_after_s
        Virtual seconds before a vanished peer is seen offline (the registry's liveness).
    unanswered
        ``(peer index, round, attempt)`` of tasks that their peer takes and never
        answers, while it stays online (a hung trainer, as the platform tests' ``silent``
        peer): only the round's deadline ends the wait for them.
    seed
        Seeds every draw.
    """

    dropout: float = 0.0
    hostile: float = 0.0
    hostile_mode: HostileMode = "norm"
    speed_sigma: float = 0.0
    seconds_per_sample: float = 0.01
    offline_after_s: float = 30.0
    hostile_indices: tuple[int, ...] = ()
    hostile_modes: tuple[tuple[int, HostileMode], ...] = ()
    unanswered: tuple[tuple[int, int, int], ...] = ()
    slowdowns: tuple[float, ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.dropout < 1:
            raise ValueError("dropout must be in [0, 1)")
        if not 0 <= self.hostile < 1:
            raise ValueError("hostile must be in [0, 1)")
        if self.speed_sigma < 0 or self.seconds_per_sample < 0 or self.offline_after_s <= 0:
            raise ValueError("speed_sigma and seconds_per_sample >= 0, offline_after_s > 0")
        if any(not f >= 1 for f in self.slowdowns):
            raise ValueError("slowdowns must be at least 1")

    def hostile_peers(self, peers: list[str]) -> frozenset[str]:
        """Which peers are hostile."""
        named = (*self.hostile_indices, *(k for k, _ in self.hostile_modes))
        if any(not 0 <= k < len(peers) for k in named):
            raise ValueError(f"hostile_indices must name peers 0..{len(peers) - 1}")
        count = round(self.hostile * len(peers))
        order = list(peers)
        random.Random(derive_seed(self.seed, "hostile")).shuffle(order)
        return frozenset(order[:count]) | {peers[k] for k in named}

    def mode_of(self, peer_index: int) -> HostileMode:
        """The hostile mode of peer ``peer_index`` (if it is hostile)."""
        return dict(self.hostile_modes).get(peer_index, self.hostile_mode)

    def speeds(self, peers: list[str]) -> dict[str, float]:
        """Each peer's speed (1: nominal)."""
        if self.slowdowns:
            if len(self.slowdowns) != len(peers):
                raise ValueError(f"slowdowns names {len(self.slowdowns)} peers, not {len(peers)}")
            return {p: 1.0 / f for p, f in zip(peers, self.slowdowns, strict=True)}
        rng = random.Random(derive_seed(self.seed, "speed"))
        return {p: math.exp(rng.gauss(0.0, self.speed_sigma)) for p in peers}

    def answers(self, peer_index: int, round_: int, attempt: int) -> bool:
        """Whether peer ``peer_index`` answers its task of this round attempt."""
        return (peer_index, round_, attempt) not in self.unanswered

    def drops_out(self, peer: str, round_: int, attempt: int) -> bool:
        """Whether ``peer`` vanishes during this round attempt."""
        if self.dropout <= 0:
            return False
        rng = random.Random(derive_seed(self.seed, "dropout", peer, round_, attempt))
        return rng.random() < self.dropout


def hostile_update(
    delta: dict[str, torch.Tensor],
    mode: HostileMode,
    *,
    last: dict[str, torch.Tensor] | None = None,
    seed: int = 0,
) -> bytes:
    """The bytes a hostile peer uploads instead of its honest ``delta`` (``tenth``'s is
    its delta: the training was the lazy part). ``last``: what a ``replay`` peer sent
    before; ``seed``: a ``noise`` peer's draw."""
    if mode in ("tenth", "replay"):
        return state_to_bytes(last if mode == "replay" and last is not None else delta)
    if mode == "zeros":
        return state_to_bytes({k: torch.zeros_like(v) for k, v in delta.items()})
    if mode == "noise":
        gen = torch.Generator().manual_seed(seed)
        floats = {k: v for k, v in delta.items() if v.is_floating_point()}
        noise = {k: torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in floats.items()}
        want = math.sqrt(sum(float(v.double().square().sum()) for v in floats.values()))
        have = math.sqrt(sum(float(v.double().square().sum()) for v in noise.values()))
        scale = want / have if have > 0 else 0.0
        return state_to_bytes({k: noise[k] * scale if k in noise else v for k, v in delta.items()})
    if mode == "norm":
        return state_to_bytes(
            {k: v * 100 if v.is_floating_point() else v for k, v in delta.items()}
        )
    if mode == "flip":
        return state_to_bytes(
            {k: v * -20 if v.is_floating_point() else v for k, v in delta.items()}
        )
    bad = dict(delta)
    name = next(k for k, v in delta.items() if v.is_floating_point() and v.numel())
    if mode == "nan":
        bad[name] = delta[name].clone()
        bad[name].view(-1)[0] = float("nan")
    else:  # shape
        t = delta[name]
        bad[name] = torch.cat([t, torch.zeros((1, *t.shape[1:]), dtype=t.dtype)])
    return state_to_bytes(bad)
