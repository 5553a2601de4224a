"""A kind's two readings are one: what pyarrow's JSON reader makes of a column, read by the kind's
`column`, is what the kind's `value` makes of each value (pairstore.ingest.kinds), on generated JSON
values of every type; and where the whole-column reading takes a column, every value is one `value`
takes."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.json as pa_json
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairstore.ingest.formats.evals_lm_eval import DocText, FirstString
from pairstore.ingest.formats.judgments_native import FlawList
from pairstore.ingest.kinds import (
    INFER,
    PY_WHITESPACE,
    AnyText,
    Bool,
    Choice,
    Float,
    Id,
    Int,
    IntOrText,
    Json,
    NotDirect,
    Problem,
    Score,
    Text,
    Time,
    blank,
    one_element_lists,
    parse_time,
)
from pairstore.ingest.messages import Messages

KINDS = {
    "text": Text(),
    "text, blank allowed": Text(allow_empty=True),
    "id": Id(),
    "id, blank allowed": Id(allow_empty=True),
    "choice": Choice(("win", "loss", "tie")),
    "int32": Int(32),
    "int64": Int(64),
    "float": Float(),
    "score": Score(),
    "bool": Bool(),
    "time": Time(),
    "any text": AnyText(),
    "level": IntOrText("Level {}"),
    "answer": IntOrText(allow_empty=True),
    "messages": Messages("prompt"),
    "json": Json(),
    "doc": DocText(),
    "first string": FirstString(),
    "flaws": FlawList(),
}

TEXTS = st.sampled_from(
    ["win", "loss", "", " ", "\u3000", "x", "Cafe\u0301", "2026-01-02T03:04:05Z", "2026-01-02", "yesterday",
     "1999-12-31T23:59:59+05:00", "9999-01-01", "fabrication", "Level 3", "12", "\x1f"]
) | st.text(max_size=8)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXTS
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["role", "content", "question", "x", "label"]), inner, max_size=3)
    ),
    max_leaves=6,
)
# Columns of one JSON type now and then, as real files are (a column of mixed types the reader refuses).
COLUMNS = st.one_of(
    st.lists(VALUES, min_size=1, max_size=6),
    st.lists(st.one_of(st.none(), TEXTS), min_size=1, max_size=6),
    st.lists(st.one_of(st.none(), st.integers(min_value=-(2**40), max_value=2**40)), min_size=1, max_size=6),
    st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)), min_size=1, max_size=6),
    st.lists(
        st.one_of(
            st.none(),
            st.fixed_dictionaries({"role": st.sampled_from(["user", "robot"]), "content": TEXTS}).map(
                lambda m: [m]
            ),
        ),
        min_size=1,
        max_size=4,
    ),  # fmt: skip
    st.lists(st.one_of(st.none(), st.fixed_dictionaries({"question": TEXTS})), min_size=1, max_size=4),
)


def read_whole(kind, values: list, tmp_path) -> object:
    """What the whole-columns reading makes of the column: a Checked, or NotDirect / pyarrow's refusal."""
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"x": v}) + "\n" for v in values), encoding="utf-8")
    explicit = pa.schema([("x", kind.direct)]) if isinstance(kind.direct, pa.DataType) else pa.schema([])
    try:
        table = pa_json.read_json(
            path,
            parse_options=pa_json.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer"),
        )
        col = table.column("x") if "x" in table.column_names else pa.nulls(len(values))
        return kind.read_whole(col)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, NotDirect) as e:
        return e


def read_values(kind, values: list) -> tuple[pa.Array | None, int | None, str]:
    """What the record-by-record reading makes of it: the kind's column of `value`'s results, and the first
    value refused, by `value` (Problem) or by the column's rule, with why."""
    given_values = []
    for i, v in enumerate(values):
        try:
            given_values.append(None if v is None else kind.value(v))
        except Problem as e:
            before = kind.column(pa.array(given_values, kind.given))
            if before.first_bad is not None:
                return None, before.first_bad, before.message
            return None, i, str(e)
    got = kind.column(pa.array(given_values, kind.given))
    return got.array, got.first_bad, got.message


