"""Which version ``best`` means, and the names of downloaded files (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from peertrain.aggregator.domain import (
    NoEvaluatedVersion,
    VersionInfo,
    VersionNotFound,
    best_version,
    download_name,
    pick_version,
)
from peertrain.common.events.models import ModelDiverged, ModelEvaluated, ModelVersionCreated

from .conftest import JOB, SHA

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def version(n: int, accuracy: float | None = None, loss: float = 1.0) -> VersionInfo:
    created = ModelVersionCreated(
        job_id=JOB,
        version=n,
        key=f"models/{JOB}/v{n}.safetensors",
        sha256=SHA,
        size=1,
        strategy="fedavg",
    )
    info = VersionInfo(created, NOW)
    if accuracy is not None:
        info.evaluation = ModelEvaluated(
            job_id=JOB, version=n, loss=loss, accuracy=accuracy, samples=10
        )
    return info


def versions(*infos: VersionInfo) -> dict[int, VersionInfo]:
    return {info.created.version: info for info in infos}


def test_best_is_the_highest_accuracy_not_the_latest():
    found = versions(version(0, 0.3), version(1, 0.9), version(2, 0.7))
    assert best_version(found) == 1
    assert pick_version(found, "best") == 1


def test_accuracy_ties_go_to_the_lower_loss_then_the_later_version():
    assert best_version(versions(version(1, 0.8, 0.2), version(2, 0.8, 0.5))) == 1
    assert best_version(versions(version(1, 0.8, 0.5), version(2, 0.8, 0.5))) == 2


def test_unevaluated_and_diverged_versions_never_count():
    diverged = version(3, 0.99)
    diverged.diverged = ModelDiverged(job_id=JOB, version=3, reason="nan")
    found = versions(version(0, 0.5), version(1, 0.4), version(2), diverged)
    assert best_version(found) == 0


def test_best_with_nothing_evaluated_is_a_conflict_naming_the_versions():
    with pytest.raises(NoEvaluatedVersion) as caught:
        pick_version(versions(version(0), version(1)), "best")
    assert caught.value.code == "no_evaluated_version"
    assert caught.value.detail == {"versions": [0, 1]}


def test_a_number_is_taken_as_it_is_when_it_exists():
    found = versions(version(0), version(1, 0.2))
    assert pick_version(found, 0) == 0
    with pytest.raises(VersionNotFound) as caught:
        pick_version(found, 7)
    assert caught.value.code == "version_not_found"
    assert caught.value.detail == {"version": 7, "versions": [0, 1]}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("iris run", "iris-run-v3.pt"),
        ('a"b/c\\d;e', "a-b-c-d-e-v3.pt"),
        ("Ünïcode ✓", "Unicode-v3.pt"),
        ("...", f"{JOB}-v3.pt"),
        (None, f"{JOB}-v3.pt"),
    ],
)
def test_download_names_are_the_job_name_and_version_safe_in_a_header(name, expected):
    assert download_name(name, JOB, 3, "pt") == expected
