"""Random files, seeded: whatever the vectorized ingest of problems and eval results does with a file (store
it, leave it to the per-record path, or refuse it), the outcome is the per-record path's: the same rows or
the same one-line error."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from audits.loops import scan, scan_many
from pairstore.errors import BadInput
from pairstore.ingest import bulk
from pairstore.ingest import evals as eval_ingest
from pairstore.ingest import problems as problem_ingest
from pairstore.ingest.evals import ingest_evals
from pairstore.ingest.problems import ingest_problems
from pairstore.store.store import open_store

TEXTS = ["What is 2 + 2?", "", "  ", "Cafe\u0301", "\x1c", "x " * 30, "#### 4", "\\boxed{4}", "Сколько?"]


def value(rng: random.Random, *choices):
    """One of `choices`, or now and then a value of another JSON type, or the field left out."""
    roll = rng.random()
    if roll < 0.02:
        return rng.choice([None, 0, 1.5, True, [], {"a": 1}, "Level 2"])
    if roll < 0.04:
        return KeyError  # leave the field out
    return rng.choice(choices)


def record(rng: random.Random, fields: dict) -> dict:
    rec = {name: value(rng, *choices) for name, choices in fields.items()}
    return {k: v for k, v in rec.items() if v is not KeyError}


SHAPES = {
    "gsm8k": {
        "question": [f"Q{i}: how many?" for i in range(24)] + TEXTS,
        "answer": ["Work.\n#### 4"] * 4 + ["#### 1,000", "no marker", "####"],
    },
    "math": {
        "problem": [f"Compute {i}." for i in range(24)] + TEXTS,
        "solution": ["So \\boxed{4}."] * 8 + ["No box.", "\\boxed{\\frac{1}{2}}"],
        "answer": ["4", " ", 7, None],
        "level": [1, 2, 3],
        "type": ["Algebra"] * 4 + [None] * 4 + [""],
        "subject": ["Geometry"] * 6 + [" "],
        "unique_id": ["train/a/1.json"] * 8 + ["test/a/2.json", None],
    },
    "jsonl": {
        "item_id": [f"q{i}" for i in range(10)] + [" "],
        "correct": [True, False, None],
        "score": [0.0, 0.5, 1, None],
        "extracted_answer": ["4", None],
        "gold": ["4", " 4 "],
        "output": ["The answer is 4.", "", "again " * 40, None],
    },
    "lm-eval": {
        "doc_id": list(range(8)),
        "doc": [{"question": f"Q{i}?"} for i in range(8)] + [{"label": 1}],
        "target": ["4", "5"],
        "resps": [[["The answer is 4."]], [["again " * 40]]],
        "filtered_resps": [["4"], ["[invalid]"]],
        "filter": ["strict-match", "flexible-extract"],
        "exact_match": [0.0, 1.0],
    },
}


def outcome(store, kind: str, path: str):
    try:
        if kind in ("gsm8k", "math"):
            result = ingest_problems(store, kind, path=path).as_dict()
            rows = store.con.execute(
                "SELECT * EXCLUDE (ingested_at, source_file) FROM problems ORDER BY rowid"
            )
        else:
            result = ingest_evals(
                store, path, model="m", suite="s", scan=scan, scan_many=scan_many, fmt=kind
            ).as_dict()
            rows = store.con.execute("SELECT * EXCLUDE (created_at, origin) FROM evals ORDER BY rowid")
        result.pop("path", None)
        items = store.con.execute("SELECT * EXCLUDE (created_at) FROM eval_items ORDER BY rowid").fetchall()
        return result, rows.fetchall(), items
    except BadInput as e:
        return str(e).replace(".json,", ".jsonl,", 1)


@pytest.mark.slow
@pytest.mark.parametrize("kind", SHAPES)
def test_random_files_get_the_per_record_outcome(tmp_path, monkeypatch, kind, new_store_file):
    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 1024)
    module = problem_ingest if kind in ("gsm8k", "math") else eval_ingest
    stored_by_it: list = []  # what each call of the vectorized path returned
    real = module._ingest_vectorized

    def spy(*args):
        stored_by_it.append(real(*args))
        return stored_by_it[-1]

    monkeypatch.setattr(module, "_ingest_vectorized", spy)
    rng = random.Random(f"fuzz-{kind}")
    outcomes = set()
    for n in range(25):
        recs = [record(rng, SHAPES[kind]) for _ in range(rng.randint(1, 14))]
        got = []
        for name in ("f.jsonl", "f.json"):  # .json: the per-record path only
            path = tmp_path / f"{n}-{name}"
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
            db = tmp_path / f"{n}-{name}.duckdb"
            shutil.copyfile(new_store_file, db)  # a new store for the price of a copy
            with open_store(db) as store:
                got.append(outcome(store, kind, str(path)))
        assert got[0] == got[1], (n, recs)
        outcomes.add(isinstance(got[0], str))
    assert outcomes == {True, False}  # some files stored, some refused
    assert any(r not in (None, False) for r in stored_by_it)  # and some stored by the vectorized path
