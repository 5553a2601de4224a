"""Self-repair (GSM8K/MATH) and loop-fix miners: exact pairs, origins, drops, seeds, idempotence."""

from __future__ import annotations

import pytest

from generators.tasks import generate_tasks, write_tasks
from miners.loopfix import mine_loopfix
from miners.self_repair import mine_self_repair, spread_picks
from pairstore.errors import BadInput
from pairstore.holdout.sets import add_members
from pairstore.ingest.generations import ingest_generations
from pairstore.keys import match_key, match_text

LOOP = "Let me recount the apples again. " * 120  # a phrase repeated 120 times: a catastrophic loop


def add_problem(store, pid, question, gold, solution, dataset="gsm8k"):
    store.con.execute(
        "INSERT INTO problems (problem_id, dataset, split, question, solution, gold, match_key) "
        "VALUES (?, ?, 'train', ?, ?, ?, ?)",
        [pid, dataset, question, solution, gold, match_key(question)],
    )


def add_generations(write_jsonl, store, tmp_path, model, outputs, name="g.jsonl"):
    """outputs: (item_kind, item_id, sample_index, text). Returns {(item_id, sample_index): gen_id}."""
    recs = [
        {"item_kind": k, "item_id": i, "sample_index": s, "output": o, "temperature": 0.8}
        for k, i, s, o in outputs
    ]
    ingest_generations(store, write_jsonl(tmp_path / f"{model}-{name}", recs), model=model)
    return {
        (r["item_id"], r["sample_index"]): r["gen_id"]
        for r in store.rows("SELECT item_id, sample_index, gen_id FROM generations WHERE model = ?", [model])
    }


GSM_SOLUTION = "He buys 2*5 = <<2*5=10>>10 pens.\nThen 10+2 = <<10+2=12>>12.\n#### 12"


@pytest.fixture
def repair_store(store, tmp_path, write_jsonl):
    add_problem(
        store, "p1", "Tom has 3 apples and buys 4 more. How many apples?", "7", "3+4 = <<3+4=7>>7\n#### 7"
    )
    add_problem(store, "p2", "Sam buys 2 packs of 5 pens and 2 more. How many pens?", "12", GSM_SOLUTION)
    add_problem(store, "p3", "What is 1+1?", "2", "1+1 = 2\n#### 2")
    add_problem(store, "p4", "A held-out question about 9 cats?", "9", "#### 9")
    add_problem(
        store, "q1", "Compute $\\frac{2}{4}$.", "\\frac{1}{2}", "It is $\\boxed{\\frac{1}{2}}$.", "math"
    )
    add_problem(store, "q2", "What is $2^{10}$?", "1024", "$2^{10} = \\boxed{1024}$.", "math")
    gens = add_generations(
        write_jsonl,
        store,
        tmp_path,
        "m1",
        [
            ("problem", "p1", 0, "3 + 4 = 7.\nFinal answer: 7"),
            ("problem", "p1", 1, "3 + 4 = 8.\nFinal answer: 8"),
            ("problem", "p1", 2, LOOP + "\nFinal answer: 7"),  # correct but looped: never chosen
            ("problem", "p1", 3, "3 + 4 = 8.\nFinal answer: 8"),  # same text as sample 1
            ("problem", "p1", 4, "3 - 4 = -1.\nFinal answer: -1"),
            ("problem", "p2", 0, "2*5 = 10.\nFinal answer: 10"),
            ("problem", "p2", 1, "2*5+2 = 11.\nFinal answer: 11"),
            ("problem", "p3", 0, "Final answer: 2"),
            ("problem", "p3", 1, "1+1 is two, so the answer is 2."),
            ("problem", "p4", 0, "Final answer: 8"),
            ("problem", "q1", 0, "Dividing gives 0.4.\nFinal answer: 0.4"),
            ("problem", "q2", 0, "So $2^{10} = \\boxed{1024}$.\nFinal answer: 1024"),
            ("problem", "q2", 1, "Final answer: 1000"),
        ],
    )
    add_generations(write_jsonl, store, tmp_path, "other", [("problem", "p1", 0, "Final answer: 5")])
    add_members(
        store,
        "judge",
        [
            {
                "item_id": "p4",
                "item_kind": "problem",
                "task_key": None,
                "match_key": match_key("A held-out question about 9 cats?"),
                "match_text": match_text("A held-out question about 9 cats?"),
            }
        ],
    )
    return gens


