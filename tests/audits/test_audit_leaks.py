"""Leak audit: the documented finding (34-battle holdout, 13 slipped into one pair file) and each form."""

from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audits.leaks import audit_leaks
from pairstore.holdout.sets import add_members
from pairstore.ingest.pair_files import read_pair_file
from pairstore.keys import match_key, match_text
from pairstore.tables.pairs import Origin, Pair, add_pairs

WORDS = (
    "apple river quantum ledger violet harbor crystal meadow engine sonnet falcon glacier "
    "pepper lantern orbit marble tundra cactus velvet beacon canyon saddle prism thimble "
    "walnut zephyr basalt comet dune ember fjord grove hollow iris jasper kettle lagoon "
    "mosaic nectar oasis pebble quill raven summit timber umber vortex willow yarrow"
).split()


def _word(i: int, k: int) -> str:
    return WORDS[xxhash.xxh3_64_intdigest(f"{i}:{k}".encode()) % len(WORDS)]


def battle_prompt(i: int) -> str:
    """A distinct two-line prompt per battle (different words, so no two battles are near copies)."""
    first = " ".join(_word(i, k) for k in range(10))
    second = " ".join(_word(i, k) for k in range(10, 22))
    return f"Battle {i}: tell me about {first}.\nThen compare {second} café?"


def make_battles(store, n=40):
    rows = []
    for i in range(n):
        p = battle_prompt(i)
        msgs = [{"role": "user", "content": p}]
        rows.append((f"b{i:03d}", msgs, match_key(msgs)))
    for bid, msgs, mk in rows:
        store.con.execute(
            "INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, "
            "match_key, record_hash) VALUES (?, ?, ['own'], ['opp'], 1, 'loss', ?, ?)",
            [bid, msgs, mk, bid],
        )
    held = [
        {
            "item_id": bid,
            "item_kind": "battle",
            "match_key": mk,
            "match_text": match_text(msgs),
            "task_key": None,
        }
        for bid, msgs, mk in rows[:34]
    ]
    add_members(store, "judge34", held, method="test")


def fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


def leaky_records(store):
    """13 held-out battles (b000..b012) in 13 forms, plus rows of non-held battles and fresh prompts."""
    p = {i: battle_prompt(i) for i in range(40)}
    pair = Pair(
        prompt="an entirely reworded question about b009",
        chosen="c",
        rejected="r",
        source="battle",
        origins=[Origin("battle", "b009", "vote=loss → opponent chosen")],
    )
    pair_id = add_pairs(store, [pair], miner="battle", miner_version="1").pair_ids[0]
    recs = [
        {"prompt": p[0], "chosen": "a", "rejected": "b"},  # verbatim
        {"prompt": p[1].replace("\n", "\r\n"), "chosen": "a", "rejected": "b"},  # CRLF
        {"prompt": p[2] + "   \t ", "chosen": "a", "rejected": "b"},  # trailing spaces
        {"prompt": fullwidth(p[3]), "chosen": "a", "rejected": "b"},  # fullwidth
        {
            "prompt": [
                {"role": "system", "content": "You are Brook."},  # system prompt
                {"role": "user", "content": p[4]},
            ],
            "chosen": "a",
            "rejected": "b",
        },
        {
            "prompt": p[5] + " Please answer in three short paragraphs.",
            "chosen": "a",  # a sentence added
            "rejected": "b",
        },
        {"prompt": p[6].upper(), "chosen": "a", "rejected": "b"},  # case
        {"prompt": p[7].replace(" ", "\t"), "chosen": "a", "rejected": "b"},  # tabs
        {
            "prompt": "completely different words",
            "battle_id": "b008",
            "chosen": "a",  # origin id column
            "rejected": "b",
        },
        {
            "prompt": "an entirely reworded question about b009",
            "pair_id": pair_id,  # store origins
            "chosen": "c",
            "rejected": "r",
        },
        {
            "chosen": [
                {"role": "user", "content": p[10]},
                {"role": "assistant", "content": "a"},
            ],  # UF layout
            "rejected": [{"role": "user", "content": p[10]}, {"role": "assistant", "content": "b"}],
        },
        {"prompt": p[11], "system": "Be brief.", "chosen": "a", "rejected": "b"},  # system field
        {"prompt": unicodedata.normalize("NFKD", p[12]), "chosen": "a", "rejected": "b"},  # NFKD
    ]
    recs += [{"prompt": p[i], "chosen": "a", "rejected": "b"} for i in range(34, 40)]  # not held out
    recs += [
        {"prompt": f"fresh question number {i} about {_word(i, 99)}", "chosen": "a", "rejected": "b"}
        for i in range(5)
    ]
    return recs


