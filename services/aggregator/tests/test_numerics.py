"""The torch side: v0, update decoding with codes, running sum == rebuild, export."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import pytest
import torch

from peertrain.aggregator.domain import UpdateRefused, codes
from peertrain.aggregator.usecases.numerics import (
    SMALL_EVALUATION,
    RoundWork,
    decode_update,
    eval_threads,
    final_files,
    initial_state,
    load_state,
    new_strategy,
    non_finite,
)
from peertrain.common.specs import TrainingParams
from peertrain.ml.problems import ProblemCode
from peertrain.ml.weights import state_to_bytes

from .conftest import configured


def _delta(
    base: dict[str, torch.Tensor], seed: int, scale: float = 0.01
) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(v.shape, generator=g, dtype=v.dtype) * scale for k, v in base.items()}


def test_a_job_started_from_another_version_begins_with_exactly_its_weights():
    cfg = configured()
    trained = {k: v + 1.0 for k, v in load_state(initial_state(cfg)).items()}
    v0 = load_state(initial_state(cfg, state_to_bytes(trained)))
    assert v0.keys() == trained.keys()
    assert all(torch.equal(v0[k], trained[k]) for k in trained)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda s: {k: v[..., :1] for k, v in s.items()}, codes.WRONG_TENSORS),
        (lambda s: {**s, "extra": torch.zeros(1)}, codes.WRONG_TENSORS),
        (lambda s: {k: v.double() for k, v in s.items()}, codes.WRONG_TENSORS),
        (lambda s: {k: v * float("nan") for k, v in s.items()}, codes.NON_FINITE),
    ],
)
def test_a_source_version_that_is_not_this_models_tensors_is_refused(change, code):
    cfg = configured()
    wrong = change(load_state(initial_state(cfg)))
    with pytest.raises(UpdateRefused) as refused:
        initial_state(cfg, state_to_bytes(wrong))
    assert refused.value.reason_code == code
    with pytest.raises(UpdateRefused) as refused:
        initial_state(cfg, b"not safetensors")
    assert refused.value.reason_code == codes.NOT_SAFETENSORS


def test_initial_state_is_seeded_and_reproducible():
    cfg = configured()
    assert initial_state(cfg) == initial_state(cfg)
    other = cfg.model_copy(update={"training": cfg.training.model_copy(update={"seed": 4})})
    assert initial_state(other) != initial_state(cfg)


def test_decode_update_refusals_carry_codes():
    base = load_state(initial_state(configured()))
    good = _delta(base, 1)
    assert decode_update(state_to_bytes(good), base, 100.0).keys() == base.keys()
    nan = {k: v.clone() for k, v in good.items()}
    next(iter(nan.values())).view(-1)[0] = float("nan")
    wrong = {k: (v[:1] if v.dim() else v) for k, v in good.items()}
    big = {k: v * 1e6 for k, v in good.items()}
    cases = {
        codes.NON_FINITE: state_to_bytes(nan),
        codes.WRONG_TENSORS: state_to_bytes(wrong),
        codes.NORM_TOO_LARGE: state_to_bytes(big),
        codes.NOT_SAFETENSORS: pickle.dumps(good),
    }
    for code, data in cases.items():
        with pytest.raises(UpdateRefused) as info:
            decode_update(data, base, 100.0)
        assert info.value.reason_code == code, info.value.message


def test_refusal_codes_come_from_problem_codes_not_from_messages():
    base = load_state(initial_state(configured()))
    hostile = _delta(base, 1) | {"a non-finite tensor with a huge L2 norm": torch.zeros(1)}
    with pytest.raises(UpdateRefused) as info:
        decode_update(state_to_bytes(hostile), base, 100.0)
    assert info.value.reason_code == codes.WRONG_TENSORS, info.value.message
    assert codes.refusal_code([]) == codes.WRONG_TENSORS
    assert codes.refusal_code([ProblemCode.WRONG_TENSORS, ProblemCode.NON_FINITE]) == (
        codes.NON_FINITE
    )
    # every refusal either strikes when made, or is about the numbers (struck later,
    # by the orchestrator, only in a round whose majority was accepted)
    assert {codes.refusal_code([p]) for p in ProblemCode} <= codes.STRIKES | codes.NUMERIC
    assert not codes.STRIKES & codes.NUMERIC


def test_a_version_with_non_finite_weights_is_named_and_a_finite_one_is_not():
    base = load_state(initial_state(configured()))
    assert non_finite(base) is None
    name = sorted(base)[0]
    broken = dict(base) | {name: torch.full_like(base[name], float("nan"))}
    why = non_finite(broken)
    assert why is not None and name in why


def test_the_strategy_is_built_from_the_job_and_declares_its_state(tmp_path: Path):
    prox = configured(aggregation={"strategy": "fedprox"})
    prox = prox.model_copy(update={"training": TrainingParams(seed=3, proximal_mu=0.3)})
    strategy = new_strategy(prox, server_state=None, spill_dir=tmp_path)
    assert strategy.name == "fedprox" and getattr(strategy, "proximal_mu", None) == 0.3
    assert not strategy.stateful
    adam = configured(aggregation={"strategy": "fedadam"})
    assert new_strategy(adam, server_state=None, spill_dir=tmp_path).stateful


@pytest.mark.parametrize("strategy", ["fedavg", "fedadam", "median"])
def test_running_sum_equals_rebuild_in_any_order(strategy: str, tmp_path: Path):
    cfg = configured(rows=(30, 50, 20), aggregation={"strategy": strategy})
    base = load_state(initial_state(cfg))
    updates = [(f"k{i}", _delta(base, i), float(r)) for i, r in enumerate((30, 50, 20))]
    results = []
    for order in (updates, updates[::-1], [*updates, updates[0]]):
        work = RoundWork.begin(cfg, 1, 1, base, server_state=None, spill_dir=tmp_path)
        for key, delta, weight in order:
            work.accumulator.add(delta, weight, key=key)
        results.append((state_to_bytes(work.accumulator.finish()), work.strategy.state_bytes()))
    assert results[0] == results[1] == results[2]


def test_final_files_load_with_weights_only():
    cfg = configured()
    state = load_state(initial_state(cfg))
    pt, st = final_files(cfg, state)
    payload = torch.load(io.BytesIO(pt), weights_only=True)
    assert set(payload) == {"format", "spec", "feature_spec", "architecture", "state_dict"}
    assert payload["feature_spec"]["classes"] == list(cfg.feature_spec.classes)
    assert all(torch.equal(payload["state_dict"][k], state[k]) for k in state)
    assert load_state(st).keys() == state.keys()


def test_a_small_evaluation_runs_on_one_thread_a_large_one_on_the_cores():
    # the digits MLP (8,970 parameters) on its 360 holdout rows: one thread
    assert eval_threads(8_970, 360, None, cores=8) == 1
    assert eval_threads(SMALL_EVALUATION, 1, None, cores=8) == 8  # a ResNet's, say
    assert eval_threads(8_970, 360, 4, cores=8) == 4  # the operator's setting wins
