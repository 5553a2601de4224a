"""Mixture hashes (one changed byte), lengths (a truncated pair), evals ingest,
compare (McNemar, sign test)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import binomtest

from audits.compare import (
    binom_two_sided_half,
    compare,
    mcnemar_exact,
    sign_test,
    wilson_interval,
)
from audits.lengths import Counter, audit_lengths, measure
from audits.loops import scan
from audits.mixtures import audit_mixtures, check_mixtures
from pairstore.errors import BadInput, GateRefused
from pairstore.holdout.sets import add_members
from pairstore.ingest.evals import ingest_evals
from pairstore.keys import match_key, match_text, sha256_file
from pairstore.tables.pairs import Origin, Pair, add_pairs

MSG = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))


def write_export(path, rows):
    tbl = pa.Table.from_pylist(
        [
            {
                "prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": p}],
                "chosen": [{"role": "assistant", "content": c}],
                "rejected": [{"role": "assistant", "content": r}],
                "pair_id": f"p{i}",
                "source": "battle",
                "family": None,
            }
            for i, (p, c, r) in enumerate(rows)
        ],
        schema=pa.schema(
            [
                ("prompt", MSG),
                ("chosen", MSG),
                ("rejected", MSG),
                ("pair_id", pa.string()),
                ("source", pa.string()),
                ("family", pa.string()),
            ]
        ),
    )
    pq.write_table(tbl, path)
    return str(path)


def add_round(store, name, kind="dpo", parents=(), max_length=2048, alpha=None):
    recipe = {"name": name, "kind": kind, "parents": list(parents)}
    if kind == "dpo":
        recipe["train"] = {"max_length": max_length}
    store.con.execute(
        "INSERT INTO rounds (name, kind, parents, alpha, recipe, recipe_toml, recipe_sha256) "
        "VALUES (?, ?, ?, ?, ?, '', 'x')",
        [name, kind, list(parents), alpha, json.dumps(recipe)],
    )


def register_export(store, export_id, round_name, path, kind="export"):
    store.con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
        "VALUES (?, ?, ?, ?, ?, 1, 'c')",
        [export_id, round_name, kind, path, sha256_file(path)],
    )


# -- mixtures --------------------------------------------------------------------


def test_one_changed_byte_refuses(store, tmp_path, run_cli):
    a = write_export(tmp_path / "m11a.parquet", [("q", "c", "r")])
    b = write_export(tmp_path / "m6a.parquet", [("q2", "c", "r")])
    (tmp_path / "m11a.training_evidence.json").write_text(json.dumps({"parquet_sha256": sha256_file(a)}))
    add_round(store, "m11a")
    add_round(store, "m6a")
    register_export(store, "e1", "m11a", a)
    register_export(store, "e2", "m6a", b, kind="attached")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "model-00001-of-00001.safetensors").write_bytes(b"weights" * 100)
    store.con.execute(
        "INSERT INTO checkpoints (name, kind, parents, path, evidence) VALUES (?, 'merge', ['so7a'], ?, ?)",
        [
            "m11a",
            str(bundle),
            json.dumps(
                {
                    "shard_sha256": {
                        "model-00001-of-00001.safetensors": sha256_file(
                            bundle / "model-00001-of-00001.safetensors"
                        )
                    }
                }
            ),
        ],
    )
    checks = audit_mixtures(store)
    # every hash, and the round's latest export through today's holdout gate
    assert [c.status for c in checks] == ["ok"] * 5
    assert {c.what for c in checks} == {
        "export",
        "attached",
        "export evidence",
        "shard",
        "holdout gate today",
    }
    store.close()
    assert run_cli("audit", "mixtures").exit_code == 0

    data = bytearray(open(a, "rb").read())
    data[len(data) // 2] ^= 0x01
    open(a, "wb").write(bytes(data))
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 3
    assert a in res.output and "changed" in res.output
    assert "m6a.parquet" not in res.output.split("error:")[-1]

    import os

    os.remove(b)
    res = run_cli("audit", "mixtures", "--json")
    assert res.exit_code == 3
    body = json.loads(res.output[: res.output.rindex("]") + 1])
    assert {c["path"]: c["status"] for c in body}[b] == "missing"


def test_changed_shard_named(store, tmp_path):
    bundle = tmp_path / "sm11a"
    bundle.mkdir()
    shard = bundle / "model.safetensors"
    shard.write_bytes(b"abc")
    store.con.execute(
        "INSERT INTO checkpoints (name, kind, parents, path, evidence) VALUES "
        "('sm11a', 'soup', ['so7a', 'm11a'], ?, ?)",
        [str(bundle), json.dumps({"output": {"shards_sha256": {"model.safetensors": "0" * 64}}})],
    )
    assert [c.status for c in check_mixtures(store)] == ["changed"]
    with pytest.raises(GateRefused, match="sm11a"):
        audit_mixtures(store)


# -- lengths ---------------------------------------------------------------------


def test_truncated_pair_counted(store, tmp_path, run_cli):
    rows = [
        ("short question", "short answer", "short wrong"),
        ("q" * 40, "a" * 40, "loop " * 100),  # rejected runs long: 10 + 125 > 100
        ("q" * 200, "a" * 400, "b" * 8),
    ]  # chosen truncated: 50 + 100 > 100
    path = write_export(tmp_path / "m11a.parquet", rows)
    add_round(store, "m11a", max_length=100)
    register_export(store, "e1", "m11a", path)
    report = audit_lengths(store)
    (r,) = report.rounds
    assert r.rows == 3 and r.max_length == 100
    assert (r.truncated_rows, r.truncated_chosen, r.truncated_rejected) == (2, 1, 1)
    assert r.stats["chosen"]["max"] == 100  # ceil(400 / 4)
    assert r.stats["prompt"]["max"] == 51  # "S\n" + 200 chars: ceil(202 / 4)
    store.close()
    res = run_cli("audit", "lengths", "--json")
    assert res.exit_code == 0
    d = json.loads(res.output)
    assert d["rounds"][0]["truncated_chosen"] == 1 and d["counter"].startswith("estimate")
    res = run_cli("audit", "lengths")
    assert "2 (66.7%)" in res.output and "1 (33.3%)" in res.output


def test_lengths_with_a_counter_and_sft_rows():
    class Words:
        def __call__(self, texts, add_special_tokens=False):
            return {"input_ids": [t.split() for t in texts]}

    r = measure("r", "x", ["a b", "a b c"], ["c d e", "x"], ["f", None], 4, Counter("words", Words()))
    assert r.truncated_chosen == 1 and r.truncated_rejected == 0 and r.stats["rejected"]["max"] == 1


# -- evals ingest ----------------------------------------------------------------


def test_ingest_simple_jsonl(store, tmp_path, run_cli, write_jsonl):
    path = write_jsonl(
        tmp_path / "v6.jsonl",
        [
            {"item_id": "t1", "correct": True, "extracted_answer": "4", "gold": "4", "output": "2+2 = 4"},
            {"item_id": "t2", "score": 0.0, "output": ""},
            {"item_id": "t3", "score": 1},
        ],
    )
    out = ingest_evals(store, path, model="sm11a", suite="v6", scan=scan)
    assert out.added == 3
    rows = store.rows("SELECT item_id, correct, score, empty, output_len FROM evals ORDER BY item_id")
    assert [(r["item_id"], r["correct"], r["score"], r["empty"]) for r in rows] == [
        ("t1", True, 1.0, False),
        ("t2", False, 0.0, True),
        ("t3", True, 1.0, None),
    ]
    assert (
        ingest_evals(store, path, model="sm11a", suite="v6", scan=scan).added == 0
    )  # re-ingest adds nothing
    changed = write_jsonl(tmp_path / "v6b.jsonl", [{"item_id": "t1", "correct": False}])
    with pytest.raises(BadInput, match="already stored"):
        ingest_evals(store, changed, model="sm11a", suite="v6", scan=scan)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"item_id": "t9"}])
    with pytest.raises(BadInput) as e:
        ingest_evals(store, bad, model="sm11a", suite="v6", scan=scan)
    assert "line 1" in str(e.value) and "correct" in str(e.value)
    store.close()
    res = run_cli("ingest", "evals", path, "--model", "sm11d", "--suite", "v6")
    assert res.exit_code == 0 and "added 3" in res.output


def test_ingest_lm_eval_samples(store, tmp_path, write_jsonl):
    recs = []
    for doc_id, (em_strict, em_flex) in enumerate([(1.0, 1.0), (0.0, 1.0), (0.0, 0.0)]):
        for filt, em in (("strict-match", em_strict), ("flexible-extract", em_flex)):
            recs.append(
                {
                    "doc_id": doc_id,
                    "doc": {"question": f"q{doc_id}"},
                    "target": str(doc_id),
                    "arguments": {},
                    "resps": [[f"reasoning... #### {doc_id}"]],
                    "filtered_resps": [str(doc_id) if em else "[invalid]"],
                    "filter": filt,
                    "metrics": ["exact_match"],
                    "doc_hash": f"dh{doc_id}",
                    "prompt_hash": f"ph{doc_id}",
                    "target_hash": "t",
                    "exact_match": em,
                }
            )
    path = write_jsonl(tmp_path / "samples_gsm8k_2026-01-10T10-00-00.jsonl", recs)
    out = ingest_evals(store, path, model="sm11a", suite="gsm8k", scan=scan, fmt="lm-eval")
    assert out.filter == "strict-match" and out.added == 3
    out = ingest_evals(
        store, path, model="sm11d", suite="gsm8k", scan=scan, fmt="lm-eval", filter_name="flexible-extract"
    )
    got = store.rows(
        "SELECT model, item_id, correct, doc_hash, prompt_hash, extracted_answer FROM evals "
        "ORDER BY model, item_id"
    )
    assert [r["correct"] for r in got] == [True, False, False, True, True, False]
    assert (
        got[0]["doc_hash"] == "dh0" and got[0]["prompt_hash"] == "ph0" and got[0]["extracted_answer"] == "0"
    )
    with pytest.raises(BadInput, match="doc_id"):
        ingest_evals(
            store,
            write_jsonl(tmp_path / "x.jsonl", [{"item_id": 1, "correct": True}]),
            model="m",
            suite="s",
            scan=scan,
            fmt="lm-eval",
        )


# -- compare ---------------------------------------------------------------------


@pytest.mark.parametrize("k,n", [(9, 26), (0, 0), (0, 5), (5, 10), (1, 6), (3, 4), (17, 26), (40, 100)])
def test_binomial_matches_scipy(k, n):
    want = 1.0 if n == 0 else binomtest(k, n, 0.5, alternative="two-sided").pvalue
    assert binom_two_sided_half(k, n) == pytest.approx(want, rel=1e-12, abs=1e-15)


def _exact_two_sided_half(k: int, n: int) -> float:
    """An independent reference: twice the smaller tail in exact fractions, capped at 1."""
    from fractions import Fraction
    from math import comb

    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(k, n - k) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def _wilson_closed_form(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    import math

    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


CASES = [(0, 1), (1, 1), (0, 5), (5, 5), (1, 6), (5, 10), (9, 26), (17, 26), (40, 100), (106, 200), (1, 1000)]


@pytest.mark.parametrize("k,n", CASES)
def test_scipy_statistics_agree_with_exact_and_closed_forms(k, n):
    """The library calls scipy; on this table of cases it agrees with an exact-fraction binomial and the
    closed-form Wilson interval, edges (0 and n successes) included."""
    assert binom_two_sided_half(k, n) == pytest.approx(_exact_two_sided_half(k, n), rel=1e-9, abs=1e-15)
    lo, hi = wilson_interval(k, n)
    want_lo, want_hi = _wilson_closed_form(k, n)
    assert lo == pytest.approx(want_lo, abs=1e-12) and hi == pytest.approx(want_hi, abs=1e-12)
    assert wilson_interval(0, 0) == (0.0, 0.0) and binom_two_sided_half(0, 0) == 1.0


def test_card_figures():
    # MATH flips 17-9 in sm11a's favour: McNemar p = .17 (model card).
    assert round(mcnemar_exact(17, 9), 2) == 0.17
    assert mcnemar_exact(17, 9) == pytest.approx(binomtest(9, 26, 0.5).pvalue)
    # sm11a beat so7a 5-1 with 28 ties: sign test on the 6 decisive battles.
    assert sign_test(5, 1) == pytest.approx(binomtest(5, 6, 0.5).pvalue)
    lo, hi = wilson_interval(106, 200)
    assert lo == pytest.approx(0.4609, abs=1e-3) and hi == pytest.approx(0.5980, abs=1e-3)


def _battle(store, bid, prompt):
    msgs = [{"role": "user", "content": prompt}]
    store.con.execute(
        "INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, "
        "match_key, record_hash) VALUES (?, ?, ['o'], ['p'], 1, 'win', ?, ?)",
        [bid, msgs, match_key(msgs), bid],
    )
    return {
        "item_id": bid,
        "item_kind": "battle",
        "match_key": match_key(msgs),
        "match_text": match_text(msgs),
        "task_key": None,
    }


def test_compare_tallies_and_clean_subset(store, tmp_path, run_cli):
    members = [_battle(store, f"b{i}", f"held out battle number {i} about topic {i * 7}") for i in range(8)]
    add_members(store, "judge8", members)
    # Lineage: base -> m1 (trained on b0 by origin id, b1 in another form) -> sm11a; sm11d soup of the same.
    add_round(store, "base", kind="base")
    add_round(store, "m1", parents=["base"])
    add_round(store, "sm11a", kind="soup", parents=["base", "m1"], alpha=0.5)
    add_round(store, "other", parents=["base"])
    res = add_pairs(
        store,
        [
            Pair(
                prompt="reworded b0",
                chosen="c",
                rejected="r",
                source="battle",
                origins=[Origin("battle", "b0", "x")],
            ),
            Pair(
                prompt=[
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "HELD OUT battle number 1 about topic 7"},
                ],
                chosen="c",
                rejected="r",
                source="attached",
            ),
            Pair(prompt="something else", chosen="c", rejected="r", source="style"),
        ],
        miner="t",
        miner_version="1",
    )
    store.con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
        "VALUES ('e1', 'm1', 'export', 'x', 's', 3, 'c')"
    )
    for i, pid in enumerate(res.pair_ids):
        store.con.execute("INSERT INTO export_rows VALUES ('e1', ?, ?)", [i, pid])
    # Judgments: sm11a vs so7a, seats mixed; b2 judged twice (both seats).
    verdicts = [
        ("b0", "sm11a", "so7a", "a", False, False),
        ("b1", "so7a", "sm11a", "b", False, True),
        ("b2", "sm11a", "so7a", "a", True, False),
        ("b2", "so7a", "sm11a", "tie", False, False),
        ("b3", "sm11a", "so7a", "b", False, False),
        ("b4", "so7a", "sm11a", "tie", False, False),
        ("b5", "sm11a", "so7a", "tie", False, False),
        ("b6", "sm11a", "so7a", "a", False, False),
    ]
    for i, (bid, ma, mb, w, fa, fb) in enumerate(verdicts):
        store.con.execute(
            "INSERT INTO judgments (judgment_id, battle_id, model_a, model_b, winner, heavy_flaw_a, "
            "heavy_flaw_b) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [f"j{i}", bid, ma, mb, w, fa, fb],
        )
    # Evals: sm11a right on 1..6, so7a right on 4..9 of 10 items.
    for m, right in (("sm11a", range(1, 7)), ("so7a", range(4, 10))):
        for i in range(10):
            store.con.execute(
                "INSERT INTO evals (model, suite, item_id, correct, origin) VALUES (?, 'math', ?, ?, 't')",
                [m, f"q{i}", i in right],
            )
    c = compare(store, "sm11a", "so7a", suite="math")
    assert (c.accuracy_a.correct, c.accuracy_b.correct) == (6, 6)
    assert (c.flips.a_only, c.flips.b_only, c.flips.both, c.flips.neither) == (3, 3, 3, 1)
    assert c.flips.mcnemar_p == pytest.approx(binomtest(3, 6, 0.5).pvalue)
    j = c.judge_all
    # b0 A, b1 A (B seat won = sm11a), b2 A (+1 tie 0), b3 B, b4 tie, b5 tie, b6 A -> 4-1-2
    assert (j.battles, j.a_wins, j.b_wins, j.ties) == (7, 4, 1, 2)
    assert j.sign_p == pytest.approx(binomtest(4, 5, 0.5).pvalue)
    assert (j.heavy_flaws_a, j.heavy_flaws_b) == (2, 0)  # b1 (seat b flagged = sm11a), b2
    assert c.trained_by == {"sm11a": ["b0", "b1"], "so7a": []}
    assert c.clean_battles == ["b2", "b3", "b4", "b5", "b6"]
    cl = c.judge_clean
    assert (cl.battles, cl.a_wins, cl.b_wins, cl.ties) == (5, 2, 1, 2)
    store.close()
    res = run_cli("audit", "compare", "sm11a", "so7a", "--suite", "math")
    assert res.exit_code == 0, res.output
    assert "McNemar p = 1" in res.output and "sm11a 4 - so7a 1 - ties 2" in res.output
    res = run_cli("audit", "compare", "sm11a", "so7a", "--json", "--holdout", "judge8")
    assert json.loads(res.output)["judge"]["clean"]["battles"] == 5
    assert run_cli("audit", "compare", "sm11a", "nobody").exit_code == 2


def test_lengths_with_a_bundle_tokenizer(store, tmp_path, run_cli):
    from train.tiny import tiny_tokenizer

    bundle = tmp_path / "tiny"
    tiny_tokenizer().save_pretrained(str(bundle))  # a bundle's tokenizer files, without the weights
    path = write_export(
        tmp_path / "m11a.parquet", [("What is 12 + 30?", "12 + 30 = 42\nFinal answer: 42", "43")]
    )
    add_round(store, "m11a", max_length=4)
    register_export(store, "e1", "m11a", path)
    store.con.execute(
        "INSERT INTO checkpoints (name, kind, parents, path) VALUES ('so7a', 'merge', [], ?)", [str(bundle)]
    )
    store.close()
    res = run_cli("audit", "lengths", "--model", "so7a", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["counter"] == f"tokenizer: {bundle}"
    r = d["rounds"][0]
    assert r["stats"]["chosen"]["max"] > 0 and r["truncated_chosen"] == 1
    assert run_cli("audit", "lengths", "--tokenizer", str(tmp_path / "nope")).exit_code == 2


def test_real_export_files_checked_and_measured(round_r1, tmp_path, run_cli):
    """An export made by pairstore.export.run (pair file + NLL-only file + evidence)
    through mixtures and lengths."""
    from pairstore.export.run import export_round

    store = round_r1
    export_round(store, "r1", tmp_path / "out")
    checks = audit_mixtures(store)
    assert sorted((c.what, Path(c.path).name) for c in checks) == [
        ("export", "r1.parquet"),
        ("export", "r1.sft.parquet"),
        ("export evidence", "r1.training_evidence.json"),
        ("export evidence", "r1.training_evidence.json"),
        ("holdout gate today", "r1.parquet"),
    ]
    report = audit_lengths(store)
    by_file = {Path(r.source).name: r for r in report.rounds}
    assert set(by_file) == {"r1.parquet", "r1.sft.parquet"}
    assert by_file["r1.sft.parquet"].stats["rejected"]["max"] == 0 and by_file["r1.sft.parquet"].rows == 1
    store.close()
    sft = tmp_path / "out" / "r1.sft.parquet"
    sft.write_bytes(sft.read_bytes() + b"\0")
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 3 and "r1.sft.parquet" in res.output
