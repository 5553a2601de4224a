"""The vectorized ingest of eval results (the simple JSONL form and lm-evaluation-harness samples logs)
stores exactly what the record-by-record ingest stores (the same scores, scanner columns, held-out docs
and counts), and a bad record gets the same one-line error from both."""

from __future__ import annotations

import json

import pytest

from audits.loops import scan, scan_many
from pairstore.errors import BadInput
from pairstore.ingest import bulk
from pairstore.ingest import evals as eval_ingest
from pairstore.ingest.evals import ingest_evals
from pairstore.store.store import open_store
from tests.tiers import fast_share

SCORES = (
    "model, suite, item_id, score, correct, extracted_answer, gold, output_len, empty, loop_flagged, "
    "loop_catastrophic, gen_id, doc_hash, prompt_hash"
)
ITEMS = "suite, item_id, kind, prompt, gold, task_key, match_key"

LOOP = "Let me check again. " * 40
OUTPUTS = [
    "Step 1: 17 * 23 = 391.\nFinal answer: 391",
    "",
    LOOP,
    "答案是四。" * 60,  # a loop without spaces
    "Cafe\u0301 — the answer is 4 😀",
    None,
]


def simple_records(ids: str = "strings") -> list[dict]:
    """The simple form as tools write it: correct, score or both, answers of several JSON types, outputs
    that loop, are empty or missing, an item repeated with the same result, fields the ingest ignores."""
    out = []
    for i in range(30):
        rec: dict = {"item_id": f"q{i:03d}" if ids == "strings" else i}
        if i % 3 != 1:
            rec["correct"] = i % 2 == 0
        if i % 3 != 0:
            rec["score"] = [0.25, 1, 0.75, 0][i % 4]
        if i % 4:
            rec["extracted_answer"] = str(i) if ids == "strings" else i
        rec["gold"] = f" {i} " if ids == "strings" else i
        if OUTPUTS[i % len(OUTPUTS)] is not None:
            rec["output"] = OUTPUTS[i % len(OUTPUTS)]
        if i % 5 == 0:
            rec["meta"] = {"ignored": [1, 2], "run": None}
        out.append(rec)
    out.append(dict(out[7]))  # the same result twice
    return out


QUESTIONS = [
    "Janet's ducks lay {} eggs per day. How many does she sell?",
    "Сколько будет {} + 2?",
    "A train travels {} km in 2 hours. What is its speed?",
]


def lm_eval_records(shape: str = "gsm8k") -> list[dict]:
    """lm-evaluation-harness samples_*.jsonl records: two filters per doc (gsm8k's strict-match and
    flexible-extract), or one filter and a true/false metric (IFEval's form), docs whose question is
    under a known field or (passage) only their longest string."""
    out = []
    for doc_id in range(12):
        question = QUESTIONS[doc_id % 3].format(doc_id)
        doc = {"question": question, "answer": f"Work.\n#### {doc_id}"}
        if shape == "passage":
            doc = {"label": doc_id % 2, "passage_text": question, "title": "T"}
        filters = ["strict-match", "flexible-extract"] if shape != "ifeval" else ["none"]
        for n, filt in enumerate(filters):
            rec = {
                "doc_id": doc_id,
                "doc": doc,
                "target": f"{doc_id}",
                "arguments": {
                    "gen_args_0": {
                        "arg_0": "Q: ...\nA:",
                        "arg_1": {"until": ["Q:"], "do_sample": False, "temperature": 0.0},
                    }
                },
                "resps": [[OUTPUTS[(doc_id + n) % len(OUTPUTS)]]],
                "filtered_resps": [str(doc_id) if n else "[invalid]"],
                "filter": filt,
                "doc_hash": f"dh{doc_id}",
                "prompt_hash": f"ph{doc_id}",
                "target_hash": "t",
                "metrics": ["prompt_level_strict_acc"] if shape == "ifeval" else ["exact_match"],
            }
            if shape == "ifeval":
                rec["prompt_level_strict_acc"] = doc_id % 3 == 0
                rec["inst_level_strict_acc"] = [True, False]
            else:
                rec["exact_match"] = float((doc_id + n) % 2)
            out.append(rec)
    return out


SHAPES = {
    "simple": ("jsonl", simple_records),
    "simple-int-ids": ("jsonl", lambda: simple_records("ints")),
    "lm-eval": ("lm-eval", lm_eval_records),
    "lm-eval-ifeval": ("lm-eval", lambda: lm_eval_records("ifeval")),
    "lm-eval-passage": ("lm-eval", lambda: lm_eval_records("passage")),
}


