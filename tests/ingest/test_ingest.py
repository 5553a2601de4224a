"""Ingest: every bad input gets one line naming file/line/field, and nothing is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pairstore.errors import BadInput
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.generations import ingest_generations
from pairstore.ingest.judgments import ingest_judgments
from pairstore.ingest.pairs import ingest_pairs
from pairstore.ingest.problems import ingest_problems
from pairstore.store.store import open_store


def battle(i, **kw):
    rec = {
        "battle_id": f"b{i}",
        "prompt": f"Question number {i}?",
        "own_answer": f"own {i}",
        "opponent_answer": f"opp {i}",
        "vote": "win",
        "category": "math",
    }
    rec.update(kw)
    return rec


def count(store, table):
    return store.scalar(f"SELECT count(*) FROM {table}")


def test_ingest_battles_single_and_multi_turn(store, tmp_path, write_jsonl):
    path = write_jsonl(
        tmp_path / "b.jsonl",
        [
            battle(1),
            battle(
                2, vote="loss", voted_at="2026-03-01T12:00:00Z", own_model="brook", opponent_model="rival"
            ),
            {
                "battle_id": "m1",
                "vote": "tie",
                "system": "Be brief.",
                "turns": [
                    {"user": "hi", "own": "hello", "opponent": "hey"},
                    {"user": "2+2?", "own": "4", "opponent": "5"},
                ],
            },
        ],
    )
    res = ingest_battles(store, path)
    assert (res.read, res.added) == (3, 3)
    row = store.rows("SELECT * FROM battles WHERE battle_id = 'm1'")[0]
    assert row["n_turns"] == 2
    assert row["own_answers"] == ["hello", "4"] and row["opponent_answers"] == ["hey", "5"]
    assert [m["role"] for m in row["prompt"]] == ["system", "user", "user"]
    assert str(store.scalar("SELECT voted_at FROM battles WHERE battle_id = 'b2'")) == "2026-03-01 12:00:00"
    assert store.scalar("SELECT count(*) FROM ingests") == 1


def test_cli_ingest_battles_reingest_is_noop(run_cli, tmp_path, write_jsonl):
    path = write_jsonl(tmp_path / "b.jsonl", [battle(i) for i in range(3)])
    r = run_cli("ingest", "battles", path)
    assert r.exit_code == 0 and r.output == "battles: read 3, added 3\n"
    r = run_cli("ingest", "battles", path)
    assert r.exit_code == 0 and r.output == "battles: read 3, added 0, skipped already present=3\n"


BAD_CASES = [
    (
        "missing field",
        [battle(1), {"battle_id": "b2", "prompt": "q", "own_answer": "a", "vote": "win"}],
        "line 2, field 'opponent_answer': missing field",
    ),
    ("unknown vote", [battle(1, vote="draw")], "line 1, field 'vote': unknown value 'draw'"),
    (
        "unknown role",
        [battle(1, prompt=[{"role": "robot", "content": "x"}])],
        "line 1, field 'prompt': prompt[0].role: unknown role 'robot'",
    ),
    ("good then bad", [battle(1), battle(2), battle(3, vote=None)], "line 3, field 'vote': missing field"),
    (
        "duplicate differing in file",
        [battle(1), battle(1, own_answer="changed")],
        "battle_id 'b1' appears twice with different content",
    ),
    ("truncated last line", [json.dumps(battle(1)), json.dumps(battle(2))[:-9]], "line 2: invalid JSON"),
    ("not an object", [battle(1), "[1, 2]"], "line 2: expected a JSON object"),
    ("bad time", [battle(1, voted_at="yesterday")], "line 1, field 'voted_at': not an ISO 8601 time"),
    (
        "turns and prompt",
        [{**battle(1), "turns": [{"user": "u", "own": "o", "opponent": "p"}]}],
        "field 'turns': give either turns or prompt",
    ),
]


@pytest.mark.parametrize("name, records, message", BAD_CASES, ids=[c[0] for c in BAD_CASES])
@pytest.mark.slow
def test_bad_battle_records_write_nothing(run_cli, store, tmp_path, name, records, message, write_jsonl):
    path = tmp_path / "bad.jsonl"
    if name == "truncated last line":
        path.write_text(records[0] + "\n" + records[1], encoding="utf-8")
    else:
        write_jsonl(path, records)
    store.close()
    r = run_cli("ingest", "battles", path)
    assert r.exit_code == 2
    assert r.output.startswith(f"error: {path}")
    assert message in r.output
    assert len(r.output.strip().splitlines()) == 1
    with open_store(path.parent / "store.duckdb", read_only=True) as s:
        assert count(s, "battles") == 0 and count(s, "ingests") == 0


def test_non_utf8_and_empty_files(run_cli, tmp_path):
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps(battle(1)).encode() + b"\n" + b'{"battle_id": "caf\xe9"}\n')
    r = run_cli("ingest", "battles", bad)
    assert r.exit_code == 2 and "line 2: bytes that are not UTF-8" in r.output
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    r = run_cli("ingest", "battles", empty)
    assert r.exit_code == 2 and r.output == f"error: {empty}: empty file\n"


def test_known_id_with_different_content_is_an_error(store, tmp_path, write_jsonl):
    ingest_battles(store, write_jsonl(tmp_path / "a.jsonl", [battle(1), battle(2)]))
    path = write_jsonl(tmp_path / "b.jsonl", [battle(3), battle(2, own_answer="rewritten")])
    with pytest.raises(BadInput, match=r"line 2, field 'battle_id': battle_id 'b2' is already in the store"):
        ingest_battles(store, path)
    assert count(store, "battles") == 2  # b3 was not written either


def test_ten_megabyte_answer_is_accepted(store, tmp_path, write_jsonl):
    big = "word " * (2 * 1024 * 1024)  # 10 MiB
    ingest_battles(store, write_jsonl(tmp_path / "big.jsonl", [battle(1, own_answer=big)]))
    assert store.scalar("SELECT length(own_answers[1]) FROM battles") == len(big)


def test_parquet_battles_and_wrong_column_type(store, tmp_path):
    good = tmp_path / "b.parquet"
    pq.write_table(pa.Table.from_pylist([battle(1), battle(2, vote="both_bad")]), good)
    assert ingest_battles(store, good).added == 2
    bad = tmp_path / "bad.parquet"
    pq.write_table(
        pa.table(
            {"battle_id": ["x1"], "prompt": ["q"], "own_answer": ["a"], "opponent_answer": ["b"], "vote": [1]}
        ),
        bad,
    )
    with pytest.raises(BadInput) as e:
        ingest_battles(store, bad)
    assert str(e.value) == f"{bad}, row 1, field 'vote': expected a string, got int"
    assert count(store, "battles") == 2


def test_sigkill_halfway_leaves_store_as_it_was(db_path, tmp_path, write_jsonl):
    path = write_jsonl(tmp_path / "b.jsonl", [battle(i) for i in range(2000)])
    # The child runs the real ingest and stops inside its transaction, after the rows are inserted.
    child = textwrap.dedent(f"""
        import sys, time
        import pairstore.ingest.battles as ing
        from pairstore.store.store import open_store
        real = ing.log_ingest
        def slow(*a, **k):
            real(*a, **k)
            print("inserted", flush=True)
            time.sleep(60)
        ing.log_ingest = slow
        ing.ingest_battles(open_store({str(db_path)!r}), {path!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    assert proc.stdout.readline().strip() == "inserted"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with open_store(db_path) as s:
        assert count(s, "battles") == 0
        assert ingest_battles(s, path).added == 2000


def test_store_in_use_says_so_in_one_line(db_path, run_cli, tmp_path, monkeypatch):
    open_store(db_path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import time; from pairstore.store.store import open_store; s = open_store({str(db_path)!r});"
            " print('open', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        monkeypatch.setenv("PAIRSTORE_BUSY_WAIT", "0.3")  # commands wait a while for a busy store
        r = run_cli("sql", "SELECT 1")
        assert r.exit_code == 1
        assert r.output.strip() == (
            f"error: store {db_path} is in use by another process "
            f"(held by process {holder.pid}); try again when it finishes"
        )
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.slow
def test_several_readers_at_once(db_path, tmp_path, write_jsonl):
    with open_store(db_path) as s:
        ingest_battles(s, write_jsonl(tmp_path / "b.jsonl", [battle(1)]))
    code = (
        "import time; from pairstore.store.store import open_store; "
        f"s = open_store({str(db_path)!r}, read_only=True);"
        " print(s.scalar('SELECT count(*) FROM battles'), flush=True); time.sleep(1.5)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(3)
    ]
    time.sleep(0.2)
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert outs == ["1", "1", "1"] and all(p.returncode == 0 for p in procs)


# --- problems ---------------------------------------------------------------


def test_ingest_problems_gsm8k_and_math_local(store, tmp_path, write_jsonl):
    gsm = write_jsonl(
        tmp_path / "gsm8k-train.jsonl",
        [
            {
                "question": "Ann has 48 apples and gives half away. How many are left?",
                "answer": "She gives 48/2 = <<48/2=24>>24 away.\n#### 24",
            },
            {
                "question": "A farm has 1,200 hens and buys 300 more. How many hens?",
                "answer": "1200+300=<<1200+300=1500>>1500\n#### 1,500",
            },
        ],
    )
    res = ingest_problems(store, "gsm8k", path=gsm)
    assert res.added == 2
    assert sorted(r[0] for r in store.con.execute("SELECT gold FROM problems").fetchall()) == ["1500", "24"]
    math_path = tmp_path / "algebra-train.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "problem": "Solve $x+1=3$.",
                    "level": "Level 1",
                    "type": "Algebra",
                    "solution": "So $x = \\boxed{2}$.",
                },
                {
                    "problem": "Simplify $\\frac{6}{8}$.",
                    "level": "Level 2",
                    "type": "Prealgebra",
                    "solution": "First $\\boxed{1}$ is wrong; it is $\\boxed{\\frac{3}{4}}$.",
                },
            ]
        ),
        math_path,
    )
    assert ingest_problems(store, "math", path=math_path).added == 2
    assert store.scalar("SELECT gold FROM problems WHERE subject = 'Prealgebra'") == "\\frac{3}{4}"
    assert ingest_problems(store, "math", path=math_path).added == 0


