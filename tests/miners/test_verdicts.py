"""Three verdicts: every reason the verifier gives, and miners that never turn an unknown into a pair.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/miners/test_verdicts.py -q
"""

from __future__ import annotations

import json

import duckdb
import pytest

from generators.tasks import generate_tasks, write_tasks
from miners.loopfix import mine_loopfix
from miners.self_repair import mine_self_repair
from miners.verify import UNKNOWN_REASONS, Verifier, verify
from miners.verify import extract as extract_module
from miners.verify import rules as rules_module
from miners.verify.rules import SPAN_RULES, Span, SpanRule
from pairstore.ingest.generations import ingest_generations
from pairstore.keys import match_key
from pairstore.store.migrations import MIGRATIONS

# Commits to nothing, but names every gold of these tests (2, 4, 7, 8) in passing: "no answer found" is
# unknown only where the gold is stated somewhere; an output that states it nowhere is wrong (rule b).
NO_ANSWER = (
    "Let me think about the 2 trains, 4 wagons, 7 stations and 8 tracks.\nFirst the speed, then the"
    " distance, and after that we compare both of them carefully\nand more"
)
GOLD_NOWHERE = (
    "Let me think about the trains.\nFirst the speed, then the distance, and after that we compare"
    " both of them carefully\nand more"
)
DISAGREE = (
    "</think> <answer> In the equation $|x-1|=7$, both $x=8$ and $x=-6$ satisfy the equation. Thus,"
    " the sum of the solutions is $8+(-6)=2$. </answer>"
)
UNDECIDED = "So the value is \\boxed{\\sum_{k=1}^{n} k^{3}}."  # too large for math-verify's guard
# a value read out of a sentence that offers several (it reads 7: a misreading); math-verify reads nothing
# a value read out of prose that math-verify cannot confirm; it writes both fixture problems' golds (7,
# 8), so rule (b) leaves it unknown against either
WEAK = "After eight days he had seven apples and ate two, so five are left."
UNCONFIRMED_NO_GOLD = "He had seven apples and ate two, so five are left."
LOOP = "I count the apples again and again. " * 40

REASON_CASES = [
    # (output, gold, kind, label, reason)
    ("3 + 4 = 7.\nFinal answer: 7", "7", "gsm8k", "correct", "compared equal"),
    ("3 + 4 = 8.\nFinal answer: 8", "7", "gsm8k", "wrong", "compared unequal"),
    ("   \n", "7", "gsm8k", "wrong", "empty output"),
    ("The total is \\boxed{}", "7", "gsm8k", "wrong", "empty answer"),
    ("The total is \\boxed{\\frac{1", "7", "math", "wrong", "truncated before any answer"),
    ("We compute 3 + 4 =", "7", "gsm8k", "wrong", "truncated before any answer"),
    # cut off after writing the gold's value: the answer may be there, unmarked
    (
        "We compute 3 + 4 = 7, so the total of the",
        "7",
        "gsm8k",
        "unknown",
        "truncated after a possible answer",
    ),
    (LOOP, "7", "gsm8k", "wrong", "looped before any answer"),
    (NO_ANSWER, "7", "gsm8k", "unknown", "no answer found"),
    (GOLD_NOWHERE, "7", "gsm8k", "wrong", "gold's value stated nowhere"),
    ("no final line here at all, just words\nand more words", "7", "task", "unknown", "no answer found"),
    (DISAGREE, "2", "math", "unknown", "verifiers disagree"),
    (UNDECIDED, "\\frac{n^2(n+1)^2}{4}", "math", "unknown", "comparison undecided"),
    (WEAK, "5", "gsm8k", "unknown", "weak form unconfirmed"),
    (WEAK, "7", "gsm8k", "unknown", "weak form unconfirmed"),
    # the same unconfirmed reading where the gold is written nowhere: no reading holds it (rule (b))
    (UNCONFIRMED_NO_GOLD, "8", "gsm8k", "wrong", "gold's value stated nowhere"),
    ("So he has seven apples.", "7", "gsm8k", "correct", "compared equal"),  # one number: no choice
    ("So he has seven apples.", "8", "gsm8k", "wrong", "compared unequal"),
    ("Final answer: " + "9" * 2500, "9", "gsm8k", "unknown", "answer too long"),
]


@pytest.mark.parametrize("output,gold,kind,label,reason", REASON_CASES)
def test_every_reason(output, gold, kind, label, reason):
    verdict = verify(output, gold, kind)
    assert (verdict.label, verdict.reason) == (label, reason)
    assert verdict.definite == (label != "unknown")
    if label == "unknown":
        assert reason in UNKNOWN_REASONS


def test_disagreement_keeps_both_readings():
    verdict = verify(DISAGREE, "2", "math")
    readings = {r.verifier: r for r in verdict.readings}
    assert set(readings) == {"fast", "math-verify"}
    assert readings["fast"].label == "correct" and readings["math-verify"].label == "wrong"
    assert readings["fast"].answer == verdict.answer == "8+(-6)=2"