def same(a: pa.Array, b: pa.Array) -> bool:
    def norm(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v

    return [norm(v) for v in a.to_pylist()] == [norm(v) for v in b.to_pylist()]


@pytest.mark.parametrize("name", KINDS)
@settings(max_examples=60)
@given(values=COLUMNS)
def test_a_column_read_whole_is_each_value_read_alone(name, values, tmp_path_factory):
    kind = KINDS[name]
    if kind.direct is None:
        return  # never read whole: the record-by-record reading is its only one
    whole = read_whole(kind, values, tmp_path_factory.mktemp("k"))
    if isinstance(whole, Exception):
        return  # the file is read record by record, which decides alone
    array, first_bad, message = read_values(kind, values)
    assert (whole.first_bad, whole.message) == (first_bad, message), values
    if first_bad is None:
        assert array is not None and same(whole.array, array), (values, whole.array, array)


def test_the_check_fails_when_a_kind_reads_a_value_another_way(tmp_path, monkeypatch):
    """The property above can fail: a Float whose column rounds what `value` keeps is caught."""
    kind = Float()
    monkeypatch.setattr(Float, "value", lambda self, v: float(v) + 0.5)
    with pytest.raises(AssertionError):
        test_a_column_read_whole_is_each_value_read_alone.hypothesis.inner_test(
            name="float",
            values=[1.0, 2.0],
            tmp_path_factory=type("F", (), {"mktemp": lambda s, n: tmp_path})(),
        )
    assert kind.direct is not None


def test_py_whitespace_is_what_str_isspace_says_of_every_code_point():
    assert PY_WHITESPACE == "".join(chr(c) for c in range(0x110000) if chr(c).isspace())


@settings(max_examples=300)
@given(
    st.lists(
        st.none() | st.text(alphabet=st.sampled_from(PY_WHITESPACE + "ab\u00e9\u4e00\x00"), max_size=6),
        max_size=12,
    )
)
def test_blank_is_what_str_strip_says_of_each_value(values: list[str | None]) -> None:
    """The column reading (a first-character test, then the regular expression where one may be
    blank) says of each value what str.strip() does; a null is not blank."""
    got = blank(pa.array(values, pa.string())).to_pylist()
    assert got == [v is not None and not v.strip() for v in values]


_TIME_TEXTS = st.sampled_from(
    ["2026-01-02T03:04:05Z", "2026-01-02", "1999-12-31T23:59:59+05:00", "2024-02-29T12:00:00.123456",
     "yesterday", "9999-01-01", "1600-01-01", "", "2026-13-01"]
)  # fmt: skip


@settings(max_examples=300)
@given(st.lists(st.none() | _TIME_TEXTS, max_size=12))
def test_a_time_column_is_each_value_parsed_in_turn(texts: list[str | None]) -> None:
    """Time.column parses each distinct text once and takes the rows from them; it is parse_time of
    each value in turn: the same times, or the first refused row and its reason."""
    got = Time().column(pa.array(texts, pa.string()))
    for row, text in enumerate(texts):
        if text is None:
            continue
        try:
            parse_time(text)
        except Problem as e:
            assert (got.first_bad, got.message) == (row, str(e))
            return
    assert got.first_bad is None
    assert got.array.to_pylist() == [None if t is None else parse_time(t) for t in texts]


def test_one_element_lists_hold_each_value_alone():
    values = pa.array(["a", None, "", "b"], pa.string())
    assert one_element_lists(values).to_pylist() == [["a"], [None], [""], ["b"]]
    assert one_element_lists(pa.array([], pa.string())).to_pylist() == []


def test_infer_kinds_take_the_json_types_they_name():
    assert Id().direct == INFER and Id().value(12) == "12"
    with pytest.raises(Problem):
        Id().value(True)
    assert IntOrText("Level {}").value(3) == "Level 3"
    assert Score().value(True) == 1.0
    assert AnyText().value({"b": 1, "a": [1, "x"]}) == '{"a": [1, "x"], "b": 1}'
