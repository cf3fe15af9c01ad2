"""``POST /api/jobs?dry_run=true``: every check a creation makes, and no job, no event."""

from __future__ import annotations

from typing import Any, cast

import pytest

from peertrain.common.app import Ports
from peertrain.common.errors import QuotaExceeded
from peertrain.common.events.datasets import FeatureSpec
from peertrain.common.security import Principal
from peertrain.orchestrator.api.views import JobChecked
from peertrain.orchestrator.application import OrchestratorApp
from peertrain.orchestrator.config import OrchestratorSettings
from peertrain.orchestrator.domain.directory import DatasetInfo, Directory, PeerInfo
from peertrain.orchestrator.domain.errors import PeersUnavailable
from peertrain.orchestrator.domain.job_request import JobRequest
from peertrain.orchestrator.usecases.jobs import check_job

USER = Principal("u1", frozenset({"user"}), "t", 0, 0)
FEATURES = {
    "kind": "table",
    "input_shape": [4],
    "input_size": 4,
    "classes": ["a", "b"],
    "columns": [{"name": "x", "type": "numeric", "offset": 0, "width": 4}],
    "label_column": "y",
}


class NoLog:
    """An event log that must not be touched."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a dry run used the log ({name})")


def context(max_running_jobs: int = 3) -> OrchestratorApp:
    # (0 is below the setting's floor: a quota no user could reach)
    settings = OrchestratorSettings().model_copy(update={"max_running_jobs": max_running_jobs})
    app = OrchestratorApp(Ports(log=cast(Any, NoLog())), settings)
    d: Directory = app.directory
    d.datasets["d1"] = DatasetInfo(
        "d1",
        owner_id="u1",
        state="validated",
        feature_spec=FeatureSpec.model_validate(FEATURES),
        train_rows=100,
    )
    for peer_id, online in (("p1", True), ("p2", True), ("off", False)):
        d.peers[peer_id] = PeerInfo(
            peer_id, owner_id="u1", registered=True, online=online, memory_gb=8.0
        )
    return app


def request(**body: Any) -> JobRequest:
    return JobRequest.model_validate({"name": "j", "dataset_id": "d1", **body})


async def test_a_dry_run_answers_the_job_it_would_create_and_creates_nothing() -> None:
    app = context()
    checked = JobChecked.of(await check_job(app, request(selection={"count": 2}), USER))
    assert checked.dry_run and checked.peers == ["p1", "p2"]
    assert checked.training.rounds == 10  # the defaults, filled in
    assert app.jobs == {}


async def test_a_dry_run_refuses_what_a_creation_refuses() -> None:
    app = context()
    with pytest.raises(PeersUnavailable) as refused:
        await check_job(app, request(peers=["p1", "off"]), USER)
    assert refused.value.detail == {"peers": [{"peer_id": "off", "problem": "offline"}]}
    with pytest.raises(QuotaExceeded):
        await check_job(context(max_running_jobs=0), request(peers=["p1"]), USER)
