"""`pairstore audit verifier`: our verdicts and math-verify's per dataset and reason, before mining."""

from __future__ import annotations

import json

import pytest

from tests.miners.test_verdicts import DISAGREE, NO_ANSWER, _generations, _problem


def test_audit_of_a_models_generations_counts_per_dataset_and_reason(store, tmp_path, write_jsonl, run_cli):
    _problem(store, "p1", "Tom has 3 apples and buys 4 more. How many apples?", "7", "#### 7")
    _problem(store, "p2", "Solve |x-1| = 7 and add the solutions.", "2", "#### 2")
    _generations(
        store,
        tmp_path,
        write_jsonl,
        [
            ("problem", "p1", 0, "3 + 4 = 7.\nFinal answer: 7"),
            ("problem", "p1", 1, "3 + 4 = 8.\nFinal answer: 8"),
            ("problem", "p1", 2, NO_ANSWER),
            ("problem", "p2", 0, DISAGREE),
        ],
    )
    store.close()
    r = run_cli("audit", "verifier", "--model", "m1", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["source"] == "model m1"
    (gsm,) = out["datasets"]
    assert (gsm["dataset"], gsm["rows"]) == ("gsm8k", 4)
    assert gsm["ours"] == {"correct": 1, "wrong": 1, "unknown": 2}
    assert gsm["unknown_reasons"] == {"no answer found": 1, "verifiers disagree": 1}
    assert sum(gsm["math_verify"].values()) == 4
    assert {e["ours"] for e in gsm["examples"]} >= {"unknown: no answer found", "unknown: verifiers disagree"}
    r = run_cli("audit", "verifier", "--model", "m1")
    assert r.exit_code == 0 and "no answer found 1" in r.output and "gsm8k" in r.output


def test_audit_of_a_labelled_file_counts_wrong_verdicts_against_the_labels(tmp_path, run_cli, write_jsonl):
    path = write_jsonl(
        tmp_path / "labelled.jsonl",
        [
            {
                "id": "a",
                "pred": "The answer is \\boxed{\\frac{1}{2}}.",
                "gold": "0.5",
                "kind": "math",
                "equal": True,
            },
            {"id": "b", "pred": "Final answer: 3", "gold": "4", "kind": "gsm8k", "equal": False},
            {"id": "c", "pred": NO_ANSWER, "gold": "7", "kind": "gsm8k", "equal": False, "dataset": "zs"},
        ],
    )
    r = run_cli("audit", "verifier", "--path", path, "--json")
    assert r.exit_code == 0, r.output
    by = {d["dataset"]: d for d in json.loads(r.output)["datasets"]}
    assert set(by) == {"math", "gsm8k", "zs"}
    assert by["math"]["ours"] == {"correct": 1} and by["math"]["ours_wrong_definite"] == 0
    assert by["gsm8k"]["ours"] == {"wrong": 1} and by["gsm8k"]["labelled"] == 1
    assert by["zs"]["unknown_reasons"] == {"no answer found": 1} and by["zs"]["coverage"] == 0.0


def test_audit_verifier_bad_input(store, tmp_path, run_cli, write_jsonl):
    store.close()
    path = write_jsonl(
        tmp_path / "bad.jsonl", [{"pred": "Final answer: 3", "gold": "3"}, {"pred": "x", "kind": "math"}]
    )
    r = run_cli("audit", "verifier", "--path", path)
    assert r.exit_code == 2
    assert "bad.jsonl" in r.output and "2" in r.output and "gold" in r.output
    assert run_cli("audit", "verifier").exit_code == 2  # neither --model nor --path
    r = run_cli("audit", "verifier", "--model", "nobody")
    assert r.exit_code == 2 and "nobody" in r.output


@pytest.mark.slow
def test_report_shows_the_stored_verdicts_of_the_lineages_models(store, tmp_path):
    from audits.report import build_report
    from tests.audits.test_audit_report import build_store

    build_store(store, tmp_path)
    for i, (verdict, reason, readings) in enumerate(
        [
            ("correct", "compared equal", None),
            (
                "unknown",
                "verifiers disagree",
                '[{"verifier": "fast", "label": "correct", "answer": "2"}, '
                '{"verifier": "math-verify", "label": "wrong", "answer": "7"}]',
            ),
            ("unknown", "no answer found", None),
        ]
    ):
        store.con.execute(
            "INSERT INTO generations (gen_id, model, item_kind, suite, prompt, output, verdict, "
            "verdict_reason, verdict_readings) "
            "VALUES (?, 's1', 'eval_item', 'v6', [{'role': 'user', 'content': 'x'}], ?, ?, ?, ?)",
            [f"v{i}", f"out {i}", verdict, reason, readings],
        )
    report = build_report(store, "s1")
    (section,) = [s for s in report.sections if s.key == "verdicts"]
    ((caption, table),) = section.tables
    row = dict(zip(table.columns, table.rows[0]))
    assert (row["model"], row["dataset"], row["generations"]) == ("s1", "eval_item:v6", 3)
    assert (row["correct"], row["wrong"], row["unknown"], row["readings disagree"]) == (1, 0, 2, 1)
    assert row["unknown by reason"] == "verifiers disagree 1, no answer found 1"
