"""Missing cells as the shared encoder reads them, for new specs and for old ones."""

from __future__ import annotations

import numpy as np
import pytest

from peertrain.common.events.datasets import (
    MISSING_TOKENS,
    ColumnEncoding,
    DatasetUploaded,
    FeatureSpec,
)
from peertrain.common.features import (
    DEFAULT_MISSING_TOKENS,
    LEGACY_MISSING_TOKENS,
    column_values,
    encode_table,
    is_missing,
    is_number,
    missing_rule,
    parse_missing_values,
)


def spec(**extra: object) -> dict:
    columns = (
        ColumnEncoding(name="n", type="numeric", offset=0, width=1, fill=5.0, mean=0.0, std=1.0),
        ColumnEncoding(
            name="c", type="categorical", offset=1, width=3, categories=("a", "na"),
            missing_category=True,
        ),
    )  # fmt: skip
    made = FeatureSpec(
        kind="table",
        input_shape=(4,),
        input_size=4,
        classes=("x", "y"),
        columns=columns,
        label_column="label",
        **extra,  # type: ignore[arg-type]
    )
    return made.model_dump(mode="json")


def test_default_tokens_are_read_ignoring_case_and_whitespace() -> None:
    cells = np.array(["", "na", "N/a", "NAN", "Null", "none", "?", "-", "-1", "nothing"])
    mask = is_missing(cells, DEFAULT_MISSING_TOKENS, "casefold")
    assert mask.tolist() == [True] * 8 + [False, False]
    assert MISSING_TOKENS == DEFAULT_MISSING_TOKENS


def test_old_specs_keep_their_exact_tokens() -> None:
    # A spec from before missing_match: "na" was a category, "NA" missing.
    old = spec()
    old.pop("missing_match")
    assert missing_rule(old) == (LEGACY_MISSING_TOKENS, "exact")
    x = encode_table(old, {"n": ["1", "NA"], "c": ["na", "NA"]})
    assert x.tolist() == [[1.0, 0.0, 1.0, 0.0], [5.0, 0.0, 0.0, 1.0]]
    with pytest.raises(ValueError, match="'null' is not"):
        encode_table(old, {"n": ["null"], "c": ["a"]})


def test_new_specs_read_their_recorded_tokens_ignoring_case() -> None:
    new = spec(missing_tokens=("", "n/a"), missing_match="casefold")
    x = encode_table(new, {"n": ["N/A", " 2 "], "c": ["NA", "n/A"]})
    # "NA" is not one of this spec's tokens, and categories compare exactly: it is a
    # category the training data lacked (no column set); "n/A" is missing.
    assert x.tolist() == [[5.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 1.0]]


def test_a_numeric_column_kept_numeric_reads_other_cells_as_missing() -> None:
    column = {"name": "t", "type": "numeric", "non_numbers_missing": True}
    values = column_values(column, ["1.5", "unknown", "inf", "2e3", "x1"], ("",), "casefold")
    assert np.isnan(values).tolist() == [False, True, True, False, True]
    strict = {"name": "t", "type": "numeric"}
    with pytest.raises(ValueError, match="'unknown' is not"):
        column_values(strict, ["1", "unknown"], ("",), "casefold")


def test_numbers_are_what_the_dataset_service_parses() -> None:
    accepted = ["1", "+1", "-1", "1.", ".5", "1e5", "1E+5", "-.5e-3"]
    refused = ["1_0", "0x10", "inf", "nan", "Infinity", "1e400", "1,5", "\uff11", "--1", ""]
    assert all(is_number(c) for c in accepted)
    assert not any(is_number(c) for c in refused)


def test_missing_values_field_parses_a_comma_separated_list() -> None:
    assert parse_missing_values("NA, unknown,,NA") == ("", "NA", "unknown")
    assert parse_missing_values("") == ("",)
    assert DatasetUploaded.model_fields["missing_values"].default is None


def test_casefold_folds_a_to_z_only_as_arrow_does() -> None:
    pa = pytest.importorskip("pyarrow")
    pc = pytest.importorskip("pyarrow.compute")
    cells = ["N/A", "Ä", "ä", "KELVIN\u212a", "nULL"]
    tokens = ("n/a", "ä", "kelvink", "null")
    ours = is_missing(np.array(cells), tokens, "casefold").tolist()
    arrow = pc.is_in(pc.ascii_lower(pa.array(cells)), value_set=pa.array(tokens)).to_pylist()
    assert ours == arrow == [True, False, True, False, True]
