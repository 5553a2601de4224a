"""`pairstore audit gate`: the store's own members, disguised, through the gate's matcher."""

from __future__ import annotations

import json

from tests.holdout.test_gate_every_text import MEMBERS, held_out


def test_audit_gate_reports_recall_per_transformation_and_false_refusals(run_cli, tmp_path, write_jsonl):
    held_out(run_cli, tmp_path, write_jsonl)
    res = run_cli("audit", "gate", "--json", "--seed", "3")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["members"] == len(MEMBERS) and report["seed"] == 3
    recall = {r["transform"]: r for r in report["recall"]}
    # the classes the gate is built against: every member found in every disguise
    for name in (
        "HTML entities",
        "ChatML template",
        "Llama-3 template",
        "upper case",
        "every letter Cyrillic",
        "the member's answer as chosen",
        "inside a chosen answer",
        "greeting and thanks around it",
        "split over two user turns",
    ):
        assert recall[name]["rows"] == len(MEMBERS) and recall[name]["recall"] == 1.0, recall[name]
    # near neighbours are other questions: none refused
    for m in report["mutations"]:
        assert m["rows"] > 0 and m["refused"] == 0, m
    assert any("paraphrase" in u for u in report["uncaught"])
    # the same seed gives the same report; the table names every transformation
    assert json.loads(run_cli("audit", "gate", "--json", "--seed", "3").output) == report
    table = run_cli("audit", "gate")
    assert (
        table.exit_code == 0 and "Question/Answer format" in table.output and "false refusal" in table.output
    )


def test_audit_gate_limit_and_unknown_set(run_cli, tmp_path, write_jsonl):
    held_out(run_cli, tmp_path, write_jsonl)
    res = run_cli("audit", "gate", "--json", "--limit", "2")
    assert res.exit_code == 0 and json.loads(res.output)["members"] == 2
    res = run_cli("audit", "gate", "--set", "nope")
    assert res.exit_code != 0 and "nope" in res.output
