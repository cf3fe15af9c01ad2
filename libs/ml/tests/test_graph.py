"""Layer graphs: a researcher's module, turned into a graph and rebuilt, computes and
trains exactly as the module does; the graph loader runs nothing from the file."""

from __future__ import annotations

import builtins
import itertools
import json
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from peertrain.common.specs import (
    SpecInvalid,
    check_budget,
    check_graph,
    count_parameters,
    infer_graph,
    parse_data_shape,
    parse_model_spec,
)
from peertrain.common.specs.graph_check import RESERVED_NAMES
from peertrain.common.specs.graph_ops import BATCH, OPS, Tensor
from peertrain.common.specs.shapes import state_shapes
from peertrain.ml.errors import GraphUnsupported
from peertrain.ml.graph import GraphNet, to_graph
from peertrain.ml.graph.ops import FUNCTIONS, LAYERS
from peertrain.ml.weights import dtype_code
from peertrain.ml.zoo import build_model

MNIST = {"image_shape": [1, 28, 28], "num_classes": 10}


class Block(nn.Module):
    """torchvision's BasicBlock, small: a shared in-place ReLU, ``out += identity``."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down is not None:
            identity = self.down(x)
        out += identity
        return self.relu(out)


class ResNetish(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.layer1 = nn.Sequential(Block(8, 8, 1), Block(8, 16, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 2)
        x = self.layer1(x)
        x = torch.flatten(self.pool(x), 1)
        return self.fc(self.drop(x))


class RowLSTM(nn.Module):
    """Each image row a step: ``view(x.size(0), ...)``, the tuple output, ``h[-1]``."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(28, 32, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        seq = x.view(x.size(0), 28, 28)
        out, (h, _) = self.lstm(seq)
        return self.head(out[:, -1, :] + h[-1])


