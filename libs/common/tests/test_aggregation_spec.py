"""The ``aggregation`` block's update bound, sized for the model when the job left it out."""

from __future__ import annotations

import math

import pytest

from peertrain.common.events.datasets import FeatureSpec, ImageEncoding
from peertrain.common.specs import (
    AggregationSpec,
    SpecInvalid,
    parse_aggregation_spec,
    parse_data_shape,
    parse_model_spec,
    state_shapes,
)
from peertrain.common.specs.aggregation import MIN_UPDATE_NORM

CIFAR = FeatureSpec(
    kind="images",
    input_shape=(3, 32, 32),
    input_size=3 * 32 * 32,
    classes=tuple("abcdefghij"),
    image=ImageEncoding(
        mode="RGB", channels=3, height=32, width=32, mean=(0.5,) * 3, std=(0.25,) * 3
    ),
    label_column="class",
)


def _values(model: dict[str, object]) -> int:
    shapes = state_shapes(parse_model_spec(model), parse_data_shape(CIFAR))
    return sum(math.prod(shape) for _, shape in shapes.values())


def test_a_bound_left_out_is_the_floor_until_sized() -> None:
    spec = AggregationSpec()
    assert spec.max_update_norm is None
    assert spec.update_bound == MIN_UPDATE_NORM == 100.0


def test_a_small_model_keeps_100_and_a_resnet_gets_room_for_its_honest_updates() -> None:
    spec = AggregationSpec()
    assert spec.sized_for(1_111).update_bound == 100.0
    assert spec.sized_for(_values({"arch": "logreg"})).update_bound == 526.0  # 30,730 values
    resnet = _values({"arch": "torchvision", "name": "resnet18", "cifar_stem": True})
    assert resnet > 11_000_000
    sized = spec.sized_for(resnet)
    # honest ResNet-18 updates after one local epoch (lr 0.05, momentum 0.9, batch 32:
    # make bench-models) have norms near 4,900
    assert sized.max_update_norm == math.ceil(3 * math.sqrt(resnet)) > 10_000
    assert sized.sized_for(10**12) == sized  # sized once


def test_a_bound_the_job_gives_is_kept_whatever_the_model() -> None:
    spec = AggregationSpec(max_update_norm=7.0)
    assert spec.sized_for(10**8).update_bound == 7.0


def test_verify_is_off_by_default_and_its_bad_values_are_named() -> None:
    assert not AggregationSpec().verify.enabled
    on = parse_aggregation_spec({"verify": {"share": 0.05}})
    assert on.verify.enabled and on.verify.tolerance == 1e-3 and on.verify.probation == 2
    assert parse_aggregation_spec({"mode": "async", "verify": {"share": 0.05}}).verify.enabled
    for bad, field in (
        ({"share": 1.5}, "verify.share"),
        ({"share": 0.1, "tolerance": 0}, "verify.tolerance"),
        ({"share": 0.1, "probation": -1}, "verify.probation"),
        ({"share": 0.1, "every": 2}, "verify.every"),
    ):
        with pytest.raises(SpecInvalid) as caught:
            parse_aggregation_spec({"verify": bad})
        assert field in str(caught.value.detail), caught.value.detail


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ({"mode": "async", "over_select": 1}, 'over_select applies to mode "sync" only'),
        ({"mode": "async", "deadline": "adaptive"}, 'deadline "adaptive" applies to mode "sync"'),
        ({"buffer_size": 2}, 'buffer_size applies to mode "async" only'),
    ],
)
def test_rules_of_synchronous_rounds_are_refused_in_an_async_job(
    block: dict[str, object], says: str
) -> None:
    with pytest.raises(SpecInvalid) as caught:
        parse_aggregation_spec(block)
    assert says in str(caught.value.detail)
