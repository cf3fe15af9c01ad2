"""Compressed updates: sizes, round trips, error feedback, and refusals of bad encodings."""

from __future__ import annotations

import pytest
import torch

from peertrain.common.specs import CompressionSpec
from peertrain.ml.weights.compression import (
    CompressionInvalid,
    compress_update,
    decode_update,
    encode_update,
    encoded_bytes,
    max_encoded_bytes,
)


def _delta(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "fc.weight": torch.randn(128, 64, generator=g),
        "fc.bias": torch.randn(128, generator=g),
        "bn.num_batches_tracked": torch.tensor(3, dtype=torch.int64),
    }


def test_none_is_the_update_itself() -> None:
    delta = _delta()
    assert decode_update(encode_update(delta, CompressionSpec()), delta, CompressionSpec()) == delta


@pytest.mark.parametrize(
    ("spec", "min_ratio", "max_error"),
    [
        (CompressionSpec(kind="fp16"), 1.99, 2e-3),
        (CompressionSpec(kind="int8"), 3.9, 2e-2),
        (CompressionSpec(kind="int8", block=0), 3.99, 3e-2),
        (CompressionSpec(kind="topk", ratio=0.01), 50, None),
    ],
)
def test_each_kind_saves_bytes_and_decodes_near_the_delta(
    spec: CompressionSpec, min_ratio: float, max_error: float | None
) -> None:
    delta = _delta()
    floats = {k: v for k, v in delta.items() if v.is_floating_point()}
    encoded = encode_update(floats, spec)
    assert encoded_bytes(floats) / encoded_bytes(encoded) >= min_ratio
    decoded = decode_update(encoded, floats, spec)
    assert {k: v.shape for k, v in decoded.items()} == {k: v.shape for k, v in floats.items()}
    if max_error is not None:
        for k, v in floats.items():
            assert (decoded[k] - v).abs().max() <= max_error * v.abs().max()
    else:  # top-k keeps exactly the largest values
        w = floats["fc.weight"].reshape(-1)
        got = decoded["fc.weight"].reshape(-1)
        kept = got != 0
        assert int(kept.sum()) == spec.kept(w.numel())
        assert w[~kept].abs().max() <= w[kept].abs().min()


def test_encoding_is_deterministic() -> None:
    spec = CompressionSpec(kind="topk", ratio=0.05)
    a, b = encode_update(_delta(), spec), encode_update(_delta(), spec)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_non_float_tensors_travel_as_they_are() -> None:
    delta = _delta()
    spec = CompressionSpec(kind="int8")
    decoded = decode_update(encode_update(delta, spec), delta, spec)
    assert torch.equal(decoded["bn.num_batches_tracked"], delta["bn.num_batches_tracked"])


def test_error_feedback_sends_what_was_left_out_later() -> None:
    """The sum of what top-k sent over rounds approaches the sum of the deltas."""
    spec = CompressionSpec(kind="topk", ratio=0.1)
    residual = None
    deltas = [
        {"w": torch.randn(1000, generator=torch.Generator().manual_seed(s))} for s in range(30)
    ]
    sent = torch.zeros(1000)
    for delta in deltas:
        encoded = compress_update(delta, spec, residual)
        residual = encoded.residual
        sent += decode_update(encoded.tensors, delta, spec)["w"]
    total = torch.stack([d["w"] for d in deltas]).sum(dim=0)
    assert residual is not None
    assert torch.allclose(sent + residual["w"], total, atol=1e-2)
    without = torch.stack(
        [decode_update(encode_update(d, spec), d, spec)["w"] for d in deltas]
    ).sum(dim=0)
    assert (total - sent).norm() < (total - without).norm()


@pytest.mark.parametrize(
    ("spec", "tamper", "why"),
    [
        (CompressionSpec(kind="int8"), lambda e: e.pop("fc.bias.__scale__"), "missing"),
        (
            CompressionSpec(kind="int8"),
            lambda e: e["fc.bias.__scale__"].fill_(float("nan")),
            "scale",
        ),
        (CompressionSpec(kind="int8"), lambda e: e["fc.bias.__scale__"].fill_(-1.0), "scale"),
        (CompressionSpec(kind="fp16"), lambda e: e.update({"extra": torch.zeros(1)}), "unexpected"),
        (
            CompressionSpec(kind="fp16"),
            lambda e: e.update({"fc.bias": torch.zeros(3, dtype=torch.float16)}),
            "shape",
        ),
        (
            CompressionSpec(kind="fp16"),
            lambda e: e.update({"fc.bias": torch.full((128,), float("inf"), dtype=torch.float16)}),
            "finite",
        ),
        (CompressionSpec(kind="topk"), lambda e: e["fc.bias.__idx__"].fill_(10_000), "range"),
        (CompressionSpec(kind="topk"), lambda e: e["fc.weight.__idx__"].fill_(0), "repeated"),
        (
            CompressionSpec(kind="topk"),
            lambda e: e.update(
                {
                    "fc.weight.__idx__": torch.arange(8192, dtype=torch.int32),
                    "fc.weight.__val__": torch.zeros(8192, dtype=torch.float16),
                }
            ),
            "more than",
        ),
        (
            CompressionSpec(kind="topk"),
            lambda e: e.update({"fc.bias.__idx__": e["fc.bias.__idx__"].to(torch.int64)}),
            "int32",
        ),
    ],
)
def test_a_hostile_encoding_is_refused(spec: CompressionSpec, tamper: object, why: str) -> None:
    delta = {k: v for k, v in _delta().items() if v.is_floating_point()}
    encoded = encode_update(delta, spec)
    tamper(encoded)  # type: ignore[operator]
    with pytest.raises(CompressionInvalid, match=why):
        decode_update(encoded, delta, spec)


def test_only_topk_keeps_a_residual() -> None:
    delta = _delta()
    for kind in ("none", "fp16", "int8"):
        assert compress_update(delta, CompressionSpec(kind=kind)).residual is None  # type: ignore[arg-type]
    assert compress_update(delta, CompressionSpec(kind="topk")).residual is not None


@pytest.mark.parametrize("kind", ["none", "fp16", "int8", "topk"])
def test_an_encoding_never_weighs_more_than_its_cap(kind: str) -> None:
    spec = CompressionSpec(kind=kind, ratio=1.0 if kind == "topk" else 0.01)  # type: ignore[arg-type]
    delta = _delta()
    assert encoded_bytes(encode_update(delta, spec)) == max_encoded_bytes(delta, spec)


def test_bad_specs_are_refused() -> None:
    with pytest.raises(ValueError):
        CompressionSpec(kind="topk", ratio=0)
    with pytest.raises(ValueError):
        CompressionSpec(kind="int8", block=-1)