def test_strong_forms_never_ask_math_verify():
    v = Verifier()
    for k in range(50):
        assert v.verify(f"Work {k}.\nFinal answer: 1,250", "1250", "gsm8k").correct
        assert v.verify(f"So $x = \\boxed{{\\frac{{1}}{{{k + 2}}}}}$", "0.5", "math").label in (
            "correct",
            "wrong",
        )
    assert v.stats["output_calls"] == 0


def test_ambiguous_when_two_rules_of_equal_standing_read_differently(monkeypatch):
    """Two spans at the same place from rules of the same priority, reading different answers: no
    rule prefers one, so the extraction is ambiguous (unknown); reading the same answer is not."""

    def twin(text, low, kind):
        i = text.find("Result")
        if i >= 0:
            yield Span(i, len(text), text[i + 7 :].split("|")[-1].strip(), "twin")

    def first(text, low, kind):
        i = text.find("Result")
        if i >= 0:
            yield Span(i, len(text), text[i + 7 :].split("|")[0].strip(), "first")

    rules = (
        *SPAN_RULES,
        SpanRule("first", 1, True, ("result",), first),
        SpanRule("twin", 1, True, ("result",), twin),
    )
    monkeypatch.setattr(
        extract_module, "find_spans", lambda text, kind: rules_module.find_spans(text, kind, rules)
    )
    monkeypatch.setattr(extract_module, "RULES_BY_NAME", {r.name: r for r in rules})
    assert verify("Result: 7 | 9", "7", "gsm8k").reason == "ambiguous answer"
    assert verify("Result: 7 | 7", "7", "gsm8k").label == "correct"


def test_every_span_rule_documents_its_forms_with_an_example():
    for rule in SPAN_RULES:
        doc = rule.find.__doc__ or ""
        assert "->" in doc, f"{rule.name}: the docstring names its output forms with an example"
    names = [r.name for r in SPAN_RULES]
    assert len(names) == len(set(names))


def test_counters_belong_to_each_verifier():
    a, b = Verifier(), Verifier()
    a.verify(NO_ANSWER, "7", "gsm8k")
    assert a.stats["unknown: no answer found"] == 1 and not b.stats


# ------------------------------------------------------------------------------------------- miners


def _problem(store, pid, question, gold, solution):
    store.con.execute(
        "INSERT INTO problems (problem_id, dataset, split, question, solution, gold, match_key) "
        "VALUES (?, 'gsm8k', 'train', ?, ?, ?, ?)",
        [pid, question, solution, gold, match_key(question)],
    )


def _generations(store, tmp_path, write_jsonl, outputs, model="m1"):
    recs = [
        {"item_kind": k, "item_id": i, "sample_index": s, "output": o, "temperature": 0.8}
        for k, i, s, o in outputs
    ]
    ingest_generations(store, write_jsonl(tmp_path / f"{model}.jsonl", recs), model=model)


UNKNOWN_OUTPUTS = {
    "unknown: no answer found": NO_ANSWER,
    "unknown: weak form unconfirmed": WEAK,
    "unknown: answer too long": "Final answer: " + "9" * 2500,
    # a number in another language's words after an English marker: read as a word, which no number
    # compares with either way
    "unknown: comparison undecided": "Das sind zusammen sieben.\nFinal answer: sieben",
    # cut off (on a word no sentence ends on) after writing both problems' golds, 7 and 8
    "unknown: truncated after a possible answer": "We add 3 + 4 = 7 and 5 + 3 = 8, so the total of the",
}


@pytest.fixture
def unknown_store(store, tmp_path, write_jsonl):
    _problem(
        store, "p1", "Tom has 3 apples and buys 4 more. How many apples?", "7", "3+4 = <<3+4=7>>7\n#### 7"
    )
    _problem(store, "p2", "Sam has 5 pens and buys 3 more. How many pens?", "8", "5+3 = <<5+3=8>>8\n#### 8")
    _problem(store, "p3", "Ann has 2 cats and gets 2 more. How many cats?", "4", "2+2 = <<2+2=4>>4\n#### 4")
    outputs = [
        ("problem", "p1", 0, "3 + 4 = 7.\nFinal answer: 7"),
        ("problem", "p1", 1, "3 + 4 = 8.\nFinal answer: 8"),
    ]
    # p1 also holds one unknown sample per reason; p2 only unknowns; p3 unknowns and one wrong answer
    outputs += [("problem", "p1", 2 + k, text) for k, text in enumerate(UNKNOWN_OUTPUTS.values())]
    outputs += [("problem", "p2", k, text) for k, text in enumerate(UNKNOWN_OUTPUTS.values())]
    outputs += [("problem", "p3", 0, NO_ANSWER), ("problem", "p3", 1, "2 + 2 = 5.\nFinal answer: 5")]
    _generations(store, tmp_path, write_jsonl, outputs)
    return store