def pair_rows(store, source=None):
    return store.rows(
        """SELECT pair_id, prompt, chosen, rejected, source, family, miner, miner_version FROM pairs
                         WHERE (? IS NULL OR source = ?) ORDER BY chosen, rejected""",
        [source, source],
    )


def origins_of(store, pair_id):
    return sorted(
        (r["origin_kind"], r["origin_id"], r["rule"])
        for r in store.rows("SELECT * FROM pair_origins WHERE pair_id = ?", [pair_id])
    )


def test_self_repair_gsm8k_exact_pairs_origins_and_drops(store, repair_store):
    gens = repair_store
    res = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=2, seed=0)
    assert (res.miner, res.version, res.kept) == ("self_repair", "1", 4)
    assert dict(res.dropped) == {"holdout": 1, "no wrong answer": 1}
    assert dict(res.by_source) == {"self_repair": 2, "gold_repair": 2}
    assert res.stats["problems"] == 4 and res.stats["generations"] == 9
    assert (res.stats["correct"], res.stats["wrong"], res.stats["correct but flagged"]) == (4, 5, 1)
    rows = pair_rows(store)
    assert [(r["source"], r["chosen"], r["rejected"]) for r in rows] == [
        ("self_repair", "3 + 4 = 7.\nFinal answer: 7", "3 + 4 = 8.\nFinal answer: 8"),
        ("self_repair", "3 + 4 = 7.\nFinal answer: 7", "3 - 4 = -1.\nFinal answer: -1"),
        (
            "gold_repair",
            "He buys 2*5 = 10 pens.\nThen 10+2 = 12.\nFinal answer: 12",
            "2*5 = 10.\nFinal answer: 10",
        ),
        (
            "gold_repair",
            "He buys 2*5 = 10 pens.\nThen 10+2 = 12.\nFinal answer: 12",
            "2*5+2 = 11.\nFinal answer: 11",
        ),
    ]
    assert all(r["family"] == "gsm8k" and r["miner"] == "self_repair" for r in rows)
    assert [dict(m) for m in rows[0]["prompt"]] == [
        {"role": "user", "content": "Tom has 3 apples and buys 4 more. How many apples?"}
    ]
    # the duplicate wrong text: both generations are origins of the one pair
    assert origins_of(store, rows[0]["pair_id"]) == sorted(
        [
            ("problem", "p1", "self_repair: verified-correct sample chosen, wrong sample rejected"),
            ("generation", gens[("p1", 0)], "verified correct, not looped → chosen"),
            ("generation", gens[("p1", 1)], "answer '8' ≠ gold '7' → rejected"),
            ("generation", gens[("p1", 3)], "answer '8' ≠ gold '7' → rejected"),
        ]
    )
    assert origins_of(store, rows[2]["pair_id"]) == sorted(
        [
            (
                "problem",
                "p2",
                "gold_repair: no usable correct sample; reference solution in answer style chosen",
            ),
            ("generation", gens[("p2", 0)], "answer '10' ≠ gold '12' → rejected"),
        ]
    )
    # the looped correct sample is in no pair
    looped = gens[("p1", 2)]
    assert not store.rows("SELECT * FROM pair_origins WHERE origin_id = ?", [looped])
    # verdicts and loop flags written back
    v = {
        r["gen_id"]: r
        for r in store.rows("SELECT gen_id, verdict, extracted_answer, loop_flagged FROM generations")
    }
    assert (v[looped]["verdict"], v[looped]["loop_flagged"]) == ("correct", True)
    assert (v[gens[("p1", 1)]]["verdict"], v[gens[("p1", 1)]]["extracted_answer"]) == ("wrong", "8")
    assert v[gens[("p4", 0)]]["verdict"] is None  # held out: never looked at


