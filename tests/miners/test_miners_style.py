"""Style miner and the patterns it uses: hedging tails and final-answer lines."""

from __future__ import annotations

import pytest

from miners.patterns import (
    fix_final_answer_line,
    gsm8k_solution_in_answer_style,
    math_solution_in_answer_style,
    strip_hedging_tail,
)
from miners.style import mine_style
from miners.verify import extract_answer
from pairstore.holdout.sets import add_members
from pairstore.ingest.generations import ingest_generations
from pairstore.keys import match_key, match_text
from pairstore.tables.pairs import Origin, Pair, add_pairs

ASK = "What is 3*3? End with a line 'Final answer: X'."


@pytest.mark.parametrize(
    "text, stripped, tail",
    [
        (
            "Work.\nFinal answer: 72\nI hope it is correct.",
            "Work.\nFinal answer: 72",
            "I hope it is correct.",
        ),
        ("Paris. I hope this helps!", "Paris.", "I hope this helps!"),
        (
            "4. Let me know if you have any other questions. Good luck!",
            "4.",
            "Let me know if you have any other questions. Good luck!",
        ),
        ("Done.\n\nHope this helps :)", "Done.", "Hope this helps :)"),
        (
            "Sure. Feel free to ask if anything is unclear.",
            "Sure.",
            "Feel free to ask if anything is unclear.",
        ),
        ("I hope this helps!", "I hope this helps!", None),  # nothing would be left
        ("I hope it is correct that 2+2=4, and it is.", "I hope it is correct that 2+2=4, and it is.", None),
        ("No hedge here.", "No hedge here.", None),
    ],
)
def test_strip_hedging_tail(text, stripped, tail):
    assert strip_hedging_tail(text) == (stripped, tail)


@pytest.mark.parametrize(
    "text, fixed, rule",
    [
        ("Steps.\n**Final Answer:** 72", "Steps.\nFinal answer: 72", "reformatted"),
        (
            "Steps.\nFinal Answer: The final answer is $\\boxed{72}$.",
            "Steps.\nFinal answer: 72",
            "reformatted",
        ),
        ("Steps\nThe final answer is 12.5.", "Steps\nFinal answer: 12.5", "reformatted"),
        ("x\n#### 1,000", "x\nFinal answer: 1,000", "reformatted"),
        ("final answer - 7", "Final answer: 7", "reformatted"),
        (
            "So we get \\boxed{\\frac{1}{2}}.",
            "So we get \\boxed{\\frac{1}{2}}.\n\nFinal answer: \\frac{1}{2}",
            "added",
        ),
        ("3*3 = 9, so the answer is 9.", "3*3 = 9, so the answer is 9.\n\nFinal answer: 9", "added"),
    ],
)
def test_fix_final_answer_line(text, fixed, rule):
    assert fix_final_answer_line(text, lambda t: extract_answer(t, "math")) == (
        fixed,
        f"final-answer line {rule}",
    )


def test_fix_final_answer_line_leaves_good_and_unreadable_alone():
    ex = lambda t: extract_answer(t, "math")  # noqa: E731
    assert fix_final_answer_line("Steps.\nFinal answer: 9", ex) is None
    assert fix_final_answer_line("It is nine, I think.", ex) is None


def test_reference_solutions_in_answer_style():
    gsm = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nAltogether 48+24 = <<48+24=72>>72 clips.\n#### 72"
    assert gsm8k_solution_in_answer_style(gsm) == (
        "Natalia sold 48/2 = 24 clips in May.\nAltogether 48+24 = 72 clips.\nFinal answer: 72"
    )
    assert math_solution_in_answer_style("So $x = \\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}") == (
        "So $x = \\boxed{\\frac{1}{2}}$.\n\nFinal answer: \\frac{1}{2}"
    )


def seed_pairs(store):
    pairs = [
        Pair(
            "Capital of France?",
            "Paris is the capital.\nI hope this helps!",
            "Lyon.",
            "battle",
            origins=[Origin("battle", "b1", "vote=win → own chosen")],
        ),
        Pair(
            ASK,
            "3*3 = 9.\n**Final Answer:** 9",
            "3*3 = 6.",
            "battle",
            origins=[Origin("battle", "b2", "vote=win → own chosen")],
        ),
        Pair(
            "Say hi.", "Hi!", "Go away.", "battle", origins=[Origin("battle", "b3", "vote=win → own chosen")]
        ),
        Pair(
            ASK,
            "It is nine.",
            "It is six.",
            "battle",
            origins=[Origin("battle", "b4", "vote=loss → opponent chosen")],
        ),
        Pair(
            "Explain.",
            "An explanation. I hope it is correct.",
            None,
            "compliance_sft",
            origins=[Origin("import", "c1", "handcrafted compliance NLL row")],
        ),
    ]
    res = add_pairs(store, pairs, miner="test", miner_version="0")
    return dict(zip(["tail", "line", "clean", "missing", "sft"], res.pair_ids))