def test_self_repair_never_pairs_an_unknown(unknown_store):
    store = unknown_store
    res = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=10, seed=0)
    unknown_texts = set(UNKNOWN_OUTPUTS.values()) | {NO_ANSWER}
    pairs = store.rows("SELECT chosen, rejected, source FROM pairs")
    assert pairs and not any(p["chosen"] in unknown_texts or p["rejected"] in unknown_texts for p in pairs)
    assert sorted((p["source"], p["rejected"]) for p in pairs) == [
        ("gold_repair", "2 + 2 = 5.\nFinal answer: 5"),
        ("self_repair", "3 + 4 = 8.\nFinal answer: 8"),
    ]
    # every unknown counted by its reason (p1: one of each, p2: one of each, p3: one "no answer")
    assert res.dropped["unknown: no answer found"] == 3
    assert res.dropped["unknown: weak form unconfirmed"] == 2
    assert res.dropped["unknown: answer too long"] == 2
    assert res.dropped["unknown: comparison undecided"] == 2
    assert res.dropped["unknown: truncated after a possible answer"] == 2
    assert res.dropped["every sample unknown"] == 1  # p2: no pair at all, not even a gold repair
    assert res.stats["unknown"] == 11
    assert "unknown: no answer found" in res.as_dict()["dropped"]  # what --json prints
    stored = store.rows("SELECT output, verdict, verdict_reason FROM generations WHERE item_id = 'p2'")
    assert {(r["verdict"], r["verdict_reason"]) for r in stored} == {
        ("unknown", k.split(": ", 1)[1]) for k in UNKNOWN_OUTPUTS
    }


def test_mine_self_repair_json_counts_unknowns(unknown_store, run_cli, db_path):
    unknown_store.close()
    r = run_cli("mine", "self-repair", "--model", "m1", "--dataset", "gsm8k", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["dropped"]["unknown: no answer found"] == 3
    assert out["dropped"]["every sample unknown"] == 1


def test_disagreeing_readings_are_stored_on_the_generation(store, tmp_path, write_jsonl):
    _problem(store, "p1", "Solve |x-1| = 7 and add the solutions.", "2", "#### 2")
    _generations(
        store,
        tmp_path,
        write_jsonl,
        [("problem", "p1", 0, DISAGREE), ("problem", "p1", 1, "Final answer: 3")],
    )
    res = mine_self_repair(store, model="m1", dataset="gsm8k")
    assert res.dropped["unknown: verifiers disagree"] == 1
    row = store.rows(
        "SELECT verdict, verdict_reason, verdict_readings FROM generations WHERE sample_index = 0"
    )[0]
    assert (row["verdict"], row["verdict_reason"]) == ("unknown", "verifiers disagree")
    readings = json.loads(row["verdict_readings"])
    assert {r["verifier"]: r["label"] for r in readings} == {"fast": "correct", "math-verify": "wrong"}


def test_loopfix_never_pairs_an_unknown(store, tmp_path, write_jsonl):
    tasks = generate_tasks(3, 3)
    write_tasks(store, tasks)
    t = tasks[0]
    outputs = [
        ("task", t.task_id, 0, "Working it out.\nFinal answer: not the gold"),
        ("task", t.task_id, 1, NO_ANSWER),
        ("task", t.task_id, 2, t.chosen),
    ]
    _generations(store, tmp_path, write_jsonl, outputs)
    res = mine_loopfix(store, model="m1")
    rejected = [r["rejected"] for r in store.rows("SELECT rejected FROM pairs")]
    assert rejected == ["Working it out.\nFinal answer: not the gold"]
    assert res.dropped["unknown: no answer found"] == 1 and res.dropped["correct"] == 1


# ------------------------------------------------------------------------------------------- migration


def test_three_verdicts_migration_keeps_rows_and_admits_unknown(tmp_path):
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    three = next(i for i, fn in enumerate(MIGRATIONS) if fn.__name__ == "m006_three_verdicts")
    for fn in MIGRATIONS[:three]:
        fn(con)
    con.execute(
        "INSERT INTO generations (gen_id, model, item_kind, prompt, output, verdict) "
        "VALUES ('g1', 'm', 'prompt', [{'role': 'user', 'content': 'hi'}], 'out', 'correct')"
    )
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO generations (gen_id, model, item_kind, prompt, output, verdict) "
            "VALUES ('g0', 'm', 'prompt', [{'role': 'user', 'content': 'hi'}], 'out', 'unknown')"
        )
    con.execute("BEGIN")
    MIGRATIONS[three](con)
    con.execute("COMMIT")
    assert con.execute("SELECT gen_id, verdict, verdict_reason FROM generations").fetchall() == [
        ("g1", "correct", None)
    ]
    con.execute(
        "INSERT INTO generations (gen_id, model, item_kind, prompt, output, verdict, verdict_reason) "
        "VALUES ('g2', 'm', 'prompt', [{'role': 'user', 'content': 'hi'}], 'out', 'unknown', "
        "'no answer found')"
    )
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO generations (gen_id, model, item_kind, prompt, output, verdict) "
            "VALUES ('g3', 'm', 'prompt', [{'role': 'user', 'content': 'hi'}], 'out', 'maybe')"
        )
    with pytest.raises(duckdb.ConstraintException):  # the other constraints survive the rebuild
        con.execute(
            "INSERT INTO generations (gen_id, model, item_kind, prompt, output) "
            "VALUES ('g1', 'm', 'prompt', [{'role': 'user', 'content': 'hi'}], 'out')"
        )