def write(path, records) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return str(path)


def paths_taken(monkeypatch) -> list:
    """What each call of the vectorized path did: True (stored the file), False (left it to the
    per-record path) or the error it raised."""
    taken: list = []
    real = eval_ingest._ingest_vectorized

    def spy(*args):
        try:
            done = real(*args)
        except BadInput as e:
            taken.append(e)
            raise
        taken.append(done is not None)
        return done

    monkeypatch.setattr(eval_ingest, "_ingest_vectorized", spy)
    return taken


def ingest(store, path, fmt, **kw):
    return ingest_evals(store, path, model="sm11a", suite="v6", scan=scan, scan_many=scan_many, fmt=fmt, **kw)


def stored(db) -> tuple[list, list, list]:
    with open_store(db, read_only=True) as store:
        scores = store.con.execute(f"SELECT {SCORES}, origin FROM evals ORDER BY rowid").fetchall()
        items = store.con.execute(f"SELECT {ITEMS} FROM eval_items ORDER BY rowid").fetchall()
        logged = store.con.execute(
            "SELECT kind, rows_read, rows_added FROM ingests ORDER BY rowid"
        ).fetchall()
    return scores, items, logged


@pytest.mark.parametrize("shape", SHAPES)
def test_vectorized_and_per_record_paths_store_the_same_results(tmp_path, monkeypatch, shape, new_store):
    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 2048)  # several batches; repeats in later ones
    taken = paths_taken(monkeypatch)
    fmt, records = SHAPES[shape]
    results, rows = {}, {}
    for name in ("samples.jsonl", "samples.json"):  # .json: the per-record path only
        db = tmp_path / f"{name}.duckdb"
        path = write(tmp_path / name, records())
        with new_store(db) as store:
            results[name] = ingest(store, path, fmt)
            again = ingest(store, path, fmt)
        assert again.added == 0 and again.skipped == again.items and again.eval_items_added == 0
        rows[name] = stored(db)
    assert taken == [True, True, False, False]
    assert results["samples.jsonl"] == results["samples.json"]
    (fast_scores, fast_items, fast_log), (slow_scores, slow_items, slow_log) = rows.values()
    assert [r[:-1] for r in fast_scores] == [r[:-1] for r in slow_scores]  # every column, in order
    assert {r[-1].split(":")[1] for r in fast_scores} == {"samples.jsonl"}  # the origin names the file
    assert fast_items == slow_items and fast_log == slow_log
    assert results["samples.jsonl"].added == len(fast_scores) > 10
    assert any(r[9] for r in fast_scores) and any(r[8] for r in fast_scores)  # loops and empties seen
    if fmt == "lm-eval":
        assert results["samples.jsonl"].filter == ("none" if shape == "lm-eval-ifeval" else "strict-match")
        assert len(fast_items) == 12 and fast_items[0][3][0]["content"].startswith("Janet")


def test_the_filter_and_metric_options_give_the_same_rows(tmp_path, new_store):
    recs = lm_eval_records()
    for r in recs[::5]:
        r["acc"] = 0.5  # a second metric on some records only: --metric acc flags the others
    out = []
    for kw in ({"filter_name": "flexible-extract"}, {"metric": "exact_match"}, {"metric": "acc"}):
        got = []
        for name in ("s.jsonl", "s.json"):
            with new_store(tmp_path / f"{name}-{len(out)}.duckdb") as store:
                try:
                    got.append(ingest(store, write(tmp_path / name, recs), "lm-eval", **kw))
                except BadInput as e:
                    got.append(str(e).replace("s.json,", "s.jsonl,", 1))
        assert got[0] == got[1], kw
        out.append(got[0])
    assert out[0].filter == "flexible-extract" and out[1].items == 12
    assert "field 'acc'" in out[2]


