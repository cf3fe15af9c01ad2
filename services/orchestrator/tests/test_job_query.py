"""``GET /api/jobs``'s filters: state, dataset and a piece of the name."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from peertrain.orchestrator.usecases.jobs import JobQuery


def _job(state: str, dataset_id: str, name: str) -> Any:
    return SimpleNamespace(state=state, created=SimpleNamespace(dataset_id=dataset_id, name=name))


def test_a_query_keeps_the_jobs_that_pass_every_filter_given() -> None:
    jobs = [
        _job("running", "d1", "Iris-MLP"),
        _job("completed", "d1", "iris-cnn"),
        _job("running", "d2", "mnist"),
    ]

    def kept(query: JobQuery) -> list[str]:
        return [j.created.name for j in jobs if query.matches(j)]

    assert kept(JobQuery()) == ["Iris-MLP", "iris-cnn", "mnist"]
    assert kept(JobQuery(state="running")) == ["Iris-MLP", "mnist"]
    assert kept(JobQuery(dataset_id="d1")) == ["Iris-MLP", "iris-cnn"]
    assert kept(JobQuery(name="IRIS")) == ["Iris-MLP", "iris-cnn"]
    assert kept(JobQuery(state="running", dataset_id="d1", name="mlp")) == ["Iris-MLP"]
    assert not JobQuery().matches(SimpleNamespace(state="running", created=None))  # type: ignore[arg-type]
