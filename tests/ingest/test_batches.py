"""A file read as whole Arrow columns gives the batches the record-by-record reading gives (the same rows,
the same first error), for every columns format, on generated records of every shape: values of the
declared kinds and of other JSON types, fields left out, undeclared fields of text or numbers, blank
lines, blocks so small a file switches ways part way (pairstore.ingest.batches)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairstore.errors import BadInput
from pairstore.ingest import batches
from pairstore.ingest.batches import read_columns
from pairstore.ingest.battles import NATIVE
from pairstore.ingest.evals import _reading as evals_reading
from pairstore.ingest.formats import formats_of, get_format
from pairstore.ingest.generations import READ as GENERATIONS
from pairstore.ingest.judgments import _READ as JUDGMENTS
from pairstore.ingest.kinds import AnyText, Bool, Choice, Float, Id, Int, IntOrText, Json, Score, Text, Time
from pairstore.ingest.messages import Messages
from pairstore.ingest.pair_files import pair_batches
from pairstore.ingest.problems import _reading_schema

TEXTS = st.sampled_from(["What is 2 + 2?", "Cafe\u0301", "x " * 20, "#### 4", "So \\boxed{4}.", "Сколько?",
                         "2026-01-02T03:04:05Z", "win", "a", "Work.\n#### 4"])  # fmt: skip
# Now and then: a blank text, or a value of another JSON type.
ODD = st.one_of(st.sampled_from(["", "  ", "\x1c", "\u3000"]), st.none(), st.booleans(),
                st.integers(-5, 2**40), st.floats(-1e9, 1e9), st.just([]), st.just({"a": 1}))  # fmt: skip
MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "robot"]), "content": TEXTS}
    ),
    min_size=1,
    max_size=3,
)


def values_of(field) -> st.SearchStrategy:
    """Values a record may give a field: its kind's usual ones, now and then another JSON type."""
    kind = field.kind
    usual: st.SearchStrategy
    if isinstance(kind, Choice):
        usual = st.sampled_from([*kind.choices, "draw"])
    elif isinstance(kind, Messages):
        usual = TEXTS | MESSAGES
    elif isinstance(kind, Id):
        usual = TEXTS | st.integers(0, 99)
    elif isinstance(kind, Int):
        usual = st.integers(-3, 2**33)
    elif isinstance(kind, (Float, Score)):
        usual = st.floats(-2, 2, allow_nan=False) | st.integers(0, 3) | st.booleans()
    elif isinstance(kind, Bool):
        usual = st.booleans()
    elif isinstance(kind, Time):
        usual = st.sampled_from(["2026-03-01T12:00:00Z", "2026-03-01", "yesterday", "1800-01-01"])
    elif isinstance(kind, (AnyText, IntOrText)):
        usual = TEXTS | st.integers(0, 9)
    elif isinstance(kind, Json):
        usual = st.fixed_dictionaries({"temperature": st.floats(0, 1)})
    elif isinstance(kind, Text):
        usual = TEXTS
    elif field.name == "doc":
        usual = st.fixed_dictionaries({"question": TEXTS}) | st.just({"label": 3})
    elif field.name in ("resps", "filtered_resps"):
        usual = st.lists(st.lists(TEXTS, max_size=2), max_size=2) | st.lists(TEXTS, max_size=2)
    elif field.name in ("flaws_a", "flaws_b"):
        usual = st.lists(st.sampled_from(["fabrication", "made_up"]), max_size=2)
    elif field.name == "turns":
        usual = st.lists(st.fixed_dictionaries({"user": TEXTS, "own": TEXTS, "opponent": TEXTS}), max_size=2)
    else:
        usual = TEXTS | MESSAGES
    return st.one_of(*[usual] * 40, ODD)


@st.composite
def records(draw, fmt) -> dict:
    rec = {}
    for field in fmt.fields:
        if "." in field.name or "[" in field.name or not (field.required or draw(st.booleans())):
            continue
        if draw(st.integers(0, 25)) == 0:
            continue  # a required field left out now and then
        rec[field.name] = draw(values_of(field))
    extra = draw(st.integers(0, 40))
    if extra == 0:
        rec["note"] = "text no field declares"
    elif extra == 1:
        rec["n"] = 3  # a number no field declares: not text
    return rec


def outcome(read, path) -> tuple:
    """The rows and the line of each (all_lines, held equal to line row by row), or the refusal."""
    try:
        rows, lines = [], []
        for batch in read(path):
            rows.extend(batch.table.to_pylist())
            lines.extend(batch.all_lines())
            assert batch.all_lines() == [batch.line(i) for i in range(batch.table.num_rows)]
        return ("rows", rows, lines)
    except BadInput as e:
        return ("refused", str(e))


COLUMNS_FORMATS = {
    ("battles", "native"): NATIVE,
    ("generations", "native"): GENERATIONS,
    ("generations", "vllm"): GENERATIONS,
    ("generations", "lm-eval"): GENERATIONS,
    ("problems", "gsm8k"): _reading_schema("gsm8k"),
    ("problems", "math"): _reading_schema("math"),
    ("evals", "jsonl"): evals_reading("jsonl"),
    ("evals", "lm-eval"): evals_reading("lm-eval"),
    ("judgments", "native"): JUDGMENTS,
}


def test_every_columns_format_is_tried_here():
    declared = {(f.table, f.name) for table in ("battles", "generations", "problems", "evals", "judgments")
                for f in formats_of(table) if f.reads_columns}  # fmt: skip
    assert declared == set(COLUMNS_FORMATS)


