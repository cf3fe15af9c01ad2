"""The architecture summary: every model kind through the graphs' shape inference."""

from __future__ import annotations

from typing import Any

import pytest

from peertrain.common.specs import (
    CNNSpec,
    DataShape,
    LogRegSpec,
    MLPSpec,
    SpecInvalid,
    check_graph,
    count_parameters,
    model_summary,
    parse_model_spec,
    state_shapes,
    zoo_graph,
)

TABLE = DataShape(input_size=12, num_classes=3)
IMAGES = DataShape(image_shape=(3, 32, 32), num_classes=10)
TINY_IMAGES = DataShape(image_shape=(1, 1, 5), num_classes=4)

ZOO: list[dict[str, Any]] = [
    {"arch": "logreg"},
    {"arch": "mlp"},
    {"arch": "mlp", "hidden": [16, 8], "dropout": 0.2, "activation": "gelu"},
    {"arch": "mlp", "hidden": [4], "activation": "tanh"},
]
CNNS: list[dict[str, Any]] = [
    {"arch": "cnn"},
    {"arch": "cnn", "channels": [4, 8, 8], "kernel_size": 5, "hidden": 0},
    {"arch": "cnn", "channels": [4], "hidden": 16, "dropout": 0.5},
    {"arch": "cnn", "channels": [4, 4], "hidden": 0, "dropout": 0.1},
]


@pytest.mark.parametrize(
    ("raw", "features"),
    [(z, f) for z in ZOO for f in (TABLE, IMAGES)]
    + [(c, f) for c in CNNS for f in (IMAGES, TINY_IMAGES)],
)
def test_a_zoo_models_graph_has_the_zoo_models_state_dict(
    raw: dict[str, Any], features: DataShape
) -> None:
    spec = parse_model_spec(raw)
    assert isinstance(spec, LogRegSpec | MLPSpec | CNNSpec)
    graph = zoo_graph(spec, features)
    assert check_graph(graph, features).state() == state_shapes(spec, features)
    summary = model_summary(spec, features)
    assert summary.parameters == count_parameters(spec, features)
    assert sum(row.parameters for row in summary.layers) == summary.parameters
    assert summary.layers[-1].shape == (-1, features.num_classes)


def test_an_mlps_layers_are_named_by_their_paths_in_the_zoo_module() -> None:
    spec = parse_model_spec({"arch": "mlp", "hidden": [16], "dropout": 0.5})
    rows = model_summary(spec, IMAGES).layers
    assert [(r.name, r.op, r.module, r.output, r.parameters) for r in rows] == [
        ("flatten", "flatten", None, "[N, 3072]", 0),
        ("layers_0", "linear", "layers.0", "[N, 16]", 3072 * 16 + 16),
        ("layers_1", "relu", None, "[N, 16]", 0),
        ("layers_2", "dropout", None, "[N, 16]", 0),
        ("layers_3", "linear", "layers.3", "[N, 10]", 16 * 10 + 10),
    ]


def test_a_cnn_without_images_is_refused() -> None:
    with pytest.raises(SpecInvalid, match="needs images"):
        model_summary(parse_model_spec({"arch": "cnn"}), TABLE)


@pytest.mark.parametrize(
    "raw",
    [
        {"arch": "torchvision", "name": "resnet18", "cifar_stem": True},
        {"arch": "torchvision", "name": "resnet50"},
        {"arch": "torchvision", "name": "mobilenet_v3_small"},
    ],
)
def test_a_named_architecture_is_summarised_as_its_resolved_graph(raw: dict[str, Any]) -> None:
    spec = parse_model_spec(raw)
    summary = model_summary(spec, IMAGES)
    assert (summary.arch, summary.name) == ("torchvision", raw["name"])
    assert summary.parameters == count_parameters(spec, IMAGES)
    assert sum(row.parameters for row in summary.layers) == summary.parameters
    assert summary.layers[0].shape is not None and summary.layers[0].shape[0] == -1
    assert summary.layers[-1].output == "[N, 10]"


def test_resnet50_has_every_node_as_a_row() -> None:
    summary = model_summary(parse_model_spec({"arch": "torchvision", "name": "resnet50"}), IMAGES)
    assert len(summary.layers) > 150
    assert len(summary.model_dump_json()) < 60_000


def test_a_shared_layer_counts_once_and_non_tensor_values_are_shown() -> None:
    spec = parse_model_spec(
        {
            "arch": "graph",
            "input_shape": [12],
            "output": "head",
            "nodes": [
                {"name": "a", "op": "linear", "module": "block", "inputs": ["x"],
                 "args": {"in_features": 12, "out_features": 12}},
                {"name": "b", "op": "linear", "module": "block", "inputs": ["a"],
                 "args": {"in_features": 12, "out_features": 12}},
                {"name": "res", "op": "add", "inputs": ["x", "b"]},
                {"name": "n", "op": "size", "inputs": ["res", 0]},
                {"name": "flat", "op": "reshape", "inputs": ["res", "n", -1]},
                {"name": "head", "op": "linear", "module": "head", "inputs": ["flat"],
                 "args": {"in_features": 12, "out_features": 3}},
            ],
        }
    )  # fmt: skip
    summary = model_summary(spec, TABLE)
    rows = {r.name: r for r in summary.layers}
    assert (rows["a"].parameters, rows["b"].parameters) == (156, 0)
    assert (rows["n"].output, rows["n"].shape) == ("N", None)
    assert rows["res"].shape == (-1, 12)
    assert summary.parameters == 156 + 39 == count_parameters(spec, TABLE)
    assert (summary.arch, summary.name, summary.input_shape) == ("graph", None, (12,))