def test_test_split_is_refused(run_cli, tmp_path, write_jsonl):
    path = write_jsonl(tmp_path / "test.jsonl", [{"question": "q", "answer": "#### 1"}])
    r = run_cli("ingest", "problems", "--dataset", "gsm8k", "--path", path)
    assert r.exit_code == 2 and "looks like a test/validation split" in r.output
    ok = write_jsonl(tmp_path / "train.jsonl", [{"question": "q", "answer": "#### 1"}])
    r = run_cli("ingest", "problems", "--dataset", "gsm8k", "--path", ok, "--split", "test")
    assert r.exit_code == 2 and "split 'test' refused" in r.output


def test_problem_without_gold_names_line_and_field(store, tmp_path, write_jsonl):
    path = write_jsonl(
        tmp_path / "train.jsonl",
        [{"question": "q", "answer": "#### 1"}, {"question": "q2", "answer": "no marker"}],
    )
    with pytest.raises(BadInput, match=r"line 2, field 'answer': no '#### <answer>' line"):
        ingest_problems(store, "gsm8k", path=path)
    assert count(store, "problems") == 0


# --- generations, pairs, judgments -----------------------------------------


def test_ingest_generations_on_problems_and_prompts(store, tmp_path, write_jsonl):
    ingest_problems(
        store, "gsm8k", path=write_jsonl(tmp_path / "train.jsonl", [{"question": "1+1?", "answer": "#### 2"}])
    )
    pid = store.scalar("SELECT problem_id FROM problems")
    path = write_jsonl(
        tmp_path / "g.jsonl",
        [
            {
                "item_kind": "problem",
                "item_id": pid,
                "output": "It is 2.",
                "sample_index": 0,
                "temperature": 0.8,
            },
            {
                "item_kind": "problem",
                "item_id": pid,
                "output": "It is 3.",
                "sample_index": 1,
                "temperature": 0.8,
            },
            {"prompt": "Say hi", "output": "hi"},
        ],
    )
    assert ingest_generations(store, path, model="so7a").added == 3
    assert ingest_generations(store, path, model="so7a").added == 0
    assert (
        store.scalar("SELECT prompt[1].content FROM generations WHERE item_kind='problem' LIMIT 1") == "1+1?"
    )
    bad = write_jsonl(tmp_path / "g2.jsonl", [{"item_kind": "problem", "item_id": "nope", "output": "x"}])
    with pytest.raises(BadInput, match="line 1, field 'item_id': no problem with id 'nope'"):
        ingest_generations(store, bad, model="so7a")