def clean_parquet(path):
    msg = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    rows = [
        {
            "prompt": [{"role": "system", "content": "sys"}, {"role": "user", "content": battle_prompt(i)}],
            "chosen": [{"role": "assistant", "content": "x"}],
            "rejected": [{"role": "assistant", "content": "y"}],
            "pair_id": f"p{i}",
            "source": "battle",
            "family": None,
        }
        for i in range(34, 40)
    ]
    schema = pa.schema(
        [
            ("prompt", msg),
            ("chosen", msg),
            ("rejected", msg),
            ("pair_id", pa.string()),
            ("source", pa.string()),
            ("family", pa.string()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return str(path)


def test_documented_finding_21_clean_13_leaked(store, tmp_path, write_jsonl):
    make_battles(store)
    leaky = write_jsonl(tmp_path / "s2_pairs_lf1.jsonl", leaky_records(store))
    other = clean_parquet(tmp_path / "s2_pairs_r8.parquet")
    third = write_jsonl(
        tmp_path / "style.jsonl", [{"prompt": "unrelated style prompt", "chosen": "a", "rejected": "b"}]
    )
    report = audit_leaks(store, "judge34", [leaky, other, third])
    d = report.as_dict()
    assert d["holdout"] == {"name": "judge34", "size": 34, "clean": 21, "leaked": 13}
    by_path = {f["path"]: f for f in d["files"]}
    lf1 = by_path[leaky]
    assert sorted(lf1["leaked_ids"] + lf1["near_ids"]) == [f"b{i:03d}" for i in range(13)]
    assert lf1["near_ids"] == ["b005"]  # the added sentence is a near copy
    assert lf1["rows"] == 13 + 6 + 5
    assert len(lf1["sha256"]) == 64
    for p in (other, third):
        assert by_path[p]["leaked_ids"] == [] and by_path[p]["near_ids"] == []


def test_cli_json_contract_and_registered_mixtures(store, db_path, tmp_path, run_cli, write_jsonl):
    make_battles(store)
    leaky = write_jsonl(tmp_path / "lf1.jsonl", leaky_records(store))
    other = clean_parquet(tmp_path / "r8.parquet")
    for i, (path, rnd) in enumerate(
        [(leaky, "m11a"), (other, "s2r8c"), (str(tmp_path / "gone.parquet"), "m1")]
    ):
        store.con.execute(
            "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
            "VALUES (?, ?, 'attached', ?, 'x', 1, 'y')",
            [f"e{i}", rnd, path],
        )
    # The missing file's rows come from export_rows: one pair from held-out battle b020.
    gone = add_pairs(
        store,
        [
            Pair(
                prompt=battle_prompt(20),
                chosen="c",
                rejected="r",
                source="battle",
                origins=[Origin("battle", "b020", "vote=win")],
            )
        ],
        miner="t",
        miner_version="1",
    )
    store.con.execute("INSERT INTO export_rows VALUES ('e2', 0, ?)", [gone.pair_ids[0]])
    store.close()

    res = run_cli("audit", "leaks", "--holdout", "judge34", leaky, other, "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert set(d) == {"holdout", "files"}
    assert set(d["holdout"]) == {"name", "size", "clean", "leaked"}
    assert all(set(f) == {"path", "sha256", "rows", "leaked_ids", "near_ids"} for f in d["files"])
    assert (d["holdout"]["clean"], d["holdout"]["leaked"]) == (21, 13)

    res = run_cli("audit", "leaks", "--holdout", "judge34", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert [f["path"] for f in d["files"]] == [leaky, other, str(tmp_path / "gone.parquet")]
    assert d["files"][2]["sha256"] is None and d["files"][2]["leaked_ids"] == ["b020"]
    assert (d["holdout"]["clean"], d["holdout"]["leaked"]) == (20, 14)

    res = run_cli("audit", "leaks", "--holdout", "judge34", leaky)
    assert res.exit_code == 0
    assert "34 members, 21 clean, 13 leaked" in res.output

    res = run_cli("audit", "leaks", "--holdout", "nope", leaky)
    assert res.exit_code == 2 and "nope" in res.output


def test_bad_file_names_line_and_exits_2(store, tmp_path, run_cli, write_jsonl):
    make_battles(store, 3)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "ok", "chosen": "a"}, '{"chosen": "cut'])
    store.close()
    res = run_cli("audit", "leaks", "--holdout", "judge34", bad)
    assert res.exit_code == 2
    assert "bad.jsonl" in res.output and "line 2" in res.output and "invalid JSON" in res.output


HELD = battle_prompt(3)
# Each of the shapes an ingest reader used to read in part, with the held-out prompt only in the part it
# dropped; `{held}` marks where.
DROPPED_FIELD_SHAPES = {
    "trl multi-turn: an earlier user turn of rejected": {
        "chosen": [
            {"role": "user", "content": "Tell me about tides."},
            {"role": "assistant", "content": "They follow the moon."},
            {"role": "user", "content": "And waves?"},
            {"role": "assistant", "content": "Wind makes them."},
        ],
        "rejected": [
            {"role": "user", "content": "{held}"},
            {"role": "assistant", "content": "They follow the moon."},
            {"role": "user", "content": "And waves?"},
            {"role": "assistant", "content": "No idea."},
        ],
    },
    "trl multi-turn: an earlier assistant turn of chosen beside a prompt": {
        "prompt": [{"role": "user", "content": "Tell me about tides."}],
        "chosen": [
            {"role": "assistant", "content": "{held}"},
            {"role": "user", "content": "And waves?"},
            {"role": "assistant", "content": "Wind makes them."},
        ],
        "rejected": [{"role": "assistant", "content": "No idea."}],
    },
    "a prompt column beside message lists": {
        "prompt": "Tell me about",
        "chosen": [{"role": "user", "content": "{held}"}, {"role": "assistant", "content": "Sure."}],
        "rejected": [{"role": "user", "content": "{held}"}, {"role": "assistant", "content": "No."}],
    },
    "tool_calls arguments": {
        "prompt": "Look something up for me.",
        "chosen": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "search", "arguments": json.dumps({"query": "{held}"})},
                    }
                ],
            }
        ],
        "rejected": [{"role": "assistant", "content": "I cannot."}],
    },
    "function_call arguments": {
        "prompt": "Look something up for me.",
        "chosen": [
            {
                "role": "assistant",
                "content": "",
                "function_call": {"name": "search", "arguments": json.dumps({"q": "{held}", "n": 3})},
            }
        ],
        "rejected": "I cannot.",
    },
    "a system column beside a system message": {
        "system": "{held}",
        "prompt": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Hello there."},
        ],
        "chosen": "Hi!",
        "rejected": "Go away.",
    },
    "a response column beside chosen": {
        "prompt": "Hello there.",
        "chosen": "Hi!",
        "rejected": "No.",
        "response": "{held}",
    },
    "a completion column beside chosen": {
        "prompt": "Hello there.",
        "chosen": "Hi!",
        "rejected": "No.",
        "completion": "{held}",
    },
    "an output column beside chosen": {
        "prompt": "Hello there.",
        "chosen": "Hi!",
        "rejected": "No.",
        "output": "{held}",
    },
}


