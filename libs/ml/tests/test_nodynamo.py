"""The optimizer step without ``torch._dynamo``: the same bits, and no import."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from peertrain.ml.training.nodynamo import step


def _train(optimizer: str, own_step: bool) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 3)
    )
    opt: torch.optim.Optimizer
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2)
    g = torch.Generator().manual_seed(1)
    for _ in range(30):
        loss = model(torch.randn(5, 8, generator=g)).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        if own_step:
            step(opt)
        else:
            opt.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_step_gives_torchs_bits(optimizer: str) -> None:
    ours, torchs = _train(optimizer, True), _train(optimizer, False)
    assert all(torch.equal(a, b) for a, b in zip(ours, torchs, strict=True))


def test_training_in_a_fresh_process_never_imports_dynamo() -> None:
    code = (
        "import sys, torch\n"
        "from peertrain.ml.training import train_local\n"
        "from peertrain.ml.zoo import build_model\n"
        "spec = {'input_size': 4, 'num_classes': 3}\n"
        "model = build_model({'arch': 'mlp', 'hidden': [8]}, spec, seed=1)\n"
        "x, y = torch.randn(32, 4), torch.randint(0, 3, (32,))\n"
        "for opt in ('sgd', 'adam'):\n"
        "    train_local(model, x, y, {'optimizer': opt, 'local_epochs': 2, 'batch_size': 8})\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