def test_self_repair_is_idempotent_and_seeded(store, repair_store):
    first = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=1, seed=0)
    again = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=1, seed=0)
    assert again.kept == 0 and again.new_origins == 0 and again.ids_digest == first.ids_digest
    assert again.produced == first.produced == first.kept > 0
    assert again.dropped["duplicate"] == first.kept
    picks = set()
    for seed in range(12):
        res = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=1, seed=seed)
        picks.add(res.ids_digest)
        rerun = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=1, seed=seed)
        assert rerun.ids_digest == res.ids_digest
    assert len(picks) > 1  # the seed changes which wrong answer is paired


def test_self_repair_math_and_options(store, repair_store):
    res = mine_self_repair(store, model="m1", dataset="math", pairs_per_problem=3)
    assert res.kept == 2 and dict(res.by_source) == {"gold_repair": 1, "self_repair": 1}
    rows = {r["source"]: r for r in pair_rows(store)}
    assert rows["gold_repair"]["chosen"] == "It is $\\boxed{\\frac{1}{2}}$.\n\nFinal answer: \\frac{1}{2}"
    assert rows["gold_repair"]["family"] == "math"
    assert rows["self_repair"]["rejected"] == "Final answer: 1000"
    res = mine_self_repair(store, model="m1", dataset="gsm8k", gold_repair=False)
    assert res.dropped["no correct answer"] == 1 and "gold_repair" not in res.by_source
    with pytest.raises(BadInput, match="dataset"):
        mine_self_repair(store, model="m1", dataset="aime")
    with pytest.raises(BadInput, match="pairs per problem"):
        mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=0)


def test_worker_processes_give_the_same_result(store, repair_store):
    serial = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=2, workers=1)
    flags = store.rows("SELECT gen_id, verdict, loop_flagged, max_repeat FROM generations ORDER BY gen_id")
    store.con.execute("DELETE FROM pair_origins; DELETE FROM pairs; UPDATE generations SET verdict = NULL")
    parallel = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=2, workers=2)
    assert parallel.ids_digest == serial.ids_digest and parallel.kept == serial.kept
    assert parallel.stats == serial.stats and parallel.dropped == serial.dropped
    assert (
        store.rows("SELECT gen_id, verdict, loop_flagged, max_repeat FROM generations ORDER BY gen_id")
        == flags
    )


def test_spread_picks_prefers_distinct_answers():
    assert spread_picks(1, 3, 2) == [(0, 0), (0, 1)]
    assert spread_picks(2, 2, 4) == [(0, 0), (1, 1), (1, 0), (0, 1)]
    assert spread_picks(2, 1, 5) == [(0, 0), (1, 0)]
    assert len(set(spread_picks(3, 4, 12))) == 12


def test_cli_mine_self_repair(run_cli, store, repair_store):
    store.close()
    r = run_cli("mine", "self-repair", "--model", "m1", "--dataset", "gsm8k", "--pairs-per-problem", "2")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[:3] == [
        "self_repair v1: kept 4 new pairs (4 produced, 11 new origins)",
        "by source: gold_repair=2, self_repair=2",
        "dropped: holdout=1, no wrong answer=1",
    ]
    r = run_cli("mine", "self-repair", "--model", "m1", "--dataset", "aime")
    assert r.exit_code == 2


@pytest.fixture
def loop_store(store, tmp_path, write_jsonl):
    tasks = generate_tasks(5, 3, families=["letter_count"])
    write_tasks(store, tasks)
    t1, t2, t3 = tasks
    wrong = str(int(t1.gold) + 1)
    gens = add_generations(
        write_jsonl,
        store,
        tmp_path,
        "m1",
        [
            ("task", t1.task_id, 0, f"Counting.\nFinal answer: {t1.gold}"),  # correct: dropped
            ("task", t1.task_id, 1, f"Counting.\nFinal answer: {wrong}"),  # wrong
            ("task", t1.task_id, 2, LOOP + f"\nFinal answer: {t1.gold}"),  # looped
            ("task", t1.task_id, 3, LOOP + f"\nFinal answer: {wrong}"),  # wrong and looped
            ("task", t2.task_id, 0, "I cannot count."),  # wrong (no answer)
            ("task", t3.task_id, 0, f"Final answer: {int(t3.gold) + 5}"),  # held out
        ],
    )
    add_members(
        store,
        "loops",
        [
            {
                "item_id": "elsewhere",
                "item_kind": "task",
                "task_key": t3.task_key,
                "match_key": match_key("not the same text"),
                "match_text": "not the same text",
            }
        ],
    )
    return tasks, gens, wrong


