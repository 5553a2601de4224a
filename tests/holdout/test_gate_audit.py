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
        "URL-encoded (form)",
        "URL-encoded (percent)",
        "byte-level BPE token dump",
        "SentencePiece token dump",
        "WordPiece token dump",
    ):
        assert recall[name]["rows"] == len(MEMBERS) and recall[name]["recall"] == 1.0, recall[name]
    # near neighbours are other questions (another number, other content words, a possessive): none refused
    assert len(report["mutations"]) == 4
    for m in report["mutations"]:
        assert m["rows"] > 0 and m["refused"] == 0, m
    assert report["skipped_needles"] == {"count": 0, "examples": []}
    assert any("paraphrase" in u for u in report["uncaught"])
    # the same seed gives the same report; the table names every transformation
    assert json.loads(run_cli("audit", "gate", "--json", "--seed", "3").output) == report
    table = run_cli("audit", "gate")
    assert (
        table.exit_code == 0 and "Question/Answer format" in table.output and "false refusal" in table.output
    )
    assert "skipped needles (stock phrases of the store, not evidence): 0" in table.output


REFUSAL = "I'm sorry, but I can't help with that request. Is there anything else I can help you with today?"
REORDERABLE = (
    "A shop sells pencils at 31 cents each in the old town. How much do 84 pencils cost, in cents? "
    "Please show every step of the working clearly."
)


def test_audit_gate_reorders_sentences_and_counts_a_stock_answer_as_skipped(run_cli, tmp_path, write_jsonl):
    """A member of three sentences is found reordered; a member whose answer is a stock refusal the store's
    other prompts use is shown as a skipped needle, and the answer transformation leaves it out."""
    members = {
        "h-three": (REORDERABLE, "2,604 cents: 84 times 31, worked out digit by digit for you.", "No."),
        "h-refusal": ("How do I open my neighbour's car without the key?", REFUSAL, "Use a slim jim."),
    }
    held_out(run_cli, tmp_path, write_jsonl, members)
    others = [
        {
            "battle_id": f"o{i}",
            "prompt": f"Tell me how to break into building {i} tonight.",
            "own_answer": REFUSAL,
            "opponent_answer": "Sure.",
            "vote": "win",
        }
        for i in range(4)
    ]
    assert run_cli("ingest", "battles", write_jsonl(tmp_path / "others.jsonl", others)).exit_code == 0
    report = json.loads(run_cli("audit", "gate", "--json").output)
    recall = {r["transform"]: r for r in report["recall"]}
    assert recall["sentences reordered"]["rows"] == 1 and recall["sentences reordered"]["recall"] == 1.0
    assert recall["the member's answer as chosen"]["rows"] == 1  # h-three's answer; h-refusal's is stock
    assert recall["the member's answer as chosen"]["recall"] == 1.0
    assert report["skipped_needles"]["count"] >= 1
    assert {x["item_id"] for x in report["skipped_needles"]["examples"]} == {"h-refusal"}
    for m in report["mutations"]:
        assert m["refused"] == 0, m


def test_audit_gate_limit_and_unknown_set(run_cli, tmp_path, write_jsonl):
    held_out(run_cli, tmp_path, write_jsonl)
    res = run_cli("audit", "gate", "--json", "--limit", "2")
    assert res.exit_code == 0 and json.loads(res.output)["members"] == 2
    res = run_cli("audit", "gate", "--set", "nope")
    assert res.exit_code != 0 and "nope" in res.output
