"""The vectorized ingest of GSM8K and MATH problem files stores exactly what the record-by-record ingest
stores (same keys, same rows, same counts), and a bad record gets the same one-line error from both."""

from __future__ import annotations

import json

import pytest

from pairstore.errors import BadInput
from pairstore.ingest import bulk
from pairstore.ingest import problems as problem_ingest
from pairstore.ingest.problems import ingest_problems
from pairstore.keys import content_id, match_key
from pairstore.store.store import open_store
from tests.tiers import fast_share

COLUMNS = "problem_id, dataset, subject, level, split, question, solution, gold, match_key, source_file"


def stored(db) -> list[tuple]:
    with open_store(db, read_only=True) as store:
        return store.con.execute(f"SELECT {COLUMNS} FROM problems ORDER BY rowid").fetchall()


def gsm8k_records() -> list[dict]:
    """GSM8K rows as the dataset publishes them, with what real copies add: NFC-sensitive and non-Latin
    text, thousands separators in the answer, spaces around it, an extra field, a repeated row."""
    questions = [
        'Janet has {} "ducks"\\t. How many eggs?',
        "Cafe\u0301 sells {} cups. How many?",
        "Сколько будет {} + 2?",
        "  Leading and trailing spaces {} \u200b ",
    ]
    out = []
    for i in range(30):
        rec = {
            "question": questions[i % 4].format(i),
            "answer": f"Step one.\nStep two 😀 <<{i}*2={i * 2}>>\n####  {i * 1000:,} ",
        }
        if i % 5 == 0:
            rec["extra"] = {"ignored": [1, 2], "n": None}
        out.append(rec)
    out.append(dict(out[3]))  # the same problem twice in one file
    return out


def math_records(shape: str = "mixed") -> list[dict]:
    """MATH rows as EleutherAI/hendrycks_math publishes them (problem, solution with \\boxed, level
    "Level N", type), MATH-500-shaped rows (answer, subject, an integer level, unique_id), rows whose
    answers are integers, or the three mixed in one file (whose mixed column types the Arrow reader
    refuses: that file takes the per-record path)."""
    out = []
    for i in range(30):
        form = shape if shape != "mixed" else ("hendrycks", "math500", "int-answers")[i % 3]
        if form == "hendrycks":
            rec = {
                "problem": f"Compute $\\frac{{{i}}}{{2}}$ — é",
                "solution": f"We halve: $\\boxed{{\\frac{{{i}}}{{2}}}}$ and also \\boxed{{{i}/2}}",
                "level": f"Level {1 + i % 5}",
                "type": ["Algebra", "Geometry"][i % 2],
            }
        else:
            rec = {
                "problem": f"What is {i} squared?",
                "solution": f"It is {i * i}.",
                "answer": f" {i * i} " if form == "math500" else i * i,
                "subject": "Prealgebra",
                "level": 1 + i % 5,
                "unique_id": f"train/prealgebra/{i}.json",
            }
            if i % 3 == 0:
                rec["type"] = None  # null: the subject is read
        out.append(rec)
    out.append(dict(out[4]))
    return out


SHAPES = {
    "gsm8k": ("gsm8k", gsm8k_records),
    "math": ("math", lambda: math_records("hendrycks")),
    "math500": ("math", lambda: math_records("math500")),
    "math-int-answers": ("math", lambda: math_records("int-answers")),
    "math-mixed": ("math", lambda: math_records("mixed")),
}


def write(path, records) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return str(path)


def paths_taken(monkeypatch) -> list:
    """What each call of the vectorized path did: True (it stored the file), False (it left the file to
    the per-record path) or the error it raised."""
    taken: list = []
    real = problem_ingest._ingest_vectorized

    def spy(*args):
        try:
            took = real(*args)
        except BadInput as e:
            taken.append(e)
            raise
        taken.append(took)
        return took

    monkeypatch.setattr(problem_ingest, "_ingest_vectorized", spy)
    return taken


@pytest.mark.parametrize("shape", SHAPES)
def test_vectorized_and_per_record_paths_store_the_same_problems(tmp_path, monkeypatch, shape, new_store):
    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 1024)  # several batches; the repeat in a later one
    taken = paths_taken(monkeypatch)
    dataset, records = SHAPES[shape]
    results, rows = {}, {}
    for name in ("train.jsonl", "train.json"):  # .json: the per-record path only
        db = tmp_path / f"{name}.duckdb"
        path = write(tmp_path / name, records())
        with new_store(db) as store:
            results[name] = ingest_problems(store, dataset, path=path)
            again = ingest_problems(store, dataset, path=path)
            logged = store.con.execute("SELECT kind, rows_read, rows_added FROM ingests").fetchall()
        assert again.added == 0 and again.skipped["already present"] == again.read
        assert logged == [(f"problems:{dataset}", 31, 30), (f"problems:{dataset}", 31, 0)]
        rows[name] = stored(db)
    vectorized = shape != "math-mixed"
    assert taken == [vectorized, vectorized, False, False]
    fast, slow = results["train.jsonl"], results["train.json"]
    assert (fast.read, fast.added, dict(fast.skipped)) == (slow.read, slow.added, dict(slow.skipped))
    assert (fast.read, fast.added, dict(fast.skipped)) == (31, 30, {"already present": 1})
    assert [r[:-1] for r in rows["train.jsonl"]] == [r[:-1] for r in rows["train.json"]]
    assert {r[-1] for r in rows["train.jsonl"]} == {"train.jsonl"}
    first = rows["train.jsonl"][0]  # the keys are pairstore.keys', byte for byte
    assert first[0] == f"{dataset}:{content_id(first[5])}" and first[8] == match_key(first[5])
    if dataset == "math":
        assert {r[3] for r in rows["train.jsonl"]} == {f"Level {n}" for n in range(1, 6)}
    if shape == "math-mixed":
        assert {r[2] for r in rows["train.jsonl"]} == {"Algebra", "Geometry", "Prealgebra"}
        assert {r[7] for r in rows["train.jsonl"] if r[7].isdigit()} >= {"4", "16"}


