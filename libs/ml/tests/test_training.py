"""Local training: deterministic, FedProx term, cancellation, metrics; evaluation."""

from __future__ import annotations

import pytest
import torch

from peertrain.common.specs import SpecInvalid, derive_seed, parse_training_params
from peertrain.ml.errors import DataInvalid, TrainingCancelled
from peertrain.ml.training import evaluate, train_local
from peertrain.ml.weights import l2_norm
from peertrain.ml.zoo import build_model

FEATURES = {"input_size": 10, "num_classes": 3}
PARAMS = {"local_epochs": 3, "batch_size": 16, "lr": 0.05, "momentum": 0.9}


def _data(n=120, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=gen)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
    return x, y


def _train(spec=None, params=PARAMS, seed=None, **kw):
    model = build_model(spec or {"arch": "mlp", "hidden": [16], "dropout": 0.3}, FEATURES, seed=1)
    x, y = _data()
    return train_local(model, x, y, params, seed=seed, device="cpu", **kw)


def test_same_seed_same_delta_bits_and_other_seeds_differ():
    a, b, c = _train(seed=11), _train(seed=11), _train(seed=12)
    assert all(torch.equal(a.delta[k], b.delta[k]) for k in a.delta)
    assert not all(torch.equal(a.delta[k], c.delta[k]) for k in a.delta)


def test_metrics_per_epoch_and_callback():
    seen = []
    result = _train(on_epoch=seen.append)
    assert [m.epoch for m in seen] == [1, 2, 3] and tuple(seen) == result.epochs
    assert all(m.samples == 120 and m.duration_s >= 0 for m in seen)
    assert seen[-1].loss < seen[0].loss and 0 <= seen[-1].accuracy <= 1
    assert result.final.as_dict()["epoch"] == 3 and result.samples == 120


def test_adam_and_weight_decay_train_too():
    result = _train(params=PARAMS | {"optimizer": "adam", "lr": 0.01, "weight_decay": 1e-4})
    assert result.final.loss < result.epochs[0].loss + 1e-9


def test_proximal_term_keeps_the_update_closer_to_the_global_model():
    free = _train(spec={"arch": "logreg"}, params=PARAMS | {"local_epochs": 8})
    tied = _train(spec={"arch": "logreg"}, params=PARAMS | {"local_epochs": 8, "proximal_mu": 5.0})
    assert l2_norm(tied.delta) < 0.8 * l2_norm(free.delta)


def test_cancellation_stops_at_the_next_batch():
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) > 10  # 8 batches per epoch: stops in epoch 2

    with pytest.raises(TrainingCancelled) as info:
        _train(should_stop=should_stop)
    assert info.value.epochs_done == 1 and len(calls) == 11


def test_bad_data_and_params_are_refused():
    model = build_model({"arch": "logreg"}, FEATURES)
    x, y = _data()
    with pytest.raises(DataInvalid, match="labels"):
        train_local(model, x, y + 5, {}, device="cpu")
    with pytest.raises(DataInvalid, match="samples"):
        train_local(model, x[:5], y, {}, device="cpu")
    with pytest.raises(DataInvalid, match="int64"):
        train_local(model, x, y.float(), {}, device="cpu")
    with pytest.raises(SpecInvalid) as info:
        parse_training_params({"optimizer": "lbfgs", "lr": -1, "epochs": 3})
    assert {d["loc"] for d in info.value.detail} == {"optimizer", "lr", "epochs"}


def test_cnn_trains_on_images():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(64, 1, 8, 8, generator=gen)
    y = (x[:, 0, :4].mean(dim=(1, 2)) > x[:, 0, 4:].mean(dim=(1, 2))).long()
    model = build_model(
        {"arch": "cnn", "channels": [4], "hidden": 8},
        {"image_shape": [1, 8, 8], "num_classes": 2},
    )
    result = train_local(model, x, y, {"local_epochs": 2, "batch_size": 16}, device="cpu")
    assert set(result.delta) == set(model.state_dict())


def test_evaluate_reports_loss_accuracy_and_per_class():
    model = build_model({"arch": "logreg"}, {"input_size": 2, "num_classes": 3})
    with torch.no_grad():
        model.linear.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
        model.linear.bias.zero_()
    x = torch.tensor([[5.0, 0.0], [0.0, 5.0], [5.0, 0.0], [0.0, 5.0]])
    y = torch.tensor([0, 1, 1, 1])
    metrics = evaluate(model, x, y, batch_size=3, device="cpu")
    assert metrics["accuracy"] == 0.75 and metrics["samples"] == 4
    assert metrics["per_class_accuracy"] == [1.0, 2 / 3, None]
    assert metrics["loss"] > 0 and model.training


def test_derive_seed_is_stable():
    assert derive_seed(7, 1, 2) == derive_seed(7, 1, 2) != derive_seed(7, 2, 1)
    assert 0 <= derive_seed(0) < 2**63


def test_cpu_training_seeds_no_backend_that_is_absent(monkeypatch):
    # torch.manual_seed seeds CUDA, XPU and MTIA too; absent, each queues the seeding
    # with a formatted stack trace: milliseconds per model built and task trained
    import traceback

    formatted = []
    real = traceback.format_stack
    monkeypatch.setattr(traceback, "format_stack", lambda *a: formatted.append(1) or real(*a))
    _train(seed=3)
    assert formatted == []
