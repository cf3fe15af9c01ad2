"""Tables as people write them: missing-value tokens and mostly numeric columns (no stack)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from peertrain.common.events.datasets import MISSING_TOKENS, ColumnSchema, DatasetValidated
from peertrain.common.features import encode_table, parse_missing_values, stratified_holdout
from peertrain.dataset.domain import errors
from peertrain.dataset.domain.limits import Limits
from peertrain.dataset.prepare import PreparedDataset
from peertrain.dataset.prepare.column_types import ColumnCounts, decide_type
from peertrain.dataset.prepare.columns import JUDGED_AFTER


def table(rows: list[list[str]], header: list[str]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def measurements(rows: int, odd: Callable[[int], str | None], *, seed: int = 0) -> bytes:
    """``temp`` (many distinct numbers, ``odd(i)`` where it says), ``colour``, ``label``."""
    rng = np.random.default_rng(seed)
    body = []
    for i in range(rows):
        value = odd(i)
        temp = f"{rng.normal(20, 5):.2f}" if value is None else value
        body.append([temp, ("red", "green", "blue")[i % 3], ("hot", "cold")[i % 2]])
    return table(body, ["temp", "colour", "label"])


def schema_of(result: PreparedDataset) -> dict[str, ColumnSchema]:
    return {c.name: c for c in result.columns}


def test_five_percent_n_a_stays_numeric_and_is_counted_missing(prepare: Callable) -> None:
    # What a user saw: 5% "n/a" made a numeric column 43 categories, "missing: 0".
    result = prepare(measurements(400, lambda i: "n/a" if i % 20 == 0 else None))
    temp = schema_of(result)["temp"]
    assert temp.type == "numeric" and temp.missing == 20 and temp.non_numbers == 0
    assert temp.reason == "numeric: every present cell is a number"
    assert result.feature_spec.input_shape == (4,)  # temp + colour one-hot (3)
    assert result.notes == ()
    assert np.isfinite(np.load(result.train_x)).all()


@pytest.mark.parametrize(
    "token", ["", "NA", "na", "N/A", "n/a", "NaN", "nan", "null", "NULL", "None", "?", "-", " NA "]
)
def test_every_default_token_is_missing(prepare: Callable, token: str) -> None:
    result = prepare(measurements(60, lambda i: token if i % 6 == 0 else None))
    temp = schema_of(result)["temp"]
    assert (temp.type, temp.missing) == ("numeric", 10)


def test_missing_cells_of_a_category_are_their_own_column(prepare: Callable) -> None:
    rows = [[str(i), ("a", "b", "NULL", "N/A")[i % 4], str(i % 2)] for i in range(40)]
    result = prepare(table(rows, ["n", "cat", "label"]))
    cat = result.feature_spec.columns[1]
    assert cat.categories == ("a", "b") and cat.missing_category
    assert schema_of(result)["cat"].missing == 20
    assert schema_of(result)["cat"].reason == "category: 2 distinct values"


def test_the_upload_can_name_its_own_missing_values(prepare: Callable) -> None:
    rows = [[("unknown", "3", "4")[i % 3], ("-", "+")[i % 2], str(i % 2)] for i in range(60)]
    data = table(rows, ["n", "sign", "label"])
    chosen = parse_missing_values("Unknown")
    result = prepare(data, missing_values=chosen)
    schema = schema_of(result)
    assert (schema["n"].type, schema["n"].missing) == ("numeric", 20)
    # "-" is not one of the chosen tokens: a category like "+"
    assert result.feature_spec.columns[1].categories == ("+", "-")
    assert result.feature_spec.missing_tokens == ("", "Unknown")
    assert result.feature_spec.missing_match == "casefold"
    default = prepare(data)
    assert default.feature_spec.missing_tokens == MISSING_TOKENS
    assert default.feature_spec.columns[1].missing_category  # "-" is missing by default


def test_mostly_numeric_column_is_kept_numeric_and_the_strays_reported(
    prepare: Callable,
) -> None:
    def odd(i: int) -> str | None:
        return ("unknown", "err", "inf")[i % 3] if i % 40 == 7 else None

    result = prepare(measurements(400, odd))
    temp = schema_of(result)["temp"]
    assert temp.type == "numeric"
    assert temp.non_numbers == 10 and temp.missing == 10
    assert set(temp.non_number_examples) == {"unknown", "err", "inf"}
    assert temp.reason is not None and temp.reason.startswith(
        "numeric: 97.5% of present cells are numbers; 10 cells like "
    )
    assert temp.distinct is None  # more distinct values than a category may have
    (note,) = result.notes
    assert note.startswith("column 'temp' is kept numeric: 390 of its 400 present cells")
    assert "10 other cells" in note and "'unknown'" in note
    encoding = result.feature_spec.columns[0]
    assert encoding.type == "numeric" and encoding.non_numbers_missing
    assert np.isfinite(np.load(result.train_x)).all()


def test_a_column_under_the_threshold_is_categorical_and_says_why(prepare: Callable) -> None:
    rows = [[("x", "1", "2", "3", "4")[i % 5], str(i % 2)] for i in range(50)]
    result = prepare(table(rows, ["code", "label"]))
    code = schema_of(result)["code"]
    assert code.type == "categorical"
    assert code.reason == "category: 5 distinct values; 80.0% of present cells are numbers " + (
        "(numeric needs 90%)"
    )
    assert result.notes == ()


def test_many_distinct_values_and_too_few_numbers_are_still_refused(prepare: Callable) -> None:
    data = measurements(400, lambda i: f"word{i}" if i % 4 == 0 else None)
    with pytest.raises(errors.TooManyCategories):
        prepare(data)


def test_strays_in_a_later_block_are_read_like_the_first(prepare: Callable) -> None:
    # Small blocks: the first blocks are all numbers, strays come later.
    data = measurements(3000, lambda i: "bad" if i >= 2900 and i % 2 == 0 else None)
    result = prepare(data, limits=Limits(block_bytes=4096))
    temp = schema_of(result)["temp"]
    assert (temp.type, temp.non_numbers, temp.non_number_examples) == ("numeric", 50, ("bad",))


def test_booleans_then_numbers_are_not_boolean(prepare: Callable) -> None:
    rows = [["yes" if i < 200 else str(i), str(i % 2)] for i in range(2000)]
    result = prepare(table(rows, ["mixed", "label"]), limits=Limits(block_bytes=4096))
    mixed = schema_of(result)["mixed"]
    assert mixed.type == "numeric" and mixed.non_numbers == 200
    assert mixed.non_number_examples == ("yes",)


def test_the_encoding_is_the_shared_encoder_on_the_raw_cells(prepare: Callable) -> None:
    # The dataset service and a downloaded model's preprocessing read cells one way.
    rows = []
    for i in range(200):
        temp = ("N/A", " none ", "oops", "-")[i % 4] if i % 9 == 0 else f"{i * 0.5:.1f}"
        rows.append([temp, ("a", "NULL", "b")[i % 3], ("yes", "No", "?")[i % 3], str(i % 2)])
    data = table(rows, ["temp", "cat", "flag", "label"])
    result = prepare(data, holdout_fraction=0.5)
    cells = list(zip(*rows, strict=True))
    raw = {name: list(cells[j]) for j, name in enumerate(["temp", "cat", "flag"])}
    spec = result.feature_spec.model_dump(mode="json")
    encoded = encode_table(spec, raw)
    train = np.load(result.train_x)
    labels = np.array([int(r[3]) for r in rows])
    held = stratified_holdout(labels, 2, 0.5, 7)
    np.testing.assert_allclose(train, encoded[~held], rtol=1e-6)
    assert schema_of(result)["temp"].non_numbers == 6  # the "oops" cells


def test_a_label_read_as_missing_says_which_value(prepare: Callable) -> None:
    rows = [[str(i), ("Mild", "None")[i % 2]] for i in range(20)]
    with pytest.raises(errors.MissingLabel, match="'None' is read as missing"):
        prepare(table(rows, ["n", "severity"]))
    result = prepare(table(rows, ["n", "severity"]), missing_values=parse_missing_values(""))
    assert result.classes == ("Mild", "None")


def test_notes_are_optional_on_the_event() -> None:
    fields = DatasetValidated.model_fields
    assert fields["notes"].default == ()
    assert ColumnSchema(name="a", type="numeric").reason is None


def test_decide_type_is_a_pure_rule() -> None:
    mostly = ColumnCounts(rows=100, numbers=90, non_numbers=10, boolean=False, examples=["x"])
    assert decide_type("a", mostly, cap=100).kind == "numeric"
    fewer = ColumnCounts(rows=100, numbers=89, non_numbers=11, boolean=False, distinct=12)
    assert decide_type("a", fewer, cap=100).kind == "categorical"
    many = ColumnCounts(rows=1000, numbers=500, non_numbers=500, boolean=False, overflow=True)
    assert decide_type("a", many, cap=100).kind == "overflow"
    assert decide_type("a", ColumnCounts(rows=3, missing=3), cap=100).kind == "empty"


def test_a_long_text_column_is_judged_early_and_keeps_no_numbers(
    prepare: Callable, tmp_path: Path
) -> None:
    rows = [[("a", "b", "7")[i % 3], str(i % 2)] for i in range(JUDGED_AFTER + 3000)]
    result = prepare(table(rows, ["mostly_text", "label"]), limits=Limits(block_bytes=65536))
    assert schema_of(result)["mostly_text"].reason == "category: 3 distinct values"
    work = tmp_path / "run1" / "work"
    assert (work / "col0.i32").exists() and not (work / "col0.f32").exists()
