"""pairstore judge: blind pairwise verdicts on a holdout set, both orders, heavy flaws double; the rule judge
offline, and an OpenAI-protocol judge (the shipped tiny model on a loopback port)."""

from __future__ import annotations

import json

import pytest

from miners.pairwise_judge import PROMPT_HASH, RULE_JUDGE, Verdict, combine, judge_set, parse_verdict
from tests.serve_helpers import TINY_BUNDLE, judged_store, openai_server


def test_parse_verdict_reads_the_asked_form_and_nothing_else():
    assert parse_verdict(
        'Sure. {"winner": "B", "flaws_a": ["fabrication", "made_up"], "flaws_b": []}'
    ) == Verdict("b", ["fabrication"], [])
    assert parse_verdict('{"winner": "tie"}') == Verdict("tie", [], [])
    for text in (
        "A is better",
        '{"winner": "C"}',
        "{not json}",
        "",
        '{"winner": "A", "flaws_a": "fabrication"}',
    ):
        assert parse_verdict(text) is None


def test_combine_reads_both_orders_in_model_terms():
    a_wins, b_wins, tie = Verdict("a", [], []), Verdict("b", [], []), Verdict("tie", [], [])
    # second order shows model_b as A: its "b" is model_a
    assert combine(a_wins, b_wins) == ("a", False)
    assert combine(a_wins, a_wins) == ("tie", False)  # a judge that always picks A decides nothing
    assert combine(tie, b_wins) == ("a", False)
    assert combine(Verdict("a", [], ["degenerate_repetition"]), tie) == ("a", True)
    assert combine(Verdict("b", ["fabrication"], []), Verdict("a", [], [])) == ("b", True)


def test_the_rule_judge_is_the_offline_default_and_a_rerun_adds_nothing(store, tmp_path):
    judged_store(store, tmp_path)
    r = judge_set(store, "judge34", "sm11a", "so7a")
    assert r.judge == RULE_JUDGE and r.items == 6 and r.stored == 12 and r.unknown == 0
    rows = store.rows(
        "SELECT model_a, winner, heavy_flaw_a, heavy_flaw_b, prompt_hash, origin FROM judgments"
    )
    assert {(x["model_a"]) for x in rows} == {"sm11a", "so7a"}  # both orders
    assert all(x["prompt_hash"] is None and x["origin"] == "judge" for x in rows)
    # answers loop where (i + k) % 3 == 0: each model loops on 2 items, never the same one
    assert r.tally["sm11a wins"] == 2 and r.tally["so7a wins"] == 2 and r.tally["ties"] == 2
    assert r.tally["sm11a weighted"] == 4  # every win is over a looping answer: counted double
    again = judge_set(store, "judge34", "sm11a", "so7a")
    assert again.stored == 0 and again.skipped["already present"] == 12


def test_a_scripted_model_judge_is_asked_blind_in_both_orders(store, tmp_path):
    judged_store(store, tmp_path)
    asked = []

    def ask(messages):
        asked.append(messages)
        return '{"winner": "A", "flaws_a": [], "flaws_b": ["broken_placeholder"]}'  # always the first shown

    r = judge_set(store, "judge34", "sm11a", "so7a", ask=ask, judge="always-a")
    assert r.asked == 12 and len(asked) == 12 and r.stored == 12
    assert all("sm11a" not in m["content"] and "so7a" not in m["content"] for msgs in asked for m in msgs)
    assert r.tally["ties"] == 6  # position bias cancels out over the two orders
    hashes = {h for (h,) in store.con.execute("SELECT DISTINCT prompt_hash FROM judgments").fetchall()}
    assert hashes == {PROMPT_HASH}


@pytest.mark.slow
def test_cli_judge_against_an_openai_endpoint_over_the_tiny_model(store, tmp_path, run_cli):
    from train.chat import BundleChat

    judged_store(store, tmp_path, members=2)
    store.close()
    with openai_server(BundleChat("tiny", TINY_BUNDLE, max_new_tokens=16)) as (url, received):
        got = run_cli(
            "judge", "--set", "judge34", "--a", "sm11a", "--b", "so7a", "--judge", f"tiny={url}", "--json"
        )
    assert got.exit_code == 0, got.output
    out = json.loads(got.stdout)
    assert len(received) == 4 and out["asked"] == 4
    # the tiny model does not write the verdict form: every verdict is unknown, none stored
    assert out["unknown"] + out["stored"] == 4
    assert all(b["messages"][0]["role"] == "system" for b in received)
    bad = run_cli("judge", "--set", "judge34", "--a", "sm11a", "--b", "sm11a")
    assert bad.exit_code == 2
    missing = run_cli("judge", "--set", "nope", "--a", "sm11a", "--b", "so7a")
    assert missing.exit_code == 2 and "no holdout set" in missing.output