def test_ingest_pairs_strings_messages_and_ultrafeedback_rows(store, tmp_path, write_jsonl):
    path = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"prompt": "q1", "chosen": "good", "rejected": "bad"},
            {"prompt": [{"role": "user", "content": "q2"}], "chosen": "good2", "rejected": "bad2"},
            {
                "prompt": "q3",
                "prompt_id": "x",
                "chosen": [{"role": "user", "content": "q3"}, {"role": "assistant", "content": "uf good"}],
                "rejected": [{"role": "user", "content": "q3"}, {"role": "assistant", "content": "uf bad"}],
                "score_chosen": 8.0,
                "score_rejected": 3.0,
            },
            {"prompt": "q5", "chosen": "target only"},
        ],
    )
    res = ingest_pairs(store, path, source="uf")
    assert res.added == 4 and res.skipped == {}
    row = store.rows("SELECT chosen, rejected FROM pairs WHERE chosen LIKE 'uf%'")[0]
    assert row == {"chosen": "uf good", "rejected": "uf bad"}
    assert store.scalar("SELECT kind FROM pairs WHERE chosen = 'target only'") == "sft"
    assert store.scalar("SELECT count(*) FROM pair_origins WHERE origin_kind = 'import'") == 4


def test_pair_origins_are_the_line_then_each_id_once(store, tmp_path):
    """Origins built as columns: a blank line moves the later lines, an id given in two fields is one
    origin, a prompt with a blank user turn beside a real one is fine."""
    from pairstore.keys import sha256_file

    path = tmp_path / "p.jsonl"
    recs = [
        {"prompt": "q1", "chosen": "good", "rejected": "bad", "id": "a", "question_id": "a"},
        {"prompt": "q2", "chosen": "good2", "rejected": "bad2"},
        {
            "prompt": [{"role": "user", "content": " "}, {"role": "user", "content": "q3"}],
            "chosen": "good3",
            "rejected": "bad3",
            "battle_id": "c",
            "id": "b",
        },
    ]
    lines = [json.dumps(r) for r in recs]
    path.write_text(lines[0] + "\n\n" + lines[1] + "\n" + lines[2] + "\n", encoding="utf-8")
    assert ingest_pairs(store, path, source="s").added == 3
    sha = sha256_file(path)[:16]
    got = store.con.execute(
        "SELECT p.chosen, o.origin_kind, o.origin_id FROM pair_origins o JOIN pairs p USING (pair_id) "
        "ORDER BY p.chosen, o.origin_kind DESC, o.origin_id"
    ).fetchall()
    assert got == [
        ("good", "import", f"{sha}:1"),
        ("good", "file_id", "a"),
        ("good2", "import", f"{sha}:3"),
        ("good3", "import", f"{sha}:4"),
        ("good3", "file_id", "b"),
        ("good3", "file_id", "c"),
    ]