def _fill(value, text: str):
    """`value` with every {held} replaced by `text` (inside JSON-encoded strings too)."""
    return json.loads(json.dumps(value).replace("{held}", json.dumps(text)[1:-1].replace("\\", "\\\\")))


@pytest.mark.parametrize("shape", sorted(DROPPED_FIELD_SHAPES))
@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_held_out_text_in_a_field_ingest_dropped_is_found(store, tmp_path, write_jsonl, shape, form):
    make_battles(store, 6)
    leaky = _fill(DROPPED_FIELD_SHAPES[shape], HELD)
    clean = _fill(DROPPED_FIELD_SHAPES[shape], "Tell me about the weather in a town I have never seen.")
    ordinary = {"prompt": battle_prompt(38), "chosen": "a", "rejected": "b"}  # not held out
    paths = []
    for name, rec in (("leaky", leaky), ("clean", clean)):
        if form == "jsonl":
            paths.append(write_jsonl(tmp_path / f"{name}.jsonl", [ordinary, rec]))
        else:
            try:
                table = pa.Table.from_pylist([rec, rec])
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                pytest.skip("Arrow cannot type this record as a table")
            pq.write_table(table, tmp_path / f"{name}.parquet")
            paths.append(str(tmp_path / f"{name}.parquet"))
    report = audit_leaks(store, "judge34", paths)
    got = {Path(f.path).stem: f.leaked_ids + f.near_ids for f in report.files}
    assert got == {"leaky": ["b003"], "clean": []}
    rows = sorted(h.row_index for h in report.files[0].hits if h.item_id == "b003")
    assert rows == ([1] if form == "jsonl" else [0, 1])


