"""Safetensors only, deltas and norms, and update validation against hostile input."""

from __future__ import annotations

import io
import math
import pickle
import pickletools
import struct

import pytest
import torch

from peertrain.ml.errors import NotSafetensors, UpdateInvalid
from peertrain.ml.problems import ProblemCode
from peertrain.ml.weights import (
    apply_delta,
    compute_delta,
    l2_norm,
    load_state_file,
    load_update,
    read_header,
    save_state_file,
    state_from_bytes,
    state_to_bytes,
    update_problems,
    validate_update,
)


class _Canary:
    """Unpickling this creates the file ``path``: proof that code ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_round_trip_keeps_names_dtypes_values_and_metadata(global_state):
    mixed = dict(global_state) | {"h": torch.arange(6, dtype=torch.float16).view(2, 3)}
    data = state_to_bytes(mixed, metadata={"round": "3"})
    back = state_from_bytes(data)
    assert set(back) == set(mixed)
    assert all(torch.equal(back[k], mixed[k]) and back[k].dtype == mixed[k].dtype for k in mixed)
    assert read_header(data, len(data)).metadata == {"round": "3"}


def test_file_round_trip(tmp_path, global_state):
    save_state_file(global_state, tmp_path / "v1.safetensors")
    back = load_state_file(tmp_path / "v1.safetensors")
    assert all(torch.equal(back[k], global_state[k]) for k in global_state)


def test_a_pickle_posing_as_an_update_is_refused_without_running(tmp_path, global_state):
    canary = tmp_path / "canary"
    payload = pickle.dumps({"a.weight": _Canary(str(canary))}, protocol=4)
    (tmp_path / "update.safetensors").write_bytes(payload)
    with pytest.raises(NotSafetensors):
        load_update(payload, global_state, max_norm=10)
    with pytest.raises(NotSafetensors):
        state_from_bytes(payload)
    with pytest.raises(NotSafetensors):
        load_state_file(tmp_path / "update.safetensors")
    assert not canary.exists()
    # The control, read without running it: unpickling this payload would import
    # open (io.open) and call it on the canary's path (STACK_GLOBAL, then REDUCE), so the
    # absent canary above means the loaders never unpickled it.
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(payload)]
    names = {name for name, _ in ops}
    args = {arg for _, arg in ops}
    assert {"STACK_GLOBAL", "REDUCE"} <= names
    assert {"open", str(canary)} <= args


def test_a_torch_save_zip_is_refused(global_state):
    buf = io.BytesIO()
    torch.save(global_state, buf)
    with pytest.raises(NotSafetensors):
        state_from_bytes(buf.getvalue())


@pytest.mark.parametrize(
    "mangle",
    [
        lambda d: d[:5],
        lambda d: d[:-4],
        lambda d: d + b"\0\0\0\0",
        lambda d: struct.pack("<Q", 2) + b"[]",
        lambda d: struct.pack("<Q", 9) + b'{"x": 1} ',
        lambda d: struct.pack("<Q", 1 << 40) + d[8:],
        lambda d: d.replace(b'"F32"', b'"Q32"', 1),
    ],
)
def test_malformed_safetensors_are_refused(global_state, mangle):
    with pytest.raises(NotSafetensors):
        state_from_bytes(mangle(state_to_bytes(global_state)))


def test_overlapping_offsets_are_refused():
    entry = b'{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
    header = b'{"a":' + entry + b',"b":' + entry + b"}"
    data = struct.pack("<Q", len(header)) + header + b"\0" * 4
    with pytest.raises(NotSafetensors, match="overlaps"):
        read_header(data, len(data))


def test_delta_apply_and_norm(global_state):
    new = {k: v + 0.5 for k, v in global_state.items()}
    delta = compute_delta(new, global_state)
    assert all(torch.allclose(delta[k], torch.full_like(v, 0.5)) for k, v in global_state.items())
    back = apply_delta(global_state, delta)
    assert all(torch.allclose(back[k], new[k]) for k in new)
    n = sum(v.numel() for v in global_state.values())
    assert l2_norm(delta) == pytest.approx(0.5 * math.sqrt(n), rel=1e-6)
    with pytest.raises(ValueError, match="missing"):
        compute_delta({"a.bias": new["a.bias"]}, global_state)


def test_an_update_with_integer_buffers_has_a_norm_and_is_accepted():
    # BatchNorm's num_batches_tracked is int64: its delta is the batches trained
    reference = {"bn.weight": torch.ones(3), "bn.num_batches_tracked": torch.tensor(5)}
    update = {"bn.weight": torch.full((3,), 2.0), "bn.num_batches_tracked": torch.tensor(16)}
    assert l2_norm(update) == math.sqrt(3 * 4.0 + 16**2)
    assert validate_update(update, reference, max_norm=100.0) == []


def test_validate_accepts_a_good_update(global_state):
    update = {k: torch.full_like(v, 0.01) for k, v in global_state.items()}
    assert validate_update(update, global_state, max_norm=1.0) == []
    assert load_update(state_to_bytes(update), global_state, max_norm=1.0).keys() == update.keys()


def _good(state):
    return {k: torch.full_like(v, 0.01) for k, v in state.items()}


@pytest.mark.parametrize(
    ("break_it", "expect", "code"),
    [
        (lambda u: u["a.weight"].view(-1).__setitem__(3, float("nan")), "non-finite", "non_finite"),
        (lambda u: u["b.bias"].__setitem__(0, float("inf")), "non-finite", "non_finite"),
        (lambda u: u.__setitem__("a.bias", torch.zeros(8)), "shape", "wrong_tensors"),
        (
            lambda u: u.__setitem__("a.bias", torch.zeros(7, dtype=torch.float64)),
            "dtype",
            "wrong_tensors",
        ),
        (lambda u: u.pop("b.weight"), "missing", "wrong_tensors"),
        (lambda u: u.__setitem__("extra", torch.zeros(1)), "unexpected", "wrong_tensors"),
        (lambda u: [t.mul_(100.0) for t in u.values()], "exceeds the bound", "norm_too_large"),
    ],
)
def test_validate_rejects_hostile_updates(global_state, break_it, expect, code):
    update = _good(global_state)
    norm = l2_norm(update)
    break_it(update)
    problems = validate_update(update, global_state, max_norm=10 * norm)
    assert problems and any(expect in p for p in problems)
    with pytest.raises(UpdateInvalid) as info:
        load_update(state_to_bytes(update), global_state, max_norm=10 * norm)
    assert any(expect in p for p in info.value.problems)
    assert info.value.detail == {"problems": info.value.problems}
    assert info.value.problem_codes == {ProblemCode(code)}
    assert [p.code for p in update_problems(update, global_state, max_norm=10 * norm)] == [
        ProblemCode(code)
    ] * len(problems)


def test_problem_codes_never_depend_on_tensor_names(global_state):
    update = _good(global_state) | {"non-finite L2 norm": torch.zeros(1)}
    with pytest.raises(UpdateInvalid) as info:
        load_update(state_to_bytes(update), global_state)
    assert info.value.problem_codes == {ProblemCode.WRONG_TENSORS}


def test_not_safetensors_is_coded():
    with pytest.raises(NotSafetensors) as info:
        load_update(b"\x80\x04 a pickle", {})
    assert info.value.problem_codes == {ProblemCode.NOT_SAFETENSORS}


def test_header_layout_is_checked_before_decoding(global_state, monkeypatch):
    import peertrain.ml.weights.validate as validate

    update = _good(global_state) | {"a.bias": torch.zeros(99)}
    monkeypatch.setattr(validate, "state_from_bytes", lambda data: pytest.fail("decoded"))
    with pytest.raises(UpdateInvalid, match="shape"):
        load_update(state_to_bytes(update), global_state)
