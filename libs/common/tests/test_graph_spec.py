"""Layer graphs checked without torch: what a hostile or broken graph gets back."""

from __future__ import annotations

import pytest

from peertrain.common.specs import (
    MAX_GRAPH_ACTIVATIONS_PER_SAMPLE,
    GraphSpec,
    SpecInvalid,
    check_budget,
    parse_data_shape,
    parse_model_spec,
)

MNIST = parse_data_shape({"image_shape": [1, 28, 28], "num_classes": 10})
ROWS = parse_data_shape({"input_size": 4, "num_classes": 3})


def graph(*nodes, input_shape=(1, 28, 28), output=None):
    return {
        "arch": "graph",
        "input_shape": list(input_shape),
        "nodes": list(nodes),
        "output": output or nodes[-1]["name"],
    }


def node(name, op, *inputs, module=None, **args):
    item = {"name": name, "op": op, "inputs": list(inputs), "args": args}
    if module is not None:
        item["module"] = module
    return item


FLAT = node("f", "flatten", "x", 1)
HEAD = node("fc", "linear", "f", module="fc", in_features=784, out_features=10)


def refused(spec, features=MNIST) -> SpecInvalid:
    with pytest.raises(SpecInvalid) as info:
        check_budget(parse_model_spec(spec), features)
    return info.value


def test_a_small_graph_passes_with_its_parameter_count():
    assert check_budget(parse_model_spec(graph(FLAT, HEAD)), MNIST) == 7850


@pytest.mark.parametrize("op", ["os.system", "exec", "torch.load", "__import__", "conv3d"])
def test_an_op_outside_the_allow_list_is_refused_by_name(op):
    error = refused(graph(FLAT, node("bad", op, "f"), HEAD))
    assert "node 1 'bad' (op '" + op + "'): not an allowed op" in error.message
    assert error.detail[0]["loc"] == "model.nodes.1.op"


@pytest.mark.parametrize("ref", ["nowhere", "fc"])
def test_a_reference_to_a_missing_or_later_node_is_refused(ref):
    error = refused(graph(node("f", "flatten", ref, 1), HEAD))
    assert f"node 0 'f' (op 'flatten'): {ref!r} is not an earlier node" in error.message
    assert error.detail[0]["loc"] == "model.nodes.0.inputs"


def test_parameters_over_the_budget_are_refused_at_the_node():
    wide = node("wide", "linear", "f", module="wide", in_features=784, out_features=100_000)
    error = refused(graph(FLAT, wide))
    assert "node 1 'wide' (op 'linear')" in error.message and "50,000,000" in error.message


def test_an_activation_bomb_is_refused_at_the_node():
    bomb = node("bomb", "linear", "x", module="bomb", in_features=4, out_features=5_000_000)
    error = refused(graph(bomb, input_shape=(4,)), ROWS)
    assert "node 0 'bomb' (op 'linear'): 5,000,000 values per sample" in error.message
    # many nodes, each within bounds, together over the total
    nodes = [node("up", "unsqueeze", "x", -1)]
    nodes.append(node("big", "mul", "up", 1.0))
    grow = node("grow", "linear", "big", module="grow", in_features=1, out_features=1 << 20)
    nodes.append(grow)
    nodes += [node(f"r{i}", "relu", "grow") for i in range(40)]
    error = refused(graph(*nodes, input_shape=(4,)), ROWS)
    assert "values per sample, more than" in error.message
    assert f"{MAX_GRAPH_ACTIVATIONS_PER_SAMPLE:,}" in error.message


def test_an_attention_bomb_is_refused():
    seq = node("seq", "reshape", "f", -1, 784, 1)
    emb = node("emb", "linear", "seq", module="emb", in_features=1, out_features=8)
    attn = node(
        "attn",
        "multihead_attention",
        "emb",
        "emb",
        "emb",
        module="attn",
        embed_dim=8,
        num_heads=8,
        batch_first=True,
    )
    error = refused(graph(FLAT, seq, emb, attn))
    assert "node 3 'attn' (op 'multihead_attention')" in error.message


@pytest.mark.parametrize(
    ("bad", "loc", "text"),
    [
        (
            node("fc", "linear", "f", module="fc", in_features=783, out_features=10),
            "inputs",
            "in_features=783",
        ),
        (
            node("fc", "linear", "f", module="fc", in_features="784", out_features=10),
            "args.in_features",
            "integer",
        ),
        (node("fc", "linear", "f", module="fc", out_features=10), "args.in_features", "missing"),
        (
            node("fc", "linear", "f", module="fc", in_features=784, out_features=10, evil=1),
            "args.evil",
            "unexpected",
        ),
        (node("fc", "linear", "f", in_features=784, out_features=10), "module", "give module"),
        (
            node("fc", "linear", "f", "f", module="fc", in_features=784, out_features=10),
            "inputs",
            "at most",
        ),
        (node("fc", "softmax", "f", dim=0), "args.dim", "batch dimension"),
        (node("fc", "softmax", "f", 0), "inputs", "batch dimension"),
    ],
)
def test_bad_args_and_shapes_are_refused_at_the_field(bad, loc, text):
    error = refused(graph(FLAT, bad))
    assert error.detail[0]["loc"] == f"model.nodes.1.{loc}"
    assert "node 1 'fc'" in error.message and text in error.message