def test_an_unusable_pair_is_named_by_its_first_broken_rule(store, tmp_path, write_jsonl):
    """The first row any rule breaks, with the first rule it breaks (a later row breaks an earlier rule)."""
    path = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"prompt": "q1", "chosen": "good", "rejected": "bad"},
            {"prompt": "q2", "chosen": "x", "rejected": "x "},
            {"prompt": "q3", "chosen": " ", "rejected": "bad"},
        ],
    )
    with pytest.raises(BadInput, match="line 2, field 'rejected': the same answer as chosen"):
        ingest_pairs(store, path, source="s")
    assert count(store, "pairs") == 0


def test_ingest_judgments(store, tmp_path, write_jsonl):
    ingest_battles(store, write_jsonl(tmp_path / "b.jsonl", [battle(1)]))
    path = write_jsonl(
        tmp_path / "j.jsonl",
        [{"battle_id": "b1", "model_a": "sm11a", "model_b": "so7a", "winner": "a", "heavy_flaw_b": True}],
    )
    assert ingest_judgments(store, path).added == 1
    assert ingest_judgments(store, path).added == 0
    bad = write_jsonl(
        tmp_path / "j2.jsonl", [{"battle_id": "b1", "model_a": "sm11a", "model_b": "so7a", "winner": "draw"}]
    )
    with pytest.raises(BadInput, match="field 'winner': unknown value 'draw'"):
        ingest_judgments(store, bad)


