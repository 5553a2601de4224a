"""Holdout sets and `pairstore sql`."""

from __future__ import annotations

import json

import pytest

from pairstore.errors import BadInput
from pairstore.holdout.sets import active_members, held_task_keys, sample_holdout
from pairstore.ingest.battles import ingest_battles
from pairstore.store.migrations import SCHEMA_VERSION
from pairstore.store.store import open_store

VOTES = ["win"] * 40 + ["loss"] * 36 + ["tie"] * 16 + ["both_bad"] * 12


@pytest.fixture
def battles_file(tmp_path, write_jsonl):
    recs = [
        {
            "battle_id": f"b{i:03d}",
            "prompt": f"Question {i} about topic {i % 7}?",
            "own_answer": "o",
            "opponent_answer": "p",
            "vote": VOTES[i],
            "category": ["math", "chat", "code"][i % 3],
        }
        for i in range(len(VOTES))
    ]
    # Two battles with the same prompt up to case and whitespace: one match key, kept together.
    recs[0]["prompt"] = "Same   prompt twice"
    recs[1]["prompt"] = "same prompt TWICE"
    return write_jsonl(tmp_path / "b.jsonl", recs)


def test_sample_is_deterministic_stratified_and_keeps_match_keys_together(store, battles_file, db_path):
    ingest_battles(store, battles_file)
    ids = sample_holdout(store, "h34", n=34, seed=11)
    assert len(ids) == 34
    votes = dict(
        store.con.execute(
            "SELECT b.vote, count(*) FROM holdout h JOIN battles b ON b.battle_id = h.item_id GROUP BY 1"
        ).fetchall()
    )
    # Proportional to 40/36/16/12 of 104 battles: 13.1 / 11.8 / 5.2 / 3.9.
    assert votes == {"win": 13, "loss": 12, "tie": 5, "both_bad": 4}
    assert ("b000" in ids) == ("b001" in ids)
    ids2 = sample_holdout(store, "again", n=34, seed=11)
    assert ids2 == ids
    assert sample_holdout(store, "other", n=34, seed=12) != ids
    log = store.rows("SELECT action, subject, detail FROM audit_log ORDER BY seq")
    # one entry per member added
    assert [r["action"] for r in log] == ["holdout.add"] * (3 * 34)
    assert sorted(json.loads(r["detail"])["item_id"] for r in log if r["subject"] == "again") == ids


def test_sampling_into_an_existing_set_or_too_many_is_refused(store, battles_file):
    ingest_battles(store, battles_file)
    sample_holdout(store, "h", n=5, seed=1)
    with pytest.raises(BadInput, match="already has members"):
        sample_holdout(store, "h", n=5, seed=1)
    with pytest.raises(BadInput, match="only 104 battles"):
        sample_holdout(store, "h2", n=500, seed=1)


def test_cli_holdout_add_list_show_remove(run_cli, battles_file, tmp_path):
    assert run_cli("ingest", "battles", battles_file).exit_code == 0
    ids = tmp_path / "ids.txt"
    ids.write_text("# judge set\nb005\nb006\n\nb007\n")
    r = run_cli("holdout", "add", "judge", "--ids-file", ids)
    assert (r.exit_code, r.output) == (0, "judge: 3 members added\n")
    r = run_cli("holdout", "list")
    assert r.exit_code == 0
    assert r.output.splitlines()[2].split()[:3] == ["judge", "3", "0"]
    r = run_cli("holdout", "remove", "judge", "b006", "--reason", "shown publicly")
    assert (r.exit_code, r.output) == (0, "judge: removed b006\n")
    r = run_cli("holdout", "show", "judge", "--json")
    rows = json.loads(r.output)
    assert [(x["item_id"], x["status"]) for x in rows] == [
        ("b005", "active"),
        ("b006", "removed"),
        ("b007", "active"),
    ]
    r = run_cli("holdout", "remove", "judge", "b006", "--reason", "again")
    assert r.exit_code == 2 and "already removed" in r.output
    bad = tmp_path / "bad.txt"
    bad.write_text("b005\nnot-an-id\n")
    r = run_cli("holdout", "add", "judge", "--ids-file", bad)
    assert (
        r.exit_code == 2
        and r.output
        == f"error: {bad}, line 2: unknown id 'not-an-id' (not a battle, task or eval item in the store)\n"
    )
    r = run_cli("holdout", "show", "nope")
    assert r.exit_code == 2 and r.output == "error: no holdout set 'nope'\n"
    # one entry per member added, then the removal; the refused file added nothing
    r = run_cli("sql", "SELECT action, detail->>'item_id' AS id FROM audit_log ORDER BY seq", "--csv")
    added = "".join(f"holdout.add,{i}\n" for i in ("b005", "b006", "b007"))
    assert r.output == "action,id\n" + added + "holdout.remove,b006\n"


def test_active_members_and_held_task_keys(store):
    from pairstore.holdout.sets import add_members

    add_members(
        store,
        "lf2",
        [
            {
                "item_id": "t1",
                "item_kind": "task",
                "match_key": "k",
                "match_text": "t",
                "task_key": "letter_count:{}",
            }
        ],
    )
    assert held_task_keys(store) == {"letter_count:{}"}
    assert [m["item_id"] for m in active_members(store, "lf2")] == ["t1"]


def test_sql_read_only_by_default_and_formats(run_cli, battles_file, db_path):
    run_cli("ingest", "battles", battles_file)
    r = run_cli("sql", "SELECT vote, count(*) AS n FROM battles GROUP BY vote ORDER BY vote")
    assert r.exit_code == 0
    assert r.output.splitlines()[0].split() == ["vote", "n"]
    r = run_cli("sql", "SELECT count(*) AS n FROM battles", "--json")
    assert json.loads(r.output) == [{"n": 104}]
    r = run_cli("sql", "DELETE FROM battles")
    assert r.exit_code == 2 and "read-only; pass --write" in r.output
    r = run_cli("sql", "DELETE FROM battles WHERE battle_id = 'b000'", "--write")
    assert r.exit_code == 0
    r = run_cli("sql", "SELEC nonsense")
    assert r.exit_code == 2 and r.output.startswith("error: SQL error: Parser Error")
    with open_store(db_path, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM battles") == 103


def test_views_answer_everyday_questions(run_cli, battles_file):
    run_cli("ingest", "battles", battles_file)
    r = run_cli(
        "sql", "SELECT category, wins, losses FROM battle_votes_by_category ORDER BY category", "--json"
    )
    rows = json.loads(r.output)
    assert sum(x["wins"] for x in rows) == 40 and sum(x["losses"] for x in rows) == 36
    assert run_cli("sql", "SELECT * FROM pairs_by_source").exit_code == 0
    assert run_cli("sql", "SELECT * FROM holdout_status").exit_code == 0


def test_store_opens_in_a_plain_duckdb_client(db_path, battles_file, run_cli):
    import duckdb

    run_cli("ingest", "battles", battles_file)
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT max(version) FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert con.execute("SELECT prompt[1].role FROM battles LIMIT 1").fetchall() == [("user",)]
    con.close()