def test_loopfix_exact_pairs_rules_and_counts(store, loop_store):
    (t1, t2, t3), gens, wrong = loop_store
    res = mine_loopfix(store, model="m1")
    assert (res.miner, res.version, res.kept) == ("loopfix", "1", 4)
    assert dict(res.dropped) == {"correct": 1, "holdout": 1}
    assert (res.stats["wrong"], res.stats["looped"], res.stats["generations"]) == (3, 2, 6)
    rows = store.rows("""SELECT o.origin_id, o.rule, p.chosen, p.rejected, p.source, \
p.family, p.task_key, p.pair_id
                         FROM pairs p JOIN pair_origins o USING (pair_id) \
WHERE o.origin_kind = 'generation'""")
    got = {r["origin_id"]: r for r in rows}
    assert set(got) == {
        gens[(t1.task_id, 1)],
        gens[(t1.task_id, 2)],
        gens[(t1.task_id, 3)],
        gens[(t2.task_id, 0)],
    }
    w = got[gens[(t1.task_id, 1)]]
    assert (w["chosen"], w["rejected"], w["source"], w["family"], w["task_key"]) == (
        t1.chosen,
        f"Counting.\nFinal answer: {wrong}",
        "loopfix",
        "letter_count",
        t1.task_key,
    )
    assert w["rule"] == f"wrong: answer '{wrong}' ≠ gold '{t1.gold}' → task's canonical answer chosen"
    looped = got[gens[(t1.task_id, 2)]]["rule"]
    assert looped.startswith("looped: max_repeat ") and looped.endswith("→ task's canonical answer chosen")
    both = got[gens[(t1.task_id, 3)]]["rule"]
    assert both.startswith(f"wrong: answer '{wrong}' ≠ gold '{t1.gold}'; looped: max_repeat ")
    assert origins_of(store, w["pair_id"])[-1] == ("task", t1.task_id, "canonical chosen answer")
    assert not store.rows("SELECT * FROM pairs WHERE task_key = ?", [t3.task_key])
    again = mine_loopfix(store, model="m1")
    assert again.kept == 0 and again.new_origins == 0 and again.dropped["duplicate"] == 4


def test_loopfix_per_task_limit_is_seeded(store, loop_store):
    (t1, _, _), gens, _ = loop_store
    res = mine_loopfix(store, model="m1", per_task=1, seed=1)
    assert res.kept == 2 and res.dropped["per-task limit"] == 2
    same = mine_loopfix(store, model="m1", per_task=1, seed=1)
    assert same.ids_digest == res.ids_digest and same.produced == 2 and same.kept == 0


def test_cli_mine_loopfix(run_cli, store, loop_store):
    store.close()
    r = run_cli("mine", "loopfix", "--model", "m1")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "loopfix v1: kept 4 new pairs (4 produced, 8 new origins)"
    assert "dropped: correct=1, holdout=1" in r.output and "looped=2" in r.output and "wrong=3" in r.output


def _mined_state(store):
    """Everything a miner writes: pairs with their origins, and the verdicts on generations."""
    return (
        store.rows(
            "SELECT pair_id, prompt, chosen, rejected, source, family, task_key FROM pairs ORDER BY 1"
        ),
        store.rows("SELECT pair_id, origin_kind, origin_id, rule FROM pair_origins ORDER BY 1, 2, 3"),
        store.rows(
            "SELECT gen_id, extracted_answer, verdict, verdict_reason, loop_flagged, max_repeat, n_tokens "
            "FROM generations ORDER BY gen_id"
        ),
    )


