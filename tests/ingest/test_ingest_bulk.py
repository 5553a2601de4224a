"""The vectorized ingest of generations stores exactly what the record-by-record ingest stores, and
refuses what it refuses, naming the same file, line and field."""

from __future__ import annotations

import pytest

from generators.tasks import generate_loopfix
from pairstore.errors import BadInput
from pairstore.ingest import generations as gen_ingest
from pairstore.ingest.generations import ingest_generations
from pairstore.ingest.problems import ingest_problems
from pairstore.store.store import open_store
from pairstore.tables.generations import generation_id

COLUMNS = (
    "gen_id, model, item_kind, item_id, suite, prompt, output, sample_index, temperature, top_p, "
    "max_new_tokens, seed, decoding, verdict, source_file"
)


def stored(store) -> list[tuple]:
    return store.con.execute(f"SELECT {COLUMNS} FROM generations ORDER BY rowid").fetchall()


def fill_items(store, tmp_path, write_jsonl):
    generate_loopfix(store, 20, seed=3)
    ingest_problems(
        store,
        "gsm8k",
        path=write_jsonl(
            tmp_path / "train.jsonl",
            [{"question": f"{i}+1 = ? ünïcode", "answer": f"#### {i + 1}"} for i in range(5)],
        ),
    )
    return (
        [r[0] for r in store.con.execute("SELECT task_id FROM tasks ORDER BY task_id").fetchall()],
        [r[0] for r in store.con.execute("SELECT problem_id FROM problems ORDER BY problem_id").fetchall()],
    )


def records(tasks, problems):
    out = []
    for n, tid in enumerate(tasks):
        for s in range(3):
            out.append(
                {
                    "item_kind": "task",
                    "item_id": tid,
                    "output": f'answer {n} sample {s} é\u200b "quoted"\n',
                    "sample_index": s,
                    "temperature": [0.7, 1, None][s],
                    "top_p": 0.95,
                    "max_new_tokens": 256,
                    "seed": 11,
                    "extra_field": {"ignored": [1, 2]},
                }
            )
    for pid in problems:
        out.append(
            {"item_kind": "problem", "item_id": pid, "output": "Cafe\u0301 = 2"}
        )  # NFC matters in the id
    out.append(dict(out[0]))  # a duplicate within the file
    return out


def test_vectorized_and_per_record_paths_store_the_same_rows(tmp_path, write_jsonl, monkeypatch):
    fast_db, slow_db = tmp_path / "fast.duckdb", tmp_path / "slow.duckdb"
    from pairstore.ingest import bulk

    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 2048)  # several batches; the duplicate in a later one
    calls = []
    real = gen_ingest._ingest_vectorized
    monkeypatch.setattr(gen_ingest, "_ingest_vectorized", lambda *a: calls.append(real(*a)) or calls[-1])
    results = {}
    for db, name in ((fast_db, "outs.jsonl"), (slow_db, "outs.json")):  # .json: the per-record path only
        with open_store(db) as store:
            (tmp_path / db.stem).mkdir()
            tasks, problems = fill_items(store, tmp_path / db.stem, write_jsonl)
            path = write_jsonl(tmp_path / db.stem / name, records(tasks, problems))
            results[db] = ingest_generations(store, path, model="so7a")
            again = ingest_generations(store, path, model="so7a")
            assert again.added == 0 and again.read == results[db].read
    assert calls == [True, True, False, False]  # the .jsonl file took the vectorized path, the .json not
    fast, slow = results[fast_db], results[slow_db]
    assert (
        (fast.read, fast.added, dict(fast.skipped))
        == (slow.read, slow.added, dict(slow.skipped))
        == (
            66,
            65,
            {"already present": 1},
        )
    )
    with open_store(fast_db, read_only=True) as f, open_store(slow_db, read_only=True) as s:
        fast_rows, slow_rows = stored(f), stored(s)
    # the same rows in the same order; only the file name differs by construction
    assert [r[:-1] for r in fast_rows] == [r[:-1] for r in slow_rows]
    assert {r[-1] for r in fast_rows} == {"outs.jsonl"}
    # keys are pairstore.keys' content ids, byte for byte
    first = fast_rows[0]
    assert first[0] == generation_id("so7a", "task", first[3], first[7], first[8], first[6])


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"item_id": "nope"}, "line 3, field 'item_id': no task with id 'nope'"),
        ({"sample_index": 2**40}, "line 3, field 'sample_index': integer 1099511627776 is out of range"),
        ({"output": 7}, "line 3, field 'output': expected a string, got int"),
        ({"item_kind": "tsk"}, "line 3, field 'item_kind': unknown value 'tsk'"),
        ({"temperature": "hot"}, "line 3, field 'temperature': expected a number, got str"),
    ],
)
def test_a_bad_record_is_named_by_line_and_field_and_nothing_is_written(
    store, tmp_path, write_jsonl, bad, message
):
    tasks, _ = fill_items(store, tmp_path, write_jsonl)
    recs = [{"item_kind": "task", "item_id": t, "output": "x"} for t in tasks[:5]]
    recs[2].update(bad)
    path = write_jsonl(tmp_path / "bad.jsonl", recs)
    with pytest.raises(BadInput, match=message.replace("(", r"\(")):
        ingest_generations(store, path, model="so7a")
    assert store.scalar("SELECT count(*) FROM generations") == 0
    assert store.scalar("SELECT count(*) FROM ingests WHERE kind = 'generations'") == 0


def test_blank_lines_keep_line_numbers_right(store, tmp_path, write_jsonl):
    tasks, _ = fill_items(store, tmp_path, write_jsonl)
    path = tmp_path / "blank.jsonl"
    path.write_text(
        f'{{"item_kind": "task", "item_id": "{tasks[0]}", "output": "a"}}\n\n'
        '{"item_kind": "task", "item_id": "missing", "output": "b"}\n',
        encoding="utf-8",
    )
    with pytest.raises(BadInput, match="line 3, field 'item_id'"):
        ingest_generations(store, path, model="so7a")


def test_py_whitespace_is_what_str_isspace_says_of_every_code_point():
    from pairstore.ingest.bulk import PY_WHITESPACE

    assert PY_WHITESPACE == "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
