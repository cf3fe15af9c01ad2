"""Validation and encoding of tables: type inference, encoding, bad input (no stack)."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest

from peertrain.dataset.domain import errors
from peertrain.dataset.domain.limits import Limits


def load(path: object) -> dict[str, np.ndarray]:
    with np.load(path) as data:  # type: ignore[arg-type]
        return {k: data[k] for k in data.files}


def test_clean_csv_is_counted_typed_and_split(prepare: Callable, clean_csv: bytes) -> None:
    result = prepare(clean_csv)
    assert result.kind == "table"
    assert result.rows == 60
    assert result.classes == ("setosa", "versicolor", "virginica")
    assert result.class_counts == (20, 20, 20)
    assert result.holdout_rows == 6 and result.train_rows == 54
    assert result.holdout_class_counts == (2, 2, 2)
    types = {c.name: c.type for c in result.columns}
    assert types == {
        "length": "numeric",
        "width": "numeric",
        "flag": "boolean",
        "colour": "categorical",
        "species": "label",
    }
    spec = result.feature_spec
    assert spec.input_shape == (5,)  # length, width, flag, colour one-hot (2)
    assert [c.name for c in spec.columns] == ["length", "width", "flag", "colour"]
    assert spec.columns[3].categories == ("blue", "red")
    x = np.load(result.train_x)
    y = np.load(result.train_y)
    assert x.shape == (54, 5) and x.dtype == np.float32
    assert y.shape == (54,) and set(np.unique(y)) == {0, 1, 2}
    # standardised with the training part's statistics
    assert abs(float(x[:, 0].mean())) < 1e-5 and abs(float(x[:, 0].std()) - 1) < 1e-4
    held = load(result.holdout)
    assert held["X"].shape == (6, 5) and held["y"].dtype == np.int64
    assert sorted(held["y"].tolist()) == [0, 0, 1, 1, 2, 2]


def test_missing_values_follow_the_documented_policy(prepare: Callable) -> None:
    lines = ["num,cat,label"]
    for i in range(40):
        num = "NA" if i % 10 == 0 else "?" if i % 10 == 5 else str(i)
        cat = "" if i % 4 == 0 else ("a", "b")[i % 2]
        lines.append(f"{num},{cat},{i % 2}")
    result = prepare(("\n".join(lines) + "\n").encode(), holdout_fraction=0.5)
    num, cat = result.feature_spec.columns
    assert num.type == "numeric" and num.fill is not None
    schema = {c.name: c for c in result.columns}
    assert schema["num"].missing == 8 and schema["cat"].missing == 10
    assert cat.categories == ("a", "b") and cat.missing_category and cat.width == 3
    x = np.concatenate([np.load(result.train_x), load(result.holdout)["X"]])
    # every row one-hot over a, b, missing
    assert np.all(x[:, 1:].sum(axis=1) == 1)
    assert x[:, 3].sum() == 10
    # a missing number is the training median, standardised
    expected = (num.fill - num.mean) / num.std
    assert np.isclose(x[:, 0], expected).sum() >= 8


def test_delimiters_whitespace_bom_and_gzip(prepare: Callable, gzip_of: Callable) -> None:
    text = "\ufeff a ; b ;label\n 1 ; x ; yes\n2;y;no\n3 ;x;yes\n4;y; no\n5;x;yes\n6;y;no\n"
    for data in (text.encode(), gzip_of(text.encode())):
        result = prepare(data, name="data.csv.gz", holdout_fraction=0.34)
        assert [c.name for c in result.columns] == ["a", "b", "label"]
        assert result.classes == ("no", "yes")
        assert result.rows == 6
        assert result.preview["rows"][0] == ["1", "x", "yes"]
    tabbed = "a\tb\tlabel\n1\t2\tx\n3\t4\ty\n5\t6\tx\n7\t8\ty\n"
    assert prepare(tabbed.encode(), holdout_fraction=0.5).feature_spec.input_size == 2


def test_zip_of_csvs_is_concatenated(prepare: Callable, zip_of: Callable, clean_csv: bytes) -> None:
    head, _, body = clean_csv.partition(b"\n")
    lines = body.splitlines(keepends=True)
    data = zip_of({"part-2.csv": head + b"\n" + b"".join(lines[30:]), "part-1.csv": clean_csv})
    result = prepare(data, name="parts.zip")
    assert result.rows == 90


def test_zip_csvs_must_share_the_header(prepare: Callable, zip_of: Callable) -> None:
    data = zip_of({"a.csv": b"x,y\n1,a\n2,b\n", "b.csv": b"x,z\n1,a\n2,b\n"})
    with pytest.raises(errors.InvalidDataset, match="same header"):
        prepare(data)


def test_formula_cells_are_plain_data(prepare: Callable) -> None:
    rows = ["formula,value,label"]
    cells = ["=cmd|' /C calc'!A0", "+SUM(A1:A2)", "-2+3", "@SUM(1)"]
    for i in range(12):
        rows.append(f"{cells[i % 4]},{i},{i % 2}")
    result = prepare(("\n".join(rows) + "\n").encode(), holdout_fraction=0.25)
    column = result.feature_spec.columns[0]
    assert column.type == "categorical"
    assert set(column.categories or ()) == set(cells)
    assert result.preview["rows"][0][0] == cells[0]
    json.dumps(result.preview)


def test_numbers_sort_classes_numerically(prepare: Callable) -> None:
    data = "f,label\n" + "".join(f"{i},{[2, 10, 1][i % 3]}\n" for i in range(30))
    assert prepare(data.encode()).classes == ("1", "2", "10")


def test_label_column_by_name(prepare: Callable, clean_csv: bytes) -> None:
    result = prepare(clean_csv, label_column="colour")
    assert result.classes == ("blue", "red")
    assert result.label_column == "colour"
    assert "species" in [c.name for c in result.feature_spec.columns]


@pytest.mark.parametrize(
    ("data", "error", "detail"),
    [
        (b"", errors.EmptyFile, {}),
        (b"a,b\n", errors.EmptyFile, {}),
        (b"\x89PNG\r\n\x1a\n\x00\x00", errors.NotCsvOrZip, {}),
        (b"just some words\nwithout any delimiter\n", errors.NotCsvOrZip, {}),
        (b"a,b,c\n1,2,x\n3,4,y\n5,6\n7,8,x\n", errors.RaggedRow, {"line": 4}),
        (b"a,b,c\n1,2,x\n\n3,4,y,9\n", errors.RaggedRow, {"line": 4}),
        (b'a,b,c\n1,"multi\nline",x\n3,4\n', errors.RaggedRow, {"line": 4}),
        (b"a,b\n1,x\n1,x\n1,x\n", errors.SingleClass, {}),
        (b"a,b\n1,x\n2,\n3,y\n", errors.MissingLabel, {"line": 3}),
        (b"a,b\ncaf\xe9,x\n2,y\n", errors.NotUtf8, {"line": 2}),
        (b"a,a\n1,x\n2,y\n", errors.InvalidDataset, {}),
    ],
)
def test_bad_tables_are_refused_with_a_reason(
    prepare: Callable, data: bytes, error: type[Exception], detail: dict[str, int]
) -> None:
    with pytest.raises(error) as caught:
        prepare(data)
    assert isinstance(caught.value, errors.InvalidDataset)
    for key, value in detail.items():
        assert caught.value.detail[key] == value, caught.value.detail
        assert f"line {value}" in caught.value.message


def test_non_utf8_deep_in_the_file_names_its_line(prepare: Callable) -> None:
    good = "".join(f"{i},{i % 2}\n" for i in range(30_000)).encode()
    data = b"a,label\n" + good + b"caf\xe9,1\n"
    with pytest.raises(errors.NotUtf8) as caught:
        prepare(data)
    assert caught.value.detail["line"] == 30_002


def test_missing_label_column_is_named(prepare: Callable, clean_csv: bytes) -> None:
    with pytest.raises(errors.MissingLabelColumn, match="'nope'"):
        prepare(clean_csv, label_column="nope")


def test_a_field_over_the_limit_names_its_line(prepare: Callable) -> None:
    big = b"x" * (1024 * 1024 + 1)
    data = b"a,b,label\n1,2,x\n3,4,y\n5," + big + b",x\n"
    with pytest.raises(errors.FieldTooLarge) as caught:
        prepare(data)
    assert caught.value.detail["line"] == 4
    huge = b"a,label\n1,x\n" + b"y" * (5 * 1024 * 1024) + b",x\n"
    with pytest.raises(errors.FieldTooLarge):
        prepare(huge)


def test_cardinality_cap_names_the_column(prepare: Callable) -> None:
    data = "city,label\n" + "".join(f"town{i},{i % 2}\n" for i in range(200))
    with pytest.raises(errors.TooManyCategories, match="'city'") as caught:
        prepare(data.encode(), limits=Limits(max_categories=50))
    assert caught.value.detail["column"] == "city"


def test_too_many_classes_and_rows(prepare: Callable) -> None:
    data = "a,label\n" + "".join(f"{i},c{i}\n" for i in range(50))
    with pytest.raises(errors.TooManyClasses):
        prepare(data.encode(), limits=Limits(max_classes=10))
    with pytest.raises(errors.TooManyRows):
        prepare(data.encode(), limits=Limits(max_rows=20))


def test_empty_columns_are_kept_out_of_the_features(prepare: Callable) -> None:
    data = "a,nothing,label\n" + "".join(f"{i},,{i % 2}\n" for i in range(20))
    result = prepare(data.encode())
    assert {c.name: c.type for c in result.columns}["nothing"] == "empty"
    assert result.feature_spec.input_size == 1