BAD = {
    "gsm8k": [
        ({"question": None}, "field 'question': missing field"),
        ({"question": " \x1c "}, "field 'question': empty value"),  # blank to str.strip, not to Arrow
        ({"answer": "The answer is 4."}, "field 'answer': no '#### <answer>' line"),
        ({"answer": 4}, "field 'answer': expected a string, got int"),
        ({"question": 'Janet has 0 "ducks"\\t. How many eggs?'}, "appears twice with different content"),
    ],
    "math": [
        ({"solution": "No box here.", "answer": None}, "field 'solution': no \\boxed{...} answer"),
        ({"answer": " "}, "field 'solution': no \\boxed{...} answer"),
        ({"type": ""}, "field 'type': empty value"),
        ({"type": None, "subject": "  "}, "field 'subject': empty value"),
        ({"level": 3.5}, "field 'level': expected a string, got float"),
        ({"level": True}, "field 'level': expected a string, got bool"),
        ({"level": " "}, "field 'level': empty value"),
        ({"unique_id": "Test/algebra/1.json"}, "field 'unique_id': 'Test/algebra/1.json' is a test-split"),
        ({"answer": False}, "field 'answer': expected a string, got bool"),
        ({"problem": ["not", "text"]}, "field 'problem': expected a string, got list"),
    ],
}
RECORDS = {"gsm8k": gsm8k_records, "math": lambda: math_records("math500")}
CASES = [(d, bad, message, at) for d in BAD for bad, message in BAD[d] for at in (0, 13, 30)]


@pytest.mark.parametrize(
    "dataset, bad, message, at", fast_share(CASES, keep=6), ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in CASES]
)
def test_a_bad_problem_gets_the_same_error_from_both_paths(
    tmp_path, monkeypatch, dataset, bad, message, at, new_store
):
    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 1024)
    recs = RECORDS[dataset]()
    if at == 0 and "appears twice" in message:
        at = 13  # a repeat needs a first occurrence before it
    recs[at] = {**recs[at], **bad}
    errors = []
    for name in ("bad.jsonl", "bad.json"):
        with new_store(tmp_path / f"{name}.duckdb") as store:
            with pytest.raises(BadInput) as err:
                ingest_problems(store, dataset, path=write(tmp_path / name, recs))
            assert store.scalar("SELECT count(*) FROM problems") == 0
            assert store.scalar("SELECT count(*) FROM ingests") == 0
        errors.append(str(err.value).replace("bad.json,", "bad.jsonl,", 1))
    assert errors[0] == errors[1]
    assert f"line {at + 1}" in errors[0] and message in errors[0], errors[0]


@pytest.mark.parametrize(
    "damage",
    ["blank line", "key twice", "non-finite number", "not UTF-8 in an unread field", "too deep"],
)
def test_files_the_arrow_reader_cannot_take_whole_get_the_per_record_error(
    tmp_path, monkeypatch, damage, new_store
):
    taken = paths_taken(monkeypatch)
    recs: list = gsm8k_records()[:6]
    if damage == "blank line":
        recs[2] = ""
        recs[4] = {"question": None, "answer": "#### 1"}
        message = "line 5, field 'question': missing field"
    elif damage == "key twice":
        recs[3] = '{"question": "a", "answer": "#### 1", "answer": "#### 2"}'
        message = "line 4, field 'answer': a key appears twice in one JSON object"
    elif damage == "non-finite number":
        recs[3] = {**recs[3], "extra": 1e400}
        message = "line 4: 1e400 is not a finite number"
    elif damage == "too deep":
        recs[3] = {**recs[3], "extra": json.loads("[" * 70 + "]" * 70)}
        message = "line 4: JSON nested deeper than 64 levels"
    else:
        message = "line 4: bytes that are not UTF-8"
    path = tmp_path / "train.jsonl"
    write(path, recs)
    if damage == "non-finite number":
        path.write_text(path.read_text().replace("Infinity", "1e400"))
    if damage == "not UTF-8 in an unread field":
        lines = path.read_bytes().split(b"\n")
        lines[3] = lines[3][:-1] + b', "extra": "\xff\xfe"}'
        path.write_bytes(b"\n".join(lines))
    with new_store(tmp_path / "s.duckdb") as store:
        with pytest.raises(BadInput, match=message):
            ingest_problems(store, "gsm8k", path=str(path))
        assert store.scalar("SELECT count(*) FROM problems") == 0
    # the reader refused the file, or its checks flagged the bad record and the parser named it
    assert taken == [False] or (damage == "blank line" and isinstance(taken[0], BadInput)), taken


def test_only_records_up_to_the_flagged_one_are_parsed(tmp_path, monkeypatch, new_store):
    parsed: list[int] = []
    real = problem_ingest.problem_fields
    monkeypatch.setattr(
        problem_ingest, "problem_fields", lambda dataset, f: parsed.append(f.line) or real(dataset, f)
    )
    recs = gsm8k_records()
    recs[5]["answer"] = "no marker"
    with new_store(tmp_path / "s.duckdb") as store:
        with pytest.raises(BadInput, match="line 6, field 'answer'"):
            ingest_problems(store, "gsm8k", path=write(tmp_path / "train.jsonl", recs))
    assert parsed == [1, 2, 3, 4, 5, 6]  # found by the batch checks; the parser names it