@pytest.mark.parametrize(
    "spec",
    [
        graph(FLAT, HEAD, input_shape=(-1, 28, 28)),
        graph(FLAT, HEAD, input_shape=()),
        {**graph(FLAT, HEAD), "nodes": []},
        {**graph(FLAT, HEAD), "version": 2},
        {**graph(FLAT, HEAD), "code": "import os"},
        graph(node("x", "flatten", "x", 1), HEAD),
        graph(node("f", "flatten", "x", {"__class__": 1}), HEAD),
        graph(node("f", "flatten", "x", float("nan")), HEAD),
        graph(node("f", "flatten", "x", [[1, [2]]]), HEAD),
        graph(node("f", "flatten", "x", *range(20)), HEAD),
        graph(node("f", "flatten", "x", start_dim={"a": 1}), HEAD),
        graph(node("f", "flatten", "x", start_dim="os.system('rm -rf /')"), HEAD),
        graph(
            FLAT, node("fc", "linear", "f", module="../../etc", in_features=784, out_features=10)
        ),
        graph(FLAT, {**HEAD, "name": "a" * 200}),
        {**graph(FLAT, HEAD), "nodes": [FLAT] * 4001},
        {
            **graph(FLAT, HEAD),
            "nodes": [node(f"n{i}", "cat", ["a" * 120] * 16) for i in range(800)],
        },
    ],
)
def test_malformed_json_is_refused_when_parsed(spec):
    with pytest.raises(SpecInvalid):
        parse_model_spec(spec)


def test_the_input_and_output_must_fit_the_data():
    error = refused(graph(FLAT, HEAD, input_shape=(784,)))
    assert error.detail[0]["loc"] == "model.input_shape"
    error = refused(
        graph(FLAT, node("fc", "linear", "f", module="fc", in_features=784, out_features=7))
    )
    assert error.detail[0]["loc"] == "model.output" and "[N, 10]" in error.message
    error = refused(graph(FLAT, HEAD, output="f"))
    assert error.detail[0]["loc"] == "model.output"


def test_layers_cannot_collide_in_the_state_dict():
    other = node("fc2", "linear", "fc", module="fc", in_features=10, out_features=10)
    error = refused(graph(FLAT, HEAD, other))
    assert "shared layer must repeat its op and args" in error.message
    inner = node("p", "parameter", module="fc.weight", shape=[10, 784])
    assert "is a layer, not a container" in refused(graph(FLAT, HEAD, inner, output="fc")).message
    nested = node("p", "parameter", module="fc.w", shape=[3])
    outer = node("q", "parameter", module="fc", shape=[3])
    assert "already contains layers" in refused(graph(FLAT, nested, outer, HEAD)).message
    forward = node("fc", "linear", "f", module="forward", in_features=784, out_features=10)
    assert "reserved" in refused(graph(FLAT, forward)).message


def test_the_batch_dimension_is_never_mixed():
    mixed = node("m", "reshape", "x", -1, 28)
    assert "mix the batch" in refused(graph(mixed, HEAD)).message
    assert "merge the batch" in refused(graph(node("f", "flatten", "x"), HEAD)).message
    error = refused(graph(FLAT, node("g", "getitem", "f", 0), HEAD))
    assert "would pick samples of the batch" in error.message


def test_a_graph_is_a_model_spec_like_the_zoos():
    spec = parse_model_spec(graph(FLAT, HEAD))
    assert isinstance(spec, GraphSpec)
    assert parse_model_spec(spec.model_dump(mode="json")) == spec


def test_arithmetic_on_constants_stays_bounded():
    nodes = [node("s", "size", "x", 1), node("n0", "mul", "s", 65536)]
    nodes += [node(f"n{i}", "mul", f"n{i - 1}", f"n{i - 1}") for i in range(1, 50)]
    error = refused(graph(*nodes, FLAT, HEAD))
    assert "node 2 'n1' (op 'mul'): the result is out of range" in error.message


def test_a_graph_of_the_largest_size_is_checked():
    nodes = [FLAT] + [node(f"r{i}", "relu", "f" if i == 0 else f"r{i - 1}") for i in range(3998)]
    spec = parse_model_spec(graph(*nodes, {**HEAD, "inputs": ["r3997"]}))
    assert check_budget(spec, MNIST) == 7850
