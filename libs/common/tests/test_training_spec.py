"""The ``training`` block's optimiser settings and learning-rate schedule (torch-free)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from peertrain.common.specs import (
    CompressionSpec,
    ConstantSchedule,
    CosineSchedule,
    SpecInvalid,
    StepSchedule,
    TrainingParams,
    lr_for_round,
    parse_training_params,
)


def _lrs(training: dict[str, Any]) -> list[float]:
    p = parse_training_params(training)
    return [lr_for_round(p, r) for r in range(1, p.rounds + 1)]


def test_defaults_are_todays_training() -> None:
    p = TrainingParams()
    assert (p.optimizer, p.nesterov, p.precision, p.channels_last) == ("sgd", False, "fp32", False)
    assert p.grad_clip_norm is None and p.label_smoothing == 0.0
    assert p.lr_schedule == ConstantSchedule() and p.lr_schedule.warmup_rounds == 0
    assert _lrs({"lr": 0.03}) == [0.03] * 10


def test_an_old_stored_block_reads_with_the_new_defaults() -> None:
    old = {"rounds": 3, "lr": 0.1, "optimizer": "sgd", "momentum": 0.9, "seed": 7}
    assert parse_training_params(old) == TrainingParams(**old)


def test_a_schedule_without_kind_is_constant_and_round_trips() -> None:
    p = parse_training_params({"lr_schedule": {"warmup_rounds": 2}})
    assert p.lr_schedule == ConstantSchedule(warmup_rounds=2)
    for schedule in ({"kind": "cosine", "min_lr": 0.001}, {"kind": "step", "gamma": 0.5}):
        q = parse_training_params({"lr_schedule": schedule})
        assert TrainingParams.model_validate_json(q.model_dump_json()) == q


def test_warmup_climbs_linearly_to_lr_then_stays() -> None:
    got = _lrs({"rounds": 6, "lr": 0.4, "lr_schedule": {"warmup_rounds": 4}})
    assert got == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    assert got[3] == 0.4  # exactly lr once the warmup is over


def test_cosine_decays_from_lr_towards_min_lr_over_the_rounds() -> None:
    lr, low = 0.1, 0.01
    got = _lrs({"rounds": 5, "lr": lr, "lr_schedule": {"kind": "cosine", "min_lr": low}})
    want = [low + (lr - low) * (1 + math.cos(math.pi * i / 5)) / 2 for i in range(5)]
    assert got == pytest.approx(want) and got[0] == lr
    assert got[-1] > low  # the last round still learns; min_lr is reached at its end
    assert all(a > b for a, b in itertools.pairwise(got))


def test_cosine_after_a_warmup_starts_at_lr() -> None:
    schedule = {"kind": "cosine", "warmup_rounds": 2}
    got = _lrs({"rounds": 6, "lr": 1.0, "lr_schedule": schedule})
    want = [0.5, 1.0] + [(1 + math.cos(math.pi * i / 4)) / 2 for i in range(4)]
    assert got == pytest.approx(want)


def test_step_multiplies_by_gamma_every_step_rounds() -> None:
    schedule = {"kind": "step", "step_rounds": 3, "gamma": 0.5}
    got = _lrs({"rounds": 8, "lr": 0.8, "lr_schedule": schedule})
    assert got == pytest.approx([0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2])


def test_step_counts_its_rounds_after_the_warmup() -> None:
    schedule = {"kind": "step", "warmup_rounds": 2, "step_rounds": 2, "gamma": 0.1}
    got = _lrs({"rounds": 6, "lr": 1.0, "lr_schedule": schedule})
    assert got == pytest.approx([0.5, 1.0, 1.0, 1.0, 0.1, 0.1])


def test_a_round_past_the_job_keeps_the_last_cosine_value_and_round_0_is_refused() -> None:
    p = TrainingParams(rounds=4, lr=0.1, lr_schedule=CosineSchedule())
    assert lr_for_round(p, 9) == lr_for_round(p, 4)
    with pytest.raises(ValueError, match="from 1"):
        lr_for_round(p, 0)


def _refused(training: dict[str, Any]) -> list[dict[str, str]]:
    with pytest.raises(SpecInvalid) as caught:
        parse_training_params(training)
    return list(caught.value.detail)


@pytest.mark.parametrize(
    "training",
    [
        {"nesterov": True},
        {"nesterov": True, "optimizer": "adam", "momentum": 0.9},
        {"nesterov": True, "optimizer": "adamw"},
    ],
)
def test_nesterov_needs_sgd_with_momentum(training: dict[str, Any]) -> None:
    [problem] = _refused(training)
    assert "nesterov needs optimizer sgd with momentum > 0" in problem["msg"]
    assert parse_training_params({"nesterov": True, "momentum": 0.9}).nesterov


@pytest.mark.parametrize(
    ("training", "loc", "words"),
    [
        ({"lr_schedule": {"kind": "linear"}}, "lr_schedule", "constant, cosine or step"),
        ({"lr_schedule": {"kind": "cosine", "gamma": 0.5}}, "lr_schedule.cosine.gamma", "Extra"),
        ({"lr_schedule": {"min_lr": 0.1}}, "lr_schedule.constant.min_lr", "Extra"),
        ({"lr_schedule": {"kind": "step", "gamma": 0}}, "lr_schedule.step.gamma", "greater"),
        ({"lr_schedule": {"kind": "step", "step_rounds": 0}}, "lr_schedule.step.step_rounds", ""),
        ({"rounds": 3, "lr_schedule": {"warmup_rounds": 4}}, "", "outlasts the job's 3 rounds"),
        ({"lr": 0.01, "lr_schedule": {"kind": "cosine", "min_lr": 0.1}}, "", "above lr=0.01"),
        ({"optimizer": "rmsprop"}, "optimizer", "sgd"),
        ({"grad_clip_norm": 0}, "grad_clip_norm", "greater"),
        ({"label_smoothing": 1.0}, "label_smoothing", "less than 1"),
        ({"precision": "fp8"}, "precision", "fp32"),
        ({"channels_last": "sometimes"}, "channels_last", "bool"),
        ({"compression": {"kind": "int4"}}, "compression.kind", "'topk'"),
        ({"compression": {"kind": "topk", "ratio": 0}}, "compression.ratio", "greater than 0"),
        ({"compression": {"kind": "topk", "ratio": 1.5}}, "compression.ratio", "less than"),
        ({"compression": {"kind": "int8", "block": -1}}, "compression.block", "greater"),
        ({"compression": {"kind": "int8", "bits": 4}}, "compression.bits", "Extra"),
    ],
)
def test_bad_settings_are_refused_with_their_place(
    training: dict[str, Any], loc: str, words: str
) -> None:
    [problem] = _refused(training)
    assert problem["loc"] == loc and words in problem["msg"]


def test_new_settings_are_accepted() -> None:
    p = parse_training_params(
        {
            "optimizer": "adamw",
            "weight_decay": 0.05,
            "grad_clip_norm": 1.0,
            "label_smoothing": 0.1,
            "precision": "bf16",
            "channels_last": True,
            "lr_schedule": {"kind": "step", "step_rounds": 2},
        }
    )
    assert p.optimizer == "adamw" and p.lr_schedule == StepSchedule(step_rounds=2)


def test_compression_defaults_to_none_and_old_blocks_read_without_it() -> None:
    assert parse_training_params({}).compression == CompressionSpec()
    assert CompressionSpec().kind == "none"
    p = parse_training_params({"compression": {"kind": "topk", "ratio": 0.01}})
    assert p.compression.kind == "topk" and p.compression.kept(1000) == 10
    assert p.compression.kept(10) == 1 and p.compression.kept(0) == 0
    assert parse_training_params(p.model_dump(mode="json")) == p