# --- bad input is one line and exit 2, never a traceback ----------------------


def _all_tables_empty(db_path) -> bool:
    with open_store(db_path, read_only=True) as s:
        return all(
            count(s, t) == 0
            for t in (
                "battles",
                "problems",
                "generations",
                "pairs",
                "pair_origins",
                "judgments",
                "evals",
                "ingests",
                "holdout_sets",
            )
        )


def _one_line_exit_2(r, *parts):
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("error: "), r.output
    for part in parts:
        assert part in r.output, r.output


INGEST_KINDS = [
    ("battles", []),
    ("battles", ["--format", "arena", "--own-model", "m"]),
    ("battles", ["--format", "arena55k", "--own-model", "m"]),
    ("generations", ["--model", "m"]),
    ("pairs", ["--source", "s"]),
    ("judgments", []),
    ("evals", ["--model", "m", "--suite", "s"]),
]


@pytest.mark.parametrize("kind, options", INGEST_KINDS, ids=[" ".join([k, *o[:2]]) for k, o in INGEST_KINDS])
def test_a_missing_path_is_one_line_for_every_ingest_kind(run_cli, db_path, tmp_path, kind, options):
    missing = tmp_path / "missing.jsonl"
    _one_line_exit_2(run_cli("ingest", kind, missing, *options), str(missing), "no such file")
    assert _all_tables_empty(db_path)


@pytest.mark.parametrize("dataset", ["gsm8k", "math"])
def test_a_missing_problems_path_is_one_line(run_cli, db_path, tmp_path, dataset):
    missing = tmp_path / "missing-train.jsonl"
    _one_line_exit_2(run_cli("ingest", "problems", "--dataset", dataset, "--path", missing), "no such file")
    assert _all_tables_empty(db_path)


