"""The dataset event family: payloads validate, round-trip through the one serializer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peertrain.common.events import NewEvent, RecordedEvent, decode_message, to_message
from peertrain.common.events.datasets import (
    ArtifactRef,
    ColumnEncoding,
    DatasetSharded,
    FeatureSpec,
    ShardRef,
)
from peertrain.common.specs import ShardingSpec

SHA = "0" * 64


def spec() -> FeatureSpec:
    return FeatureSpec(
        kind="table",
        input_shape=(3,),
        input_size=3,
        classes=("a", "b"),
        columns=(
            ColumnEncoding(name="x", type="numeric", offset=0, width=1, fill=0, mean=0, std=1),
            ColumnEncoding(name="c", type="categorical", offset=1, width=2, categories=("p", "q")),
        ),
        label_column="y",
    )


def test_feature_spec_checks_its_shape() -> None:
    assert spec().num_classes == 2
    with pytest.raises(ValidationError):
        FeatureSpec(
            kind="table", input_shape=(4,), input_size=3, classes=("a", "b"), label_column="y"
        )
    with pytest.raises(ValidationError):
        FeatureSpec(
            kind="images", input_shape=(1, 2, 2), input_size=4, classes=("a", "b"), label_column="y"
        )


def test_sharded_round_trips() -> None:
    data = DatasetSharded(
        dataset_id="d",
        job_id="j",
        sharding=ShardingSpec(strategy="dirichlet", alpha=0.1, seed=3),
        shards=(
            ShardRef(
                key="jobs/j/shards/0.npz",
                sha256=SHA,
                size=10,
                rows=5,
                class_counts=(2, 3),
                index=0,
                peer_id="p0",
            ),
        ),
        holdout=ArtifactRef(
            key="jobs/j/holdout.npz", sha256=SHA, size=4, rows=1, class_counts=(1, 0)
        ),
        feature_spec=spec(),
    )
    new = NewEvent.of(data, producer="dataset")
    recorded = RecordedEvent(
        **new.model_dump(exclude={"data"}), data=data, stream="sharding:j", seq=1, position=1
    )
    back = decode_message(to_message(recorded))
    assert back.data == data
    assert isinstance(back.data, DatasetSharded)
    assert back.data.shards[0].peer_id == "p0"