@pytest.mark.parametrize("batch_rows", [1, 2, 3])
def test_mining_a_batch_at_a_time_gives_what_mining_at_once_gives(
    store, repair_store, loop_store, monkeypatch, batch_rows
):
    """The miners stream their generations a batch of whole problems (tasks) at a time: the result and
    what they write are the same whatever the batch size, down to one generation a batch."""
    import miners.batches

    def mine():
        return [
            mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=2),
            mine_self_repair(store, model="m1", dataset="math", pairs_per_problem=2),
            mine_loopfix(store, model="m1", per_task=1, seed=1),
        ]

    def summary(results):
        return [(r.kept, r.ids_digest, dict(r.stats), dict(r.dropped), dict(r.by_source)) for r in results]

    at_once, state = summary(mine()), _mined_state(store)
    store.con.execute(
        "DELETE FROM pair_origins; DELETE FROM pairs; UPDATE generations SET verdict = NULL, "
        "extracted_answer = NULL, verdict_reason = NULL, loop_flagged = NULL, max_repeat = NULL, "
        "n_tokens = NULL"
    )
    monkeypatch.setattr(miners.batches, "BATCH_ROWS", batch_rows)
    assert summary(mine()) == at_once
    assert _mined_state(store) == state


def test_a_mine_that_fails_midway_writes_no_pair_and_a_rerun_finishes_it(store, repair_store, monkeypatch):
    """Each batch's verdicts are committed as it is mined (so memory stays flat); the pairs land in one
    transaction at the end. A failure after the first batch leaves that batch's verdicts, no pair, no
    staging table; running the miner again gives what one clean run gives."""
    import miners.batches
    from miners.judge import JudgedWriter

    def mine():
        return mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=2)

    monkeypatch.setattr(miners.batches, "BATCH_ROWS", 2)
    write = JudgedWriter.write
    calls = []

    def failing_write(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("No space left on device")
        return write(self, *args, **kwargs)

    monkeypatch.setattr(JudgedWriter, "write", failing_write)
    with pytest.raises(OSError, match="No space"):
        mine()
    assert store.scalar("SELECT count(*) FROM pairs") == 0
    assert store.scalar("SELECT count(*) FROM pair_origins") == 0
    judged = store.scalar("SELECT count(*) FROM generations WHERE verdict IS NOT NULL")
    assert 0 < judged < store.scalar("SELECT count(*) FROM generations WHERE model = 'm1'")
    assert store.scalar("SELECT count(*) FROM duckdb_tables() WHERE temporary") == 0

    monkeypatch.setattr(JudgedWriter, "write", write)
    after_failure = mine()
    state = _mined_state(store)
    store.con.execute(
        "DELETE FROM pair_origins; DELETE FROM pairs; UPDATE generations SET verdict = NULL, "
        "extracted_answer = NULL, verdict_reason = NULL, loop_flagged = NULL, max_repeat = NULL, "
        "n_tokens = NULL"
    )
    clean = mine()
    assert (after_failure.kept, after_failure.ids_digest, dict(after_failure.dropped)) == (
        clean.kept,
        clean.ids_digest,
        dict(clean.dropped),
    )
    assert _mined_state(store) == state and clean.kept > 0


def test_a_streaming_miner_keeps_the_number_and_digest_of_its_pairs_not_their_ids(store, repair_store):
    """The ids of every pair produced would grow with them; a streaming miner keeps their number and an
    order-sensitive digest, the digest of the same ids a list would hold."""
    import xxhash

    res = mine_self_repair(store, model="m1", dataset="gsm8k", pairs_per_problem=2)
    assert res.pair_ids == [] and res.produced == res.kept == len(pair_rows(store)) > 0
    stored = [r["pair_id"] for r in store.rows("SELECT pair_id FROM pairs ORDER BY rowid")]
    assert res.ids_digest == xxhash.xxh3_128_hexdigest("".join(f"{pid}\n" for pid in stored).encode())
    assert res.as_dict()["pairs"] == res.produced