LONE_SURROGATE = (
    '{"battle_id": "\\ud800", "prompt": "q", "own_answer": "a", "opponent_answer": "b", "vote": "win"}'
)
BAD_JSON_LINES = [
    ("battles", [], LONE_SURROGATE, "line 1, field 'battle_id': lone surrogate escape \\ud800"),
    (
        "battles",
        [],
        '{"battle_id": "b1", "prompt": [{"role": "user", "content": "x\\udfff y"}], "own_answer": "a",'
        ' "opponent_answer": "b", "vote": "win"}',
        "field 'prompt[0].content': lone surrogate",
    ),
    (
        "pairs",
        ["--source", "s"],
        '{"prompt": "q", "chosen": "a\\ud83d", "rejected": "b"}',
        "field 'chosen': lone surrogate escape \\ud83d",
    ),
    (
        "judgments",
        [],
        '{"battle_id": "b\\udc00", "model_a": "x", "model_b": "y", "winner": "a"}',
        "field 'battle_id': lone surrogate",
    ),
    (
        "battles",
        [],
        '{"battle_id": "b1", "category": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "line 1: JSON nested deeper than 64 levels",
    ),
    ("pairs", ["--source", "s"], '{"prompt": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested deeper"),
    (
        "generations",
        ["--model", "m"],
        json.dumps({"prompt": "q", "output": "x", "seed": 10**30}),
        "field 'seed': integer 1000000000000000000000000000000 is out of range",
    ),
    (
        "generations",
        ["--model", "m"],
        json.dumps({"prompt": "q", "output": "x", "sample_index": 2**40}),
        "field 'sample_index': integer 1099511627776 is out of range (-2147483648 to 2147483647)",
    ),
    (
        "generations",
        ["--model", "m"],
        json.dumps({"prompt": "q", "output": "x", "max_new_tokens": -(10**20)}),
        "field 'max_new_tokens': integer -100000000000000000000 is out of range",
    ),
]


@pytest.mark.parametrize(
    "kind, options, line, message",
    BAD_JSON_LINES,
    ids=[f"{k}-{i}" for i, (k, *_rest) in enumerate(BAD_JSON_LINES)],
)
def test_surrogates_deep_nesting_and_huge_integers_are_one_line(
    run_cli, db_path, tmp_path, kind, options, line, message
):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    _one_line_exit_2(run_cli("ingest", kind, path, *options), f"error: {path}", message)
    assert _all_tables_empty(db_path)


@pytest.mark.parametrize(
    "command",
    [
        ["holdout", "sample", "h", "--n", "1"],
        ["generate", "loopfix", "--n", "1"],
        ["mine", "ultrafeedback", "--path", "x.parquet"],
        ["mine", "self-repair", "--model", "m", "--dataset", "gsm8k"],
        ["mine", "loopfix", "--model", "m"],
    ],
)
def test_a_seed_beyond_64_bits_is_one_line(run_cli, db_path, tmp_path, write_jsonl, command):
    run_cli("ingest", "battles", write_jsonl(tmp_path / "b.jsonl", [battle(1)]))
    r = run_cli(*command, "--seed", str(10**30))
    _one_line_exit_2(r, "field 'seed': seed 1000000000000000000000000000000 does not fit in 64 bits")
    with open_store(db_path, read_only=True) as s:
        assert count(s, "holdout_sets") == 0 and count(s, "tasks") == 0


BAD_PAIRS = [
    ({"prompt": "q", "chosen": "", "rejected": "b"}, "field 'chosen': empty or whitespace-only answer"),
    ({"prompt": "q", "chosen": " \t\n", "rejected": "b"}, "field 'chosen': empty or whitespace-only answer"),
    ({"prompt": "q", "chosen": "a", "rejected": "  "}, "field 'rejected': empty or whitespace-only answer"),
    ({"prompt": "q", "chosen": "same", "rejected": "same"}, "field 'rejected': the same answer as chosen"),
    ({"prompt": "q", "chosen": "same ", "rejected": " same"}, "field 'rejected': the same answer as chosen"),
    ({"prompt": "  ", "chosen": "a", "rejected": "b"}, "field 'prompt': no user message with text"),
    ({"prompt": "q", "completion": "   "}, "field 'chosen': empty or whitespace-only answer"),
]


@pytest.mark.parametrize(
    "record, message", BAD_PAIRS, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD_PAIRS)]
)
def test_a_pair_file_with_an_unusable_pair_is_refused_like_battles(
    run_cli, db_path, tmp_path, write_jsonl, record, message
):
    path = write_jsonl(
        tmp_path / "pairs.jsonl", [{"prompt": "fine", "chosen": "yes", "rejected": "no"}, record]
    )
    _one_line_exit_2(run_cli("ingest", "pairs", path, "--source", "s"), f"{path}, line 2, {message}")
    assert _all_tables_empty(db_path)
