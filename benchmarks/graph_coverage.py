"""Which torchvision classifiers become layer graphs (a one-off measurement).

Needs torchvision, which the lock does not have: install it beside the venv, not in it,
e.g. ``uv pip install --target /tmp/tv --no-deps torchvision==0.29.2``, then run
``PYTHONPATH=/tmp/tv python benchmarks/graph_coverage.py``. For each architecture:
whether it converts (every step allow-listed), whether ``check_budget`` passes, and the
largest difference between the model's and the rebuilt graph's outputs (eval mode).
"""

from __future__ import annotations

import sys
import time

import torch
import torchvision.models as tvm

from peertrain.common.specs import DataShape, GraphSpec, SpecInvalid, check_budget, check_graph
from peertrain.ml.errors import GraphUnsupported
from peertrain.ml.graph import GraphNet
from peertrain.ml.graph.trace import _Converter, _Tracer

ARCHS = ["resnet18", "resnet34", "resnet50", "mobilenet_v3_small", "efficientnet_b0", "vgg11_bn"]


def main(names: list[str]) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    x = torch.randn(2, 3, 224, 224)
    features = DataShape(image_shape=(3, 224, 224), num_classes=1000)
    for name in names:
        model = getattr(tvm, name)(weights=None).eval()
        start = time.perf_counter()
        try:
            nodes, output = _Converter(model, _Tracer().trace(model)).convert()
        except GraphUnsupported as exc:
            print(f"{name}: does not convert: {exc}")
            continue
        spec = GraphSpec.model_validate(
            {"arch": "graph", "input_shape": [3, 224, 224], "nodes": nodes, "output": output}
        )
        size = len(spec.model_dump_json())
        try:
            budget = f"passes ({check_budget(spec, features):,} state values, "
            budget += f"{check_graph(spec, features).activations:,} activations/sample)"
        except SpecInvalid as exc:
            budget = f"refused: {exc.message}"
        net = GraphNet(spec)
        net.load_state_dict(model.state_dict())
        net.eval()
        with torch.no_grad():
            diff = (net(x) - model(x)).abs().max().item()
        trained = "not tried" if name in NO_TRAINING else _train_alike(model, net, x)
        took = time.perf_counter() - start
        print(
            f"{name}: {len(nodes)} nodes, {size:,} bytes of JSON; check_budget {budget}; "
            f"max |diff| {diff:.3g}; one SGD step bit-identical: {trained}; {took:.1f} s"
        )


NO_TRAINING = {"vgg11_bn"}  # 133 million parameters: two copies training take GBs


def _train_alike(model: torch.nn.Module, net: torch.nn.Module, x: torch.Tensor) -> bool:
    """One SGD(momentum) step in training mode (dropout, stochastic depth, batch norm),
    the same seed for both: are all state values bit-identical after it?"""
    y = torch.tensor([1, 2])
    for m in (model, net):
        m.train()
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        torch.manual_seed(7)
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    theirs, mine = model.state_dict(), net.state_dict()
    return all(torch.equal(theirs[k], mine[k]) for k in theirs)


if __name__ == "__main__":
    main(sys.argv[1:] or ARCHS)
