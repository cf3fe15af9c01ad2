"""The contract suite on the real platform: each case's final weights are the
simulation's, bit for bit.

The cases (``tests/contract/contract_specs.py``) run here as a user runs a job: digits uploaded
through the gateway, real peer processes (``tests/stack/hostile_peer.py`` for those that
misbehave), the final model downloaded. The same case then runs on
:func:`peertrain.sim.run`, on the same data as the dataset service prepared it (the
holdout is seeded from the dataset's id), and the two ``state_dict`` s must be equal.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from training_support import (
    Platform,
    create_job,
    dataset,
    final_weights,
    finished,
    job_events,
    peers_active,
    same_weights,
)

from peertrain.sim import SimResult

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contract"))

from contract_specs import (
    CASES,
    HOLDOUT_FRACTION,
    LABEL_COLUMN,
    Case,
    digits_csv,
    sim_data,
    simulate,
)

pytestmark = [pytest.mark.stack]


async def digits(platform: Platform) -> str:
    return await dataset(
        platform,
        "contract-digits",
        "digits.csv",
        digits_csv(),
        label_column=LABEL_COLUMN,
        holdout_fraction=str(HOLDOUT_FRACTION),
    )


def peer_names(case: Case) -> list[str]:
    """Honest peer ``k`` is the training tests' ``p<k>``; the others are the case's own."""
    return [f"p{k}" if b == "honest" else f"contract-{b}-{k}" for k, b in enumerate(case.peers)]


def start_peers(platform: Platform, cases: Iterable[Case]) -> None:
    """Every peer the cases name, enrolled and started at once: enrolling is a process
    each, so the suite pays for one start-up, not one per hostile peer."""
    wanted = {n: b for c in cases for n, b in zip(peer_names(c), c.peers, strict=True)}
    with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
        list(pool.map(lambda n: platform.peer(n, mode=_mode(wanted[n])), wanted))


def _mode(behaviour: str) -> str | None:
    return None if behaviour == "honest" else behaviour


async def on_platform(platform: Platform, case: Case) -> tuple[str, dict[str, Any]]:
    dataset_id = await digits(platform)
    await asyncio.to_thread(start_peers, platform, CASES.values())
    peers = [platform.peers[name].peer_id for name in peer_names(case)]
    await peers_active(platform, peers)
    body = {"name": f"contract-{case.name}", "dataset_id": dataset_id, "peers": peers}
    job_id = await create_job(platform, {**body, **case.spec()})
    return job_id, await finished(platform, job_id, timeout=300)


@pytest.mark.parametrize("name", list(CASES))
async def test_the_platform_ends_with_the_simulations_weights_bit_for_bit(
    platform: Platform, http: Any, tmp_path: Path, name: str
) -> None:
    case = CASES[name]
    job_id, job = await on_platform(platform, case)
    assert job["state"] == "completed", job
    simulated = await asyncio.to_thread(
        simulate, case, sim_data(tmp_path, platform.datasets["contract-digits"])
    )
    assert simulated.state == "completed", simulated.error
    weights = await final_weights(platform, job_id)
    assert same_weights(weights, simulated.state_dict), name
    # the same story on both sides: every round closed with the same shards; the same
    # refusals, exclusions and failed attempts
    events = await job_events(http, job_id)
    closed = [
        (e["data"]["round"], shards(e["data"])) for e in events if e["type"] == "round.closed"
    ]
    expected = [(c.round, shards(c.model_dump())) for c in of(simulated, "round.closed")]
    assert closed == expected
    for kind in ("update.rejected", "peer.excluded", "round.failed"):
        here = [e["data"] for e in events if e["type"] == kind]
        there = of(simulated, kind)
        if "round_deadline_s" in case.aggregation:
            # Deadlines on the platform are wall-clock, the simulation's virtual: on a
            # loaded machine an honest peer may miss this case's short deadline too.
            # The miss costs another attempt (min_peers is every peer), its late update
            # is refused (task_lost, round_not_open), and the weights stay the same: a
            # task's seed is its shard's and round's, not its attempt's.
            assert len(here) >= len(there), (kind, here)
        else:
            assert len(here) == len(there), (kind, here)


def of(result: SimResult, kind: str) -> list[Any]:
    return [e.data for e in result.log.events if e.type == kind]


def shards(closed: dict[str, Any]) -> list[int]:
    return sorted(u["shard"] for u in closed["included"])
