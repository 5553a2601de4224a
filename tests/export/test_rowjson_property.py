"""The compiled row JSON (pairstore.export.rowjson.rows_json) is, on any row, its definition: the bytes of
pairstore.export.writer.row_json (json.dumps, sorted keys, no spaces, ensure_ascii off); and a row it
cannot write (a null prompt, message, role, content or chosen) is flagged, no other. Text of any code
point, empty and very long texts, any number of messages, slices of larger arrays."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pairstore.export.rowjson import rows_json
from pairstore.export.writer import row_json

MSG = pa.struct([("role", pa.string()), ("content", pa.string())])
# any code point, and the characters json escapes or leaves alone on purpose
TEXT = st.one_of(
    st.text(),
    st.text(
        st.sampled_from([chr(i) for i in range(0x20)] + ['"', "\\", "/", "\x7f", "\u2028", "\ufeff", "é"])
    ),
)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.one_of(st.sampled_from(["user", "system", "assistant"]), TEXT),
                           "content": TEXT}),
    st.fixed_dictionaries({"role": st.one_of(TEXT, st.none()), "content": st.one_of(TEXT, st.none())}),
    st.none(),
)  # fmt: skip
ROW = st.tuples(
    st.one_of(st.lists(MESSAGE, max_size=5), st.none()),
    st.one_of(TEXT, st.none()),
    st.one_of(TEXT, st.none()),
)
HUGE = '\\"\x01a\u00e9\u5317\U0001f600\u2028' * 100_000


def cannot_write(prompt, chosen) -> bool:
    """A null where text is expected: the writer takes such a row's JSON from row_json itself."""
    return (
        prompt is None
        or chosen is None
        or any(m is None or m["role"] is None or m["content"] is None for m in prompt)
    )


def written(rows, sft: bool, lo: int, hi: int, large: bool):
    prompt = pa.array([r[0] for r in rows], type=pa.list_(MSG))
    chosen = pa.array([r[1] for r in rows], type=pa.large_string() if large else pa.string())
    rejected = None if sft else pa.array([r[2] for r in rows], type=pa.string())
    hi = max(lo, min(hi, len(rows)))
    lo = min(lo, hi)
    data, offsets, flagged = rows_json(
        prompt[lo:hi], chosen[lo:hi], None if rejected is None else rejected[lo:hi]
    )
    raw = data.tobytes()
    return rows[lo:hi], [raw[offsets[i] : offsets[i + 1]] for i in range(hi - lo)], flagged.tolist()


@settings(max_examples=200)
@given(
    rows=st.lists(ROW, max_size=12),
    sft=st.booleans(),
    lo=st.integers(0, 3),
    hi=st.integers(0, 12),
    large=st.booleans(),
)
@example(rows=[], sft=False, lo=0, hi=0, large=False)
@example(rows=[([], "", "")], sft=True, lo=0, hi=1, large=False)
@example(rows=[([{"role": HUGE, "content": HUGE}], HUGE, HUGE)] * 2, sft=False, lo=0, hi=2, large=True)
@example(rows=[([None], "a", "b"), ([{"role": None, "content": "x"}], "a", None)], sft=False, lo=0, hi=2,
         large=False)  # fmt: skip
def test_every_row_is_its_definition_byte_for_byte(rows, sft, lo, hi, large):
    rows, got, flagged = written(rows, sft, lo, hi, large)
    assert flagged == [cannot_write(p, c) for p, c, _ in rows]
    for (prompt, chosen, rejected), json_bytes, bad in zip(rows, got, flagged):
        if not bad:
            assert json_bytes == row_json(prompt, chosen, None if sft else rejected).encode("utf-8")