BAD = {
    "jsonl": [
        ({"item_id": None}, "field 'item_id': missing or empty item_id"),
        ({"item_id": " \x1c"}, "field 'item_id': missing or empty item_id"),
        ({"item_id": True}, "field 'item_id': missing or empty item_id"),
        ({"correct": "yes"}, "field 'correct': expected true or false, got 'yes'"),
        ({"score": "high"}, "field 'score': expected a number, got 'high'"),
        ({"correct": None, "score": None}, "field 'correct': needs correct (true/false) or score"),
        ({"output": 5}, "field 'output': expected a string"),
        ({"item_id": "q004", "correct": True, "score": 0.1}, "appears twice with different results"),
    ],
    "lm-eval": [
        ({"doc_id": None}, "field 'doc_id': missing doc_id"),
        ({"doc": None}, "field 'doc': no question text in doc"),
        ({"doc": {"label": 3}}, "field 'doc': no question text in doc"),
        ({"exact_match": None}, "field 'exact_match': expected a number, got None"),
        ({"exact_match": "1"}, "field 'exact_match': expected a number, got '1'"),
        ({"doc": {"question": "Another question entirely"}, "doc_id": 0}, "appears with two different docs"),
        ({"_first": True, "exact_match": 0.5}, "appears twice with different results"),
    ],
}
CASES = [(fmt, bad, message, at) for fmt in BAD for bad, message in BAD[fmt] for at in (0, 13, 23)]


@pytest.mark.parametrize(
    "fmt, bad, message, at", fast_share(CASES, keep=6), ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in CASES]
)
def test_a_bad_record_gets_the_same_error_from_both_paths(
    tmp_path, monkeypatch, fmt, bad, message, at, new_store
):
    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 2048)
    recs = simple_records() if fmt == "jsonl" else lm_eval_records()
    if "appears" in message and at == 0:
        at = 13  # a conflict needs a record before it
    if bad.get("_first"):  # the first record again, with another result
        bad = {**recs[0], **{k: v for k, v in bad.items() if k != "_first"}}
    recs[at] = {**recs[at], **bad}
    errors = []
    for name in ("bad.jsonl", "bad.json"):
        with new_store(tmp_path / f"{name}.duckdb") as store:
            with pytest.raises(BadInput) as err:
                ingest(store, write(tmp_path / name, recs), fmt)
            assert store.scalar("SELECT count(*) FROM evals") == 0
            assert store.scalar("SELECT count(*) FROM eval_items") == 0
            assert store.scalar("SELECT count(*) FROM ingests") == 0
        errors.append(str(err.value).replace("bad.json,", "bad.jsonl,", 1))
    assert errors[0] == errors[1]
    assert f"line {at + 1}" in errors[0] and message in errors[0], errors[0]


def test_a_result_already_stored_with_another_value_is_the_same_error(tmp_path, new_store):
    errors = []
    for name in ("b.jsonl", "b.json"):
        with new_store(tmp_path / f"{name}.duckdb") as store:
            ingest(store, write(tmp_path / "a.jsonl", simple_records()), "jsonl")
            recs = simple_records()
            recs[9]["correct"], recs[9]["score"] = not recs[9].get("correct", False), 0.9
            with pytest.raises(BadInput) as err:
                ingest(store, write(tmp_path / name, recs), "jsonl")
            assert store.scalar("SELECT count(*) FROM ingests") == 1
        errors.append(str(err.value).replace("b.json,", "b.jsonl,", 1))
    assert errors[0] == errors[1] and "line 10, field 'item_id'" in errors[0], errors


@pytest.mark.parametrize("damage", ["blank line", "key twice", "mixed id types", "filter only later"])
def test_files_the_arrow_path_cannot_take_whole_store_the_same_rows(tmp_path, monkeypatch, damage, new_store):
    taken = paths_taken(monkeypatch)
    fmt = "lm-eval" if damage == "filter only later" else "jsonl"
    recs: list = simple_records() if fmt == "jsonl" else lm_eval_records()
    if damage == "blank line":
        recs[4] = ""
    elif damage == "key twice":
        recs[4] = '{"item_id": "q004", "correct": true, "correct": false}'
    elif damage == "mixed id types":
        recs[4] = {**recs[4], "item_id": 4}
    else:
        del recs[0]["filter"]  # the per-record loop keeps it and takes the next record's filter
    results = []
    for name in ("d.jsonl", "d.json"):
        with new_store(tmp_path / f"{name}.duckdb") as store:
            try:
                results.append(ingest(store, write(tmp_path / name, recs), fmt))
            except BadInput as e:
                results.append(str(e).replace("d.json,", "d.jsonl,", 1))
    assert taken == [False, False]
    assert results[0] == results[1]
    if damage == "key twice":
        assert "line 5, field 'correct': a key appears twice" in results[0]