def test_style_from_pairs_exact_pairs_rules_drops_and_idempotence(store):
    ids = seed_pairs(store)
    res = mine_style(store, from_pairs=True)
    assert (res.miner, res.version, res.kept) == ("style", "1", 3)
    assert dict(res.dropped) == {"no style fault": 1, "final answer missing": 1}
    got = {
        r["origin_id"]: r
        for r in store.rows("""
        SELECT o.origin_id, o.origin_kind, o.rule, p.prompt, p.chosen, p.rejected, p.source, p.miner
        FROM pair_origins o JOIN pairs p USING (pair_id) WHERE p.source = 'style'""")
    }
    assert sorted(got) == sorted([ids["tail"], ids["line"], ids["sft"]])
    tail = got[ids["tail"]]
    assert (tail["chosen"], tail["rejected"], tail["origin_kind"], tail["miner"]) == (
        "Paris is the capital.",
        "Paris is the capital.\nI hope this helps!",
        "pair",
        "style",
    )
    assert tail["rule"] == (
        "hedging tail removed: 'I hope this helps!' → fixed chosen preferred to the original"
    )
    line = got[ids["line"]]
    assert (line["chosen"], line["rejected"]) == (
        "3*3 = 9.\nFinal answer: 9",
        "3*3 = 9.\n**Final Answer:** 9",
    )
    assert line["rule"] == "final-answer line reformatted → fixed chosen preferred to the original"
    assert [dict(m) for m in line["prompt"]] == [{"role": "user", "content": ASK}]
    again = mine_style(store, from_pairs=True)
    assert again.kept == 0 and again.dropped["duplicate"] == 3
    only_sft = mine_style(store, from_pairs=True, source="compliance_sft")
    assert only_sft.stats["pairs"] == 1 and only_sft.dropped["duplicate"] == 1


def add_problem(store, pid, question, gold, dataset="gsm8k", solution="..."):
    store.con.execute(
        "INSERT INTO problems (problem_id, dataset, split, question, solution, gold, match_key) "
        "VALUES (?, ?, 'train', ?, ?, ?, ?)",
        [pid, dataset, question, solution, gold, match_key(question)],
    )


def test_style_from_generations_only_fixes_good_answers(store, tmp_path, write_jsonl):
    add_problem(store, "p1", "Tom has 3 apples and buys 4. How many? End with 'Final answer: X'.", "7")
    loop = "apples and more apples " * 150
    ingest_generations(
        store,
        write_jsonl(
            tmp_path / "g.jsonl",
            [
                {
                    "item_kind": "problem",
                    "item_id": "p1",
                    "sample_index": 0,
                    "output": "3+4 = 7.\nFinal answer: 7\nI hope it is correct.",
                },  # tail -> pair
                {
                    "item_kind": "problem",
                    "item_id": "p1",
                    "sample_index": 1,
                    "output": "3+4 = 8.\nFinal answer: 8\nI hope it is correct.",
                },  # wrong -> dropped
                {
                    "item_kind": "problem",
                    "item_id": "p1",
                    "sample_index": 2,
                    "output": "3+4 = 7.\nFinal answer: 7",
                },  # clean
                {
                    "item_kind": "problem",
                    "item_id": "p1",
                    "sample_index": 3,
                    "output": loop + "\nFinal answer: 7\nI hope this helps!",
                },  # looped -> dropped
                {
                    "item_kind": "problem",
                    "item_id": "p1",
                    "sample_index": 4,
                    "output": "3+4 = 7, so the answer is 7.",
                },  # line added
                {"item_kind": "prompt", "prompt": "Tell me a joke.", "output": "A joke. Hope this helps!"},
                {"item_kind": "prompt", "prompt": "A held-out prompt", "output": "Reply. I hope this helps!"},
            ],
        ),
        model="m1",
    )
    add_members(
        store,
        "h",
        [
            {
                "item_id": "x",
                "item_kind": "prompt",
                "match_key": match_key("A held-out prompt"),
                "match_text": match_text("A held-out prompt"),
                "task_key": None,
            }
        ],
    )
    res = mine_style(store, model="m1")
    assert res.kept == 3
    assert dict(res.dropped) == {"wrong answer": 1, "no style fault": 1, "looped": 1, "holdout": 1}
    got = sorted((r["chosen"], r["rejected"]) for r in store.rows("SELECT chosen, rejected FROM pairs"))
    assert got == sorted(
        [
            ("3+4 = 7.\nFinal answer: 7", "3+4 = 7.\nFinal answer: 7\nI hope it is correct."),
            ("3+4 = 7, so the answer is 7.\n\nFinal answer: 7", "3+4 = 7, so the answer is 7."),
            ("A joke.", "A joke. Hope this helps!"),
        ]
    )
    assert mine_style(store, model="m1").kept == 0
    assert mine_style(store, model="nobody").stats["generations"] == 0


def test_cli_mine_style(run_cli, store):
    seed_pairs(store)
    store.close()
    r = run_cli("mine", "style", "--from-pairs")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "style v1: kept 3 new pairs (3 produced, 3 new origins)"
    assert "dropped: final answer missing=1, no style fault=1" in r.output
    r = run_cli("mine", "style", "--source", "battle")
    assert r.exit_code == 2 and "--from-pairs" in r.output