@pytest.mark.parametrize("table, name", sorted(COLUMNS_FORMATS), ids=lambda v: v)
@settings(max_examples=25)
@given(data=st.data())
def test_whole_columns_and_record_by_record_give_the_same_batches(table, name, data, tmp_path_factory):
    fmt = get_format(table, name)
    schema = COLUMNS_FORMATS[(table, name)]
    recs = data.draw(st.lists(records(fmt), min_size=1, max_size=12))
    blank = data.draw(st.integers(0, 5)) == 0
    path = tmp_path_factory.mktemp("b") / "f.jsonl"
    lines = [json.dumps(r, ensure_ascii=False) for r in recs]
    if blank:
        lines.insert(len(lines) // 2, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = batches.STREAM_BLOCK_SIZE
    batches.STREAM_BLOCK_SIZE = 256  # several blocks: a file may switch ways part way
    try:
        whole = outcome(lambda p: read_columns(fmt, schema, p, direct=True), path)
    finally:
        batches.STREAM_BLOCK_SIZE = before
    alone = outcome(lambda p: read_columns(fmt, schema, p, direct=False), path)
    assert whole == alone, recs


@settings(max_examples=40)
@given(data=st.data())
def test_pair_files_read_the_same_either_way(data, tmp_path_factory):
    fmt = get_format("pairs", "trl")
    recs = data.draw(st.lists(records(fmt), min_size=1, max_size=12))
    path = tmp_path_factory.mktemp("p") / "f.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    whole = outcome(lambda p: pair_batches(p, direct=True), path)
    alone = outcome(lambda p: pair_batches(p, direct=False), path)
    assert whole == alone, recs


def test_the_whole_columns_way_is_taken_and_blank_lines_keep_line_numbers(tmp_path, monkeypatch):
    taken = []
    real = batches.Reading.direct_table
    monkeypatch.setattr(batches.Reading, "direct_table", lambda *a: taken.append(1) or real(*a))
    path = tmp_path / "b.jsonl"
    good = {"battle_id": "b1", "prompt": "q?", "own_answer": "a", "opponent_answer": "b", "vote": "win"}
    path.write_text(
        json.dumps(good) + "\n\n\n" + json.dumps({**good, "battle_id": "b2", "vote": "draw"}) + "\n"
    )
    with pytest.raises(BadInput, match="line 4, field 'vote': unknown value 'draw'"):
        list(read_columns(get_format("battles", "native"), NATIVE, path))
    assert taken  # the whole-columns way found it, and named the right line


def test_a_broken_kind_makes_the_ways_differ(tmp_path, monkeypatch):
    """The comparison above can fail: a kind whose column reading drops a rule is caught."""
    fmt = get_format("battles", "native")
    path = tmp_path / "b.jsonl"
    rec = {"battle_id": "b1", "prompt": "q?", "own_answer": "a", "opponent_answer": "b", "vote": "win",
           "category": " "}  # fmt: skip
    path.write_text(json.dumps(rec) + "\n")
    monkeypatch.setattr(Text, "column", lambda self, col: batches.Checked(col.combine_chunks()
                        if hasattr(col, "combine_chunks") else col))  # fmt: skip
    whole = outcome(lambda p: read_columns(fmt, NATIVE, p, direct=True), path)
    monkeypatch.undo()
    alone = outcome(lambda p: read_columns(fmt, NATIVE, p, direct=False), path)
    assert whole != alone


# -- the JSONL blocks: whole lines, a block at a time ------------------------------------------------------


class _CountingStream:
    """A byte stream that counts what was read from it."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def read(self, n: int) -> bytes:
        out = self.data[self.at : self.at + n]
        self.at += len(out)
        return out


def _jsonl(records: list[dict], last_newline: bool = True) -> bytes:
    text = "\n".join(json.dumps(r) for r in records)
    return (text + ("\n" if last_newline and records else "")).encode()


def test_jsonl_blocks_read_the_file_as_they_are_asked_for(monkeypatch):
    """A JSONL file is read a block at a time: pyarrow's own streaming reader read a whole file ahead
    (memory that grew with the file)."""
    import pyarrow.json as pa_json

    monkeypatch.setattr(batches, "STREAM_BLOCK_SIZE", 1 << 12)
    stream = _CountingStream(_jsonl([{"id": i, "text": "x" * 50} for i in range(2_000)]))
    blocks = batches._jsonl_blocks(stream, pa_json.ParseOptions())
    first = next(blocks)
    assert 0 < first.num_rows and stream.at <= 2 * (1 << 12)
    assert first.num_rows + sum(t.num_rows for t in blocks) == 2_000


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(
        st.fixed_dictionaries({"id": st.integers(0, 10**6), "text": st.text(max_size=300)}), max_size=40
    ),
    block=st.integers(64, 2048),
    last_newline=st.booleans(),
)
def test_jsonl_blocks_give_every_record_once_in_order(records, block, last_newline):
    """Whatever the block size and the lines' lengths (a line longer than a block is carried into the
    next), the blocks hold every record once, in the file's order, as one read of the whole file does."""
    import pyarrow as pa
    import pyarrow.json as pa_json

    data = _jsonl(records, last_newline)
    options = pa_json.ParseOptions(explicit_schema=pa.schema([("id", pa.int64()), ("text", pa.string())]))
    old = batches.STREAM_BLOCK_SIZE
    batches.STREAM_BLOCK_SIZE = block
    try:
        got = [row for t in batches._jsonl_blocks(_CountingStream(data), options) for row in t.to_pylist()]
    except pa.ArrowInvalid:  # a line longer than pyarrow's block: the caller reads the rest record by record
        assert any(len(json.dumps(r).encode()) + 1 > block for r in records)
        return
    finally:
        batches.STREAM_BLOCK_SIZE = old
    assert got == records