class TinyViT(nn.Module):
    """Patches, a positional parameter, pre-norm attention and MLP blocks."""

    def __init__(self, dim: int = 32, patch: int = 7) -> None:
        super().__init__()
        self.patch = nn.Conv2d(1, dim, patch, patch)
        self.pos = nn.Parameter(torch.randn(1, 16, dim) * 0.02)
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 4, dropout=0.1, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Dropout(0.1), nn.Linear(64, dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        h = self.norm1(t)
        a, _ = self.attn(h, h, h, need_weights=False)
        t = t + a
        t = t + self.mlp(self.norm2(t))
        return self.head(t.mean(dim=1))


class Mixed(nn.Module):
    """The rest of the allow-list: conv1d, group norm, a bidirectional GRU, attention as
    a function, embeddings of computed indices, cat, slices, squeeze and permute."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(28, 16, 3, padding=1)
        self.gn = nn.GroupNorm(4, 16)
        self.gru = nn.GRU(16, 12, bidirectional=True)
        self.bn = nn.BatchNorm1d(24)
        self.emb = nn.Embedding(16, 8)
        self.head = nn.Linear(24 + 8 + 12, 10)

    def forward(self, x):
        c = F.gelu(self.gn(self.conv(x.squeeze(1))), approximate="tanh")
        c = F.avg_pool1d(c, 3, 2, ceil_mode=True)
        out, h = self.gru(c.permute(2, 0, 1))
        q = out.transpose(0, 1).unsqueeze(1)
        pooled = self.bn(F.scaled_dot_product_attention(q, q, q).squeeze(1).mean(1))
        idx = (torch.sigmoid(x.flatten(1)[:, :4]) * 15).long()
        feats = torch.cat([pooled, self.emb(idx).sum(1), h[-1]], dim=1)
        return F.log_softmax(self.head(F.leaky_relu(feats, 0.1)), dim=-1)


MODELS = [ResNetish, RowLSTM, TinyViT, Mixed]


def _batch(seed: int, n: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, 28, 28, generator=gen), torch.randint(0, 10, (n,), generator=gen)


def _pair(kind: type[nn.Module]) -> tuple[nn.Module, GraphNet]:
    torch.manual_seed(0)
    model = kind()
    spec = to_graph(model, _batch(0)[0])
    spec = parse_model_spec(json.loads(json.dumps(spec.model_dump(mode="json"))))
    net = GraphNet(spec)
    net.load_state_dict(model.state_dict())
    return model, net


@pytest.mark.parametrize("kind", MODELS)
def test_the_rebuilt_graph_gives_the_models_outputs_exactly(kind):
    model, net = _pair(kind)
    assert list(net.state_dict()) == list(model.state_dict())
    x, _ = _batch(1)
    model.eval(), net.eval()
    with torch.no_grad():
        assert torch.equal(net(x), model(x))
    with torch.no_grad():
        assert torch.equal(net(x.flatten(1)), model(x))  # flat rows, as the zoo takes them
    model.train(), net.train()
    torch.manual_seed(5)
    want = model(x)
    torch.manual_seed(5)
    assert torch.equal(net(x), want)  # dropout draws the same masks


@pytest.mark.parametrize("kind", MODELS)
def test_training_the_graph_gives_bit_identical_parameters(kind):
    torch.set_num_threads(1)
    model, net = _pair(kind)
    for m in (model, net):
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        m.train()
        for step in range(3):
            x, y = _batch(10 + step)
            torch.manual_seed(100 + step)
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
    mine, theirs = net.state_dict(), model.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in theirs)  # BN statistics included


@pytest.mark.parametrize("kind", MODELS)
def test_the_checked_shapes_and_sizes_are_torchs(kind):
    model, net = _pair(kind)
    features = parse_data_shape(MNIST)
    found = check_graph(net.spec, features)
    x, _ = _batch(2, n=3)
    with torch.no_grad():
        values = net.run(x, keep=True)

    def shape(v):
        if isinstance(v, Tensor):
            return tuple(3 if d == BATCH else d for d in v.shape)
        return tuple(shape(i) for i in v) if isinstance(v, tuple) else v

    for name, value in found.values.items():
        real = values[name]
        if isinstance(real, torch.Tensor | tuple):
            got = tuple(real.shape) if isinstance(real, torch.Tensor) else shape_of(real)
            assert got == shape(value), name
    state = sum(t.numel() for t in model.state_dict().values())
    assert check_budget(net.spec, features) == count_parameters(net.spec, features) == state
    # the state dict, named and shaped torch-free: what starting weights are checked against
    expected = {k: (dtype_code(v), tuple(v.shape)) for k, v in model.state_dict().items()}
    assert state_shapes(net.spec, features) == expected


def shape_of(value):
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    return tuple(shape_of(v) for v in value) if isinstance(value, tuple) else value


def test_build_model_builds_a_graph_with_seeded_weights():
    spec = to_graph(ResNetish(), _batch(0)[0]).model_dump(mode="json")
    a, b = build_model(spec, MNIST, seed=3), build_model(spec, MNIST, seed=3)
    c = build_model(spec, MNIST, seed=4)
    assert isinstance(a, GraphNet) and a.training
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    assert not torch.equal(a.state_dict()["fc.weight"], c.state_dict()["fc.weight"])


def test_a_plain_sequential_keeps_its_numbered_keys():
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
    spec = to_graph(model, _batch(0)[0])
    assert [n.module for n in spec.nodes if n.module] == ["1", "3"]
    assert list(GraphNet(spec).state_dict()) == list(model.state_dict())


def test_a_layer_called_twice_stays_one_layer():
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(784, 784)
            self.out = nn.Linear(784, 10)

        def forward(self, x):
            x = torch.flatten(x, 1)
            return self.out(self.fc(F.relu(self.fc(x))))

    model = Twice()
    spec = to_graph(model, _batch(0)[0])
    assert [n.module for n in spec.nodes if n.op == "linear"] == ["fc", "fc", "out"]
    assert list(GraphNet(spec).state_dict()) == list(model.state_dict())


def test_what_the_allow_list_lacks_is_named():
    class Exp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(784, 10)

        def forward(self, x):
            return torch.exp(self.fc(x.flatten(1)))

    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(784, 10)

        def forward(self, x):
            y = self.fc(x.flatten(1))
            return y if y.sum() > 0 else -y  # depends on the data

    with pytest.raises(GraphUnsupported, match=r"call_function 'exp' \(node 'exp'\)"):
        to_graph(Exp(), _batch(0)[0])
    with pytest.raises(GraphUnsupported, match="cannot trace"):
        to_graph(Branchy(), _batch(0)[0])


def test_the_torch_table_has_exactly_the_allow_list():
    assert set(LAYERS) == {k for k, op in OPS.items() if op.stateful}
    assert set(FUNCTIONS) == {k for k, op in OPS.items() if not op.stateful}
    public = {n for n in dir(nn.Module()) if not n.startswith("_")}
    assert public <= RESERVED_NAMES


HOSTILE_OPS = ["os.system", "__import__", "eval", "torch.load", "builtins.exec", "Linear"]


@pytest.mark.parametrize("op", HOSTILE_OPS)
def test_a_graph_cannot_name_anything_outside_the_table(op):
    spec = {
        "arch": "graph",
        "input_shape": [1, 28, 28],
        "nodes": [
            {"name": "f", "op": "flatten", "inputs": ["x", 1]},
            {"name": "evil", "op": op, "inputs": ["f"], "args": {"command": "rm"}},
        ],
        "output": "evil",
    }
    with pytest.raises(SpecInvalid, match=f"node 1 'evil' \\(op '{op}'\\): not an allowed op"):
        build_model(spec, MNIST)


def test_loading_and_running_a_graph_imports_only_torch(monkeypatch):
    spec = to_graph(TinyViT(), _batch(0)[0]).model_dump(mode="json")
    text = json.dumps(spec)
    x = _batch(1)[0]
    build_model(json.loads(text), MNIST, seed=0)(x)  # torch's own lazy imports, once
    seen: list[str] = []
    real = builtins.__import__

    def record(name, *args, **kwargs):
        seen.append(name)
        return real(name, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.setattr(builtins, "__import__", record)
        net = build_model(json.loads(text), MNIST, seed=0)
        net(x).sum().backward()
        monkeypatch.undo()
    # torch imports inside its own functions; nothing else, nothing named by the file
    assert {n.split(".")[0] for n in seen} <= {"torch"} | sys.stdlib_module_names, seen


def test_functional_dropout_follows_the_rebuilt_models_mode():
    class Drops(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(784, 10)

        def forward(self, x):
            x = F.dropout(x.flatten(1), 0.3, self.training)
            return self.fc(F.dropout(x, p=0.5, training=False))

    for mode in (True, False):
        spec = to_graph(Drops().train(mode), _batch(0)[0])
        assert [n.op for n in spec.nodes] == ["flatten", "dropout", "identity", "linear"]


def test_a_graphs_final_model_rebuilds_with_load_final_and_load():
    from peertrain.ml.export import load, load_final
    from peertrain.ml.export.write import final_pt_bytes

    model, net = _pair(ResNetish)
    spec = net.spec.model_dump(mode="json")
    data = final_pt_bytes(spec, MNIST, model.state_dict())
    final = load_final(data)
    x = _batch(3)[0]
    model.eval()
    with torch.no_grad():
        assert torch.equal(final.model(x), model(x))
    loaded, _ = load(data)  # no plain form: rebuilt as the graph it is
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))


def _cases() -> list[tuple[tuple[int, ...], str, tuple, dict]]:
    """Single ops over a grid of shapes and arguments, the edge cases included."""
    cases: list[tuple[tuple[int, ...], str, tuple, dict]] = []
    for h, k, s, p, ceil, d in itertools.product(
        (5, 8), (2, 3), (1, 2, None), (0, 1), (False, True), (1, 2)
    ):
        cases.append(
            (
                (2, h, h + 1),
                "max_pool2d",
                ("x", k),
                {"stride": s, "padding": p, "ceil_mode": ceil, "dilation": d},
            )
        )
        cases.append(
            ((2, h, h + 1), "avg_pool2d", ("x", k), {"stride": s, "padding": p, "ceil_mode": ceil})
        )
    for h, k, s, p, d in itertools.product(
        (5, 8), (1, 3, 5), (1, 2), (0, 1, "same", "valid"), (1, 2)
    ):
        conv = {
            "in_channels": 2,
            "out_channels": 4,
            "kernel_size": k,
            "stride": s,
            "padding": p,
            "dilation": d,
        }
        cases.append(((2, h, h + 2), "conv2d", ("x",), conv))
    slices = [
        (0,),
        ({"slice": [None, None, None]}, 1),
        ({"slice": [None, None, None]}, {"slice": [1, None, 2]}),
        ({"slice": [None, None, None]}, {"slice": [-2, None, None]}, -1),
        ({"ellipsis": True}, 0),
        ({"slice": [None, None, None]}, None, 2),
        ({"slice": [None, None, None]}, {"slice": [3, 1, None]}),
    ]
    cases += [
        ((3, 4), "getitem", ("x", [*index] if len(index) > 1 else index[0]), {}) for index in slices
    ]
    for shape in ((-1,), (-1, 12), (-1, 4, 3), (2, -1), (-1, 5), (12, -1)):
        cases.append(((3, 4), "reshape", ("x", *shape), {}))
    cases += [((3, 4), "flatten", ("x",), {"start_dim": a}) for a in (0, 1, -1)]
    cases += [((3, 4), "squeeze", ("x", d), {}) for d in (0, 1, -1)]
    cases += [((1, 4), "squeeze", ("x", 1), {}), ((3, 4), "unsqueeze", ("x", 3), {})]
    cases += [((3, 4), "adaptive_avg_pool1d", ("x", n), {}) for n in (1, 2, 7)]
    cases += [
        ((3, 4), "mean", ("x",), {"dim": dims, "keepdim": keep})
        for dims in (1, [1, 2], 0)
        for keep in (False, True)
    ]
    return cases


@pytest.mark.parametrize(("shape", "op", "inputs", "args"), _cases())
def test_the_shape_rules_agree_with_torch(shape, op, inputs, args):
    stateful = op in LAYERS
    item = {"name": "y", "op": op, "inputs": list(inputs), "args": args}
    if stateful:
        item["module"] = "layer"
    spec = parse_model_spec(
        {"arch": "graph", "input_shape": list(shape), "nodes": [item], "output": "y"}
    )
    x = torch.randn(2, *shape)
    try:
        found = infer_graph(spec).values["y"]
    except SpecInvalid:
        found = None
    try:
        with torch.no_grad():
            real = GraphNet(spec).run(x)["y"]
    except (RuntimeError, ValueError, IndexError, TypeError):
        real = None
    if found is None:  # refused: torch refuses too, or the op touched the batch
        return
    assert real is not None, f"accepted {found}, torch refuses"
    assert tuple(real.shape) == tuple(2 if d == BATCH else d for d in found.shape)