def test_read_pair_file_layouts(tmp_path, write_jsonl):
    path = write_jsonl(
        tmp_path / "f.jsonl",
        [
            {"question": "q1", "chosen": "a", "rejected": "b"},
            {
                "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "u"},
                    {"role": "assistant", "content": "ans"},
                ]
            },
            {"prompt": "p", "completion": [{"role": "assistant", "content": "done"}]},
            {"conversations": [{"from": "human", "value": "hi there"}, {"from": "gpt", "value": "hello"}]},
        ],
    )
    rows = read_pair_file(path)
    assert [r.prompt[-1]["content"] for r in rows] == ["q1", "u", "p", "hi there"]
    assert rows[3].chosen == "hello"
    assert rows[0].chosen == "a" and rows[0].rejected == "b"
    assert rows[1].prompt[0]["role"] == "system" and rows[1].chosen == "ans"
    assert rows[2].chosen == "done"


# -- a property: held-out text anywhere in a record of any shape is found -------------------------------

FILLER_WORDS = (
    "alder birch cedar dahlia elder fennel ginger hazel indigo juniper kelp lilac mango nutmeg olive parsley "
    "quince rhubarb sorrel tansy ursine vetch wasabi yucca zinnia"
).split()
PHRASE = st.lists(st.sampled_from(FILLER_WORDS), min_size=0, max_size=7).map(" ".join)
ROLES = ["system", "user", "assistant", "tool", "human", "gpt", "function"]
KEY_NAMES = [
    "prompt", "chosen", "rejected", "messages", "conversations", "system", "response", "completion",
    "output", "question", "metadata", "extra", "tool_calls", "function_call", "arguments", "content", "id",
]  # fmt: skip
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES)},
    optional={
        "content": PHRASE
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": PHRASE}), max_size=2),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "function": st.fixed_dictionaries(
                        {"name": PHRASE, "arguments": PHRASE.map(lambda p: json.dumps({"q": p}))}
                    )
                }
            ),
            max_size=2,
        ),
        "name": PHRASE,
    },
)
VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | PHRASE,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEY_NAMES), inner, max_size=3)
    ),
    max_leaves=12,
)
RECORD = st.dictionaries(
    st.sampled_from(KEY_NAMES), st.lists(MESSAGE, min_size=0, max_size=5) | VALUE, min_size=1, max_size=6
).map(lambda r: {**r, "note": "alder birch"} if "note" not in r else r)  # at least one string in each


def _string_paths(value, path=()):
    """The path of every string value in a JSON value (keys not counted)."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, list):
        for i, x in enumerate(value):
            yield from _string_paths(x, (*path, i))
    elif isinstance(value, dict):
        for k, x in value.items():
            yield from _string_paths(x, (*path, k))


def _set_path(value, path, text):
    if not path:
        return text
    value[path[0]] = _set_path(value[path[0]], path[1:], text)
    return value


@pytest.fixture(scope="module")
def held_store(tmp_path_factory, new_store_file):
    import shutil

    from pairstore.store.store import open_store

    path = tmp_path_factory.mktemp("held") / "store.duckdb"
    shutil.copyfile(new_store_file, path)
    s = open_store(path)
    make_battles(s, 6)
    yield s
    s.close()


@pytest.mark.slow
@pytest.mark.timeout(900)  # a failure is shrunk to its smallest example, many more runs
@given(
    records=st.lists(RECORD, min_size=1, max_size=4),
    embedded=st.booleans(),
    form=st.sampled_from(["jsonl", "json", "jsonl.gz"]),
)
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_held_out_text_planted_in_any_string_of_any_record_is_found(
    held_store, tmp_path, records, embedded, form
):
    # one copy of a record per string it holds, with the held-out text planted in that string, then the
    # records as drawn: every string of every record is tried, in one file and one matcher call
    text = f"alder {HELD} birch" if embedded else HELD
    planted = [(i, p) for i, r in enumerate(records) for p in _string_paths(r)]
    leaky = [_set_path(json.loads(json.dumps(records[i])), p, text) for i, p in planted]
    recs = leaky + records
    data = "".join(json.dumps(r) + "\n" for r in recs) if form != "json" else json.dumps(recs)
    out = tmp_path / f"leaky.{form}"
    out.write_bytes(gzip.compress(data.encode()) if form.endswith(".gz") else data.encode())
    (found,) = audit_leaks(held_store, "judge34", [str(out)]).files
    assert found.leaked_ids + found.near_ids == ["b003"]
    missed = set(range(len(leaky))) - {h.row_index for h in found.hits}
    assert not missed, [planted[r] for r in sorted(missed)]
    assert {h.row_index for h in found.hits} == set(range(len(leaky)))
