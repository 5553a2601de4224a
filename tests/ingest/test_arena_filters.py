"""A typo is not success: an ingest filter that matches nothing exits 2 naming what the file holds, with a
"did you mean". The Arena's forms keep who voted and the side shown, so position bias fills for public
Arena data, and one battle brought by both Arena forms counts once in the ratings."""

from __future__ import annotations

import csv
import json

import pytest

from audits.loops import scan
from audits.ratings import audit_ratings, read_games
from pairstore.errors import BadInput
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.evals import ingest_evals


def arena_row(qid, a, b, winner, user, ans_a, ans_b, judge="arena_user_1"):
    return {
        "question_id": qid, "model_a": a, "model_b": b, "winner": winner, "judge": judge,
        "conversation_a": [{"role": "user", "content": user}, {"role": "assistant", "content": ans_a}],
        "conversation_b": [{"role": "user", "content": user}, {"role": "assistant", "content": ans_b}],
        "turn": 1, "anony": True, "language": "English", "tstamp": 1682351591.1,
        "openai_moderation": {"flagged": False}, "toxic_chat_tag": {},
    }  # fmt: skip


ROWS = [
    arena_row("q1", "vicuna-13b", "koala-13b", "model_a", "Tell me a joke.", "Why did...", "Knock knock."),
    arena_row("q2", "koala-13b", "vicuna-13b", "model_a", "Name a color.", "Blue.", "Red."),
    arena_row("q3", "alpaca-13b", "vicuna-13b", "tie", "Say hi.", "hi", "hello", judge="arena_user_2"),
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_an_own_model_typo_exits_2_naming_the_models_seen(store, tmp_path, run_cli):
    path = write_jsonl(tmp_path / "arena.jsonl", ROWS)
    with pytest.raises(BadInput) as e:
        ingest_battles(store, path, fmt="arena", own_models=["vicuna13b"])
    message = str(e.value)
    assert "--own-model 'vicuna13b' plays in no battle" in message
    assert "vicuna-13b (3)" in message and "koala-13b (2)" in message
    assert "did you mean 'vicuna-13b'?" in message
    assert store.scalar("SELECT count(*) FROM battles") == 0
    store.close()
    res = run_cli("ingest", "battles", path, "--format", "arena", "--own-model", "vicuna13b")
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
    res = run_cli("ingest", "battles", path, "--format", "arena", "--own-model", "gpt-4")  # no close name
    assert res.exit_code == 2 and "plays in no battle" in res.output


def test_an_own_model_absent_with_others_as_pairs_is_a_pairs_only_import(store, tmp_path):
    path = write_jsonl(tmp_path / "arena.jsonl", ROWS)
    got = ingest_battles(store, path, fmt="arena", own_models=["my-model"], others="pairs")
    assert got.added == 0 and got.pairs == 2


def test_an_lm_eval_filter_or_metric_typo_names_what_the_log_holds(store, tmp_path):
    recs = [{"doc_id": i, "doc": {"question": f"Q{i}?"}, "target": "1", "resps": [["1"]],
             "filtered_resps": ["1"], "filter": f, "exact_match": 1.0}
            for i in range(2) for f in ("strict-match", "flexible-extract")]  # fmt: skip
    path = write_jsonl(tmp_path / "samples.jsonl", recs)
    seen = r"\(filters seen: flexible-extract \(2\), strict-match \(2\)\); did you mean 'strict-match'\?"
    with pytest.raises(BadInput, match=r"no records for filter 'strict_match' " + seen):
        ingest_evals(store, path, model="m", suite="s", scan=scan, fmt="lm-eval", filter_name="strict_match")
    with pytest.raises(BadInput, match=r"unknown metric 'exact-match' .*did you mean 'exact_match'\?"):
        ingest_evals(store, path, model="m", suite="s", scan=scan, fmt="lm-eval", metric="exact-match")
    with pytest.raises(BadInput, match=r"no metric field 'acc' \(metrics seen: exact_match \(4\)\)"):
        ingest_evals(store, path, model="m", suite="s", scan=scan, fmt="lm-eval", metric="acc")
    assert store.scalar("SELECT count(*) FROM evals") == 0


def test_arena_battles_keep_the_voter_and_the_side_shown(store, tmp_path):
    ingest_battles(store, write_jsonl(tmp_path / "arena.jsonl", ROWS), fmt="arena", own_models=["vicuna-13b"])
    got = store.rows("SELECT battle_id, annotator, own_position, origin FROM battles ORDER BY battle_id")
    assert got == [
        {"battle_id": "q1", "annotator": "arena_user_1", "own_position": "a", "origin": "arena"},
        {"battle_id": "q2", "annotator": "arena_user_1", "own_position": "b", "origin": "arena"},
        {"battle_id": "q3", "annotator": "arena_user_2", "own_position": "b", "origin": "arena"},
    ]
    bias = audit_ratings(store, bootstrap=10).position["battles"]
    assert bias["votes"] == 3 and bias["a_wins"] == 2  # model_a won both decisive votes, as shown


def test_one_battle_from_both_arena_forms_counts_once_in_the_ratings(store, tmp_path):
    ingest_battles(store, write_jsonl(tmp_path / "arena.jsonl", ROWS), fmt="arena", own_models=["vicuna-13b"])
    path = tmp_path / "train.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["id", "model_a", "model_b", "prompt", "response_a", "response_b",
                                          "winner_model_a", "winner_model_b", "winner_tie"])  # fmt: skip
        w.writeheader()
        for i, r in enumerate(ROWS[:2]):  # two of the same battles, as the 55k file writes them
            a, b = r["conversation_a"], r["conversation_b"]
            w.writerow({"id": 1000 + i, "model_a": r["model_a"], "model_b": r["model_b"],
                        "prompt": json.dumps([a[0]["content"]]), "response_a": json.dumps([a[1]["content"]]),
                        "response_b": json.dumps([b[1]["content"]]), "winner_model_a": 1, "winner_model_b": 0,
                        "winner_tie": 0})  # fmt: skip
    ingest_battles(store, path, fmt="arena55k", own_models=["vicuna-13b"])
    assert store.scalar("SELECT count(*) FROM battles") == 5  # both forms stored, each under its own id
    assert len(read_games(store)) == 3  # each battle one game
