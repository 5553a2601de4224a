"""The leak audit's file reader: every string of every record, in every file form, Arrow and Python alike."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pairstore.errors import BadInput
from pairstore.holdout import file_texts
from pairstore.holdout.file_texts import other_strings, read_file_texts

KEYS = [
    "prompt",
    "chosen",
    "rejected",
    "messages",
    "system",
    "response",
    "completion",
    "role",
    "from",
    "content",
    "value",
    "text",
    "type",
    "tool_calls",
    "function",
    "arguments",
    "metadata",
    "extra",
    "id",
    "pair_id",
]
WORD = st.text(alphabet='abcdefghijklmnopqrstuvwxyz éß漢{}[]":,\\', min_size=0, max_size=12)


def reference_strings(value) -> Counter:
    """Every string of a JSON value, plainly: string values, the keys of objects (values not null), and the
    strings inside a string that is JSON itself (three levels deep)."""
    out: Counter = Counter()

    def walk(v, depth: int) -> None:
        if isinstance(v, str):
            out[v] += 1
            if depth < file_texts.JSON_DEPTH and v.lstrip()[:1] in ("{", "["):
                try:
                    inner = json.loads(v)
                except ValueError:
                    return
                walk(inner, depth + 1)
        elif isinstance(v, list):
            for x in v:
                if x is not None:
                    walk(x, depth)
        elif isinstance(v, dict):
            for k, x in v.items():
                if x is not None:
                    out[k] += 1
                    walk(x, depth)

    walk(value, 0)
    return out


def read_all(path) -> None:
    """Read every batch and every string (a column is read only when its strings are reached)."""
    for b in read_file_texts(path):
        other_strings(b)


def strings_per_record(path) -> tuple[list[Counter], list[list[str]]]:
    """(every string of each record, the user turns of each) as read_file_texts reads the file."""
    strings: list[Counter] = []
    users: list[list[str]] = []
    for b in read_file_texts(path, batch_rows=7):
        per = [Counter() for _ in range(b.records)]
        turns: list[list[str]] = [[] for _ in range(b.records)]
        for r, t in zip(b.user_row.tolist(), b.user_text.to_pylist()):
            per[r][t] += 1
            turns[r].append(t)
        other_row, other_text = other_strings(b)
        for r, t in zip(other_row.tolist(), other_text.to_pylist()):
            per[r][t] += 1
        strings += per
        users += turns
    return strings, users


def _json_values(depth: int):
    leaves = st.none() | st.booleans() | st.integers(-5, 5) | WORD
    if depth == 0:
        return leaves
    inner = _json_values(depth - 1)
    return leaves | st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)


MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "human", "gpt", "User"])},
    optional={
        "content": WORD
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": WORD}), max_size=2),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "function": st.fixed_dictionaries(
                        {"name": WORD, "arguments": WORD.map(lambda w: json.dumps({"q": w}))}
                    )
                }
            ),
            max_size=2,
        ),
    },
)
RECORD = st.dictionaries(
    st.sampled_from(KEYS), st.lists(MESSAGE, max_size=4) | _json_values(3), min_size=1, max_size=6
)


@pytest.mark.slow
@pytest.mark.timeout(900)  # a failure is shrunk to its smallest example, many more runs
@given(records=st.lists(RECORD, min_size=1, max_size=6))
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_string_of_every_record_is_read_in_every_file_form(tmp_path, records):
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    forms = {
        "r.jsonl": lines.encode(),
        "r.json": json.dumps(records).encode(),
        "r.jsonl.gz": gzip.compress(lines.encode()),
    }
    want = [reference_strings(r) for r in records]
    seen = {}
    for name, data in forms.items():
        (tmp_path / name).write_bytes(data)
        strings, users = strings_per_record(tmp_path / name)
        assert strings == want, name
        seen[name] = users
    assert seen["r.jsonl"] == seen["r.json"] == seen["r.jsonl.gz"]


# Records of one shape (what Arrow reads as one table): a type, then values of it.
def _types(depth: int):
    base = st.sampled_from([pa.string(), pa.int64()])
    if depth == 0:
        return base
    inner = _types(depth - 1)
    return (
        base
        | inner.map(pa.list_)
        | st.dictionaries(st.sampled_from(KEYS), inner, min_size=1, max_size=3).map(
            lambda d: pa.struct(list(d.items()))
        )
    )


def _values_of(t: pa.DataType):
    if pa.types.is_string(t):
        return st.none() | WORD
    if pa.types.is_int64(t):
        return st.none() | st.integers(-3, 3)
    if pa.types.is_list(t):
        return st.none() | st.lists(_values_of(t.value_type), max_size=3)
    return st.none() | st.fixed_dictionaries({f.name: _values_of(f.type) for f in t})


MESSAGES_TYPE = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string()), ("name", pa.string())]))


@st.composite
def one_shape(draw):
    fields = draw(st.dictionaries(st.sampled_from(KEYS), _types(2), min_size=1, max_size=5))
    if draw(st.booleans()):
        fields[draw(st.sampled_from(["prompt", "chosen", "messages"]))] = MESSAGES_TYPE
    schema = pa.schema(list(fields.items()))
    rows = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    name: (
                        st.none()
                        | st.lists(
                            st.fixed_dictionaries(
                                {
                                    "role": st.sampled_from(["system", "user", "assistant", "human"]),
                                    "content": st.none() | WORD,
                                    "name": st.none() | WORD,
                                }
                            ),
                            max_size=4,
                        )
                        if t == MESSAGES_TYPE
                        else _values_of(t)
                    )
                    for name, t in fields.items()
                }
            ),
            min_size=1,
            max_size=8,
        )
    )
    return schema, rows


@pytest.mark.slow
@pytest.mark.timeout(900)
@given(shape=one_shape())
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_arrow_and_python_read_the_same_strings_and_user_turns(tmp_path, shape):
    schema, rows = shape
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, tmp_path / "r.parquet")
    (tmp_path / "r.json").write_text(json.dumps(rows), encoding="utf-8")  # a JSON array: the Python walk
    arrow_strings, arrow_users = strings_per_record(tmp_path / "r.parquet")
    py_strings, py_users = strings_per_record(tmp_path / "r.json")
    assert arrow_strings == py_strings == [reference_strings(r) for r in rows]
    assert arrow_users == py_users


def _turns(path) -> list[list[str]]:
    return strings_per_record(path)[1]


def test_user_turns_of_each_layout(tmp_path, write_jsonl):
    recs = [
        # TRL conversational: the prompt's user turns, never the answers' or the system's
        {
            "prompt": [{"role": "system", "content": "sys"}, {"role": "user", "content": "q1"}],
            "chosen": [{"role": "assistant", "content": "a"}],
        },
        # UltraFeedback: the user turns of chosen (the first message list)
        {
            "chosen": [
                {"role": "user", "content": "u1"},
                {"role": "assistant", "content": "a1"},
                {"role": "user", "content": "u2"},
                {"role": "assistant", "content": "a2"},
            ],
            "rejected": [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "b"}],
        },
        # a prompt column beside message lists: the prompt column is the prompt
        {
            "prompt": "p",
            "chosen": [{"role": "user", "content": "other"}, {"role": "assistant", "content": "a"}],
        },
        # Alpaca with history
        {"instruction": "do", "input": "this", "output": "o", "history": [["h1", "a1"], ["h2", "a2"]]},
        # HH-RLHF
        {"chosen": "\n\nHuman: hq\n\nAssistant: ha\n\nHuman: hq2\n\nAssistant: x", "rejected": "y"},
        # ShareGPT, content parts
        {"conversations": [{"from": "human", "value": "s1"}, {"from": "gpt", "value": "s2"}]},
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "part1"},
                        {"type": "image_url", "image_url": {"url": "u"}},
                    ],
                }
            ]
        },
        {"question": "plain question", "answer": "42"},
        {"response": "no prompt at all"},
    ]
    path = write_jsonl(tmp_path / "l.jsonl", recs)
    assert _turns(path) == [
        ["q1"],
        ["u1", "u2"],
        ["p"],
        ["h1", "h2", "do", "this"],
        ["hq", "hq2"],
        ["s1"],
        ["part1"],
        ["plain question"],
        [],
    ]


def test_ids_pair_ids_and_task_keys(tmp_path):
    table = pa.table(
        {
            "prompt": ["a", "b", "c"],
            "battle_id": ["b1", None, "b3"],
            "id": pa.array([7, 8, None], pa.int64()),
            "origin_ids": [["o1", "o2"], [], None],
            "pair_id": ["p1", "", None],
            "task_key": [None, "t2", None],
        }
    )
    pq.write_table(table, tmp_path / "ids.parquet")
    (b,) = read_file_texts(tmp_path / "ids.parquet")
    assert sorted(zip(b.id_row.tolist(), b.ids.to_pylist())) == [
        (0, "7"),
        (0, "b1"),
        (0, "o1"),
        (0, "o2"),
        (1, "8"),
        (2, "b3"),
    ]
    assert b.pair_id.to_pylist() == ["p1", None, None]
    assert b.task_key.to_pylist() == [None, "t2", None]


def test_zstd_and_blocks_that_arrow_cannot_type(tmp_path, monkeypatch):
    monkeypatch.setattr(file_texts, "BLOCK_BYTES", 64)  # many blocks: some Arrow reads, some it cannot
    recs = [{"prompt": f"question {i}", "x": i if i % 5 else {"deep": f"nested {i}"}} for i in range(40)]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    with pa.output_stream(str(tmp_path / "r.jsonl.zst"), compression="zstd") as f:
        f.write(data)
    strings, users = strings_per_record(tmp_path / "r.jsonl.zst")
    assert strings == [reference_strings(r) for r in recs]
    assert users == [[f"question {i}"] for i in range(40)]
    rows = [b.first_row for b in read_file_texts(tmp_path / "r.jsonl.zst")]
    assert rows == sorted(rows) and rows[0] == 0


def test_a_json_array_read_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(file_texts, "BLOCK_BYTES", 16)
    recs = [{"prompt": "é" * i, "n": 123456789 * i, "s": "漢字" * i} for i in range(30)]
    (tmp_path / "a.json").write_text(json.dumps(recs, ensure_ascii=False, indent=1), encoding="utf-8")
    strings, _ = strings_per_record(tmp_path / "a.json")
    assert strings == [reference_strings(r) for r in recs]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("bad.jsonl", b'{"prompt": "ok"}\n{"prompt": "broken\n', "line 2"),
        ("bad.jsonl", b'{"prompt": "ok"}\n[1, 2]\n', "line 2"),
        ("bad.jsonl", b'{"prompt": "ok"}\n{"prompt": "\xff"}\n', "line 2"),
        ("bad.jsonl", b'{"prompt": "\\ud800"}\n', "surrogate"),
        ("bad.json", b'[{"prompt": "ok"}, {"prompt": ', "record 2: invalid JSON: Expecting value (truncated"),
        ("bad.json", b'[{"prompt": "ok"}', "not closed"),
        ("bad.txt", b"a,b\n", "unknown file type"),
        ("bad.csv", b"a,b\n1,2,3\n", "cannot read as CSV"),
        ("bad.parquet", b"not parquet", "not a readable parquet file"),
        ("bad.jsonl", b"\n\n", "no records"),
        ("bad.jsonl.gz", b"not gzip at all", "decompress"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, name, data, message):
    (tmp_path / name).write_bytes(data)
    with pytest.raises(BadInput) as e:
        read_all(tmp_path / name)
    assert name in str(e.value) and message in str(e.value)


def test_binary_columns_are_text_or_refused(tmp_path):
    pq.write_table(pa.table({"prompt": pa.array([b"fine text"], pa.binary())}), tmp_path / "ok.parquet")
    assert _turns(tmp_path / "ok.parquet") == [["fine text"]]
    pq.write_table(pa.table({"blob": pa.array([b"ok", b"\xff\xfe"], pa.binary())}), tmp_path / "bad.parquet")
    with pytest.raises(BadInput, match="not UTF-8"):
        read_all(tmp_path / "bad.parquet")


def test_maps_and_dictionary_columns(tmp_path):
    table = pa.table(
        {
            "meta": pa.array([[("k1", "v1")], None], pa.map_(pa.string(), pa.string())),
            "source": pa.array(["battle", "style"]).dictionary_encode(),
        }
    )
    pq.write_table(table, tmp_path / "m.parquet")
    strings, _ = strings_per_record(tmp_path / "m.parquet")
    assert strings == [
        Counter({"meta": 1, "k1": 1, "v1": 1, "source": 1, "battle": 1}),
        Counter({"source": 1, "style": 1}),
    ]


def test_csv_cells_are_strings(tmp_path):
    (tmp_path / "p.csv").write_text(
        'prompt,chosen,id\n"Hello, there",42,7\n"[{""role"": ""user""}]",x,\n', encoding="utf-8"
    )
    strings, users = strings_per_record(tmp_path / "p.csv")
    assert users == [["Hello, there"], ['[{"role": "user"}]']]
    assert strings[0] == Counter({"Hello, there": 1, "42": 1, "7": 1, "prompt": 1, "chosen": 1, "id": 1})
    assert strings[1]["role"] == 1 and strings[1]["user"] == 1  # the JSON inside a cell is read too
    (b,) = read_file_texts(tmp_path / "p.csv")
    assert b.ids.to_pylist() == ["7"]  # an empty cell is no id
