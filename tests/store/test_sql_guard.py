"""Every SQL fragment a user gives goes through one validator (pairstore.store.sql_guard),
and `pairstore sql` keeps to the store."""

from __future__ import annotations

import json

import pytest

from pairstore.errors import BadInput
from pairstore.store.sql_guard import check_condition
from pairstore.store.store import open_store

BAD = {
    "1=0) OR (source = 'ultrafeedback'": "closes a parenthesis",
    "1=1; UPDATE holdout SET removed_at = current_timestamp; SELECT 1": "';'",
    "1=1 -- and the rest": "comments",
    "1=1 /* x */": "comments",
    "(1=1": "not balanced",
    "nextval('audit_log_seq') > 0": "nextval()",
    "random() < 0.5": "random()",
    "created_at < now()": "now()",
    "created_at < current_timestamp": "current_timestamp",
    "setseed(0.5) IS NULL": "setseed()",
    "pair_id IN (SELECT column0 FROM read_csv('/etc/passwd'))": "table functions",
    "pair_id IN (SELECT file FROM glob('*'))": "table functions",
    "pair_id IN (SELECT x FROM other_db.main.pairs)": "store's own tables",
    "pair_id IN (SELECT table_name FROM information_schema.tables)": "store's own tables",
    "": "empty",
    "UPDATE pairs SET family = 'x'": "not valid SQL",
}


@pytest.mark.parametrize("fragment", sorted(BAD))
def test_the_validator_refuses_statements_side_effects_files_and_escapes(fragment):
    with pytest.raises(BadInput) as e:
        check_condition(fragment, field="mix[0].where")
    assert e.value.field == "mix[0].where" and BAD[fragment] in str(e.value)


@pytest.mark.parametrize(
    "fragment",
    [
        "family = 'math'",
        "length(chosen) > 20 AND kind = 'dpo'",
        "family IN ('a', 'b')",
        "task_key IS NULL",
        "pair_id IN (SELECT o.pair_id FROM pair_origins o JOIN generations g ON g.gen_id = o.origin_id "
        "WHERE o.origin_kind = 'generation' AND g.model = 'sm11a')",
        "chosen LIKE '%)%'",
    ],
)
def test_ordinary_conditions_pass(fragment):
    assert check_condition(fragment, field="where") == fragment


@pytest.fixture
def sources(store, tmp_path, dpo_recipe, fill_pairs):
    from pairstore.rounds.recipes import add_round
    from pairstore.tables.pairs import Pair, add_pairs

    fill_pairs(store)
    add_pairs(
        store,
        [
            Pair(prompt=f"Other source {i}", chosen=f"c{i}", rejected=f"r{i}", source="ultrafeedback")
            for i in range(5)
        ],
        miner="t",
        miner_version="1",
    )
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    add_round(store, tmp_path / "base.toml")
    return store


def test_a_recipe_where_cannot_pull_rows_of_another_source(sources, tmp_path, dpo_recipe, run_cli):
    sources.close()
    (tmp_path / "esc.toml").write_text(
        dpo_recipe("esc", blocks=['source = "compliance_sft"\nwhere = "1=0) OR (source = \'ultrafeedback\'"'])
    )
    res = run_cli("round", "add", tmp_path / "esc.toml")
    assert res.exit_code == 2 and "mix[0].where" in res.output and len(res.output.splitlines()) == 1
    # a valid condition naming another source only narrows its block: it cannot widen it
    (tmp_path / "wide.toml").write_text(
        dpo_recipe("wide", blocks=['source = "compliance_sft"\nwhere = "source = \'ultrafeedback\' OR true"'])
    )
    assert run_cli("round", "add", tmp_path / "wide.toml").exit_code == 0
    res = run_cli("export", "--round", "wide", "--out", tmp_path / "o")
    assert res.exit_code == 0, res.output
    ev = json.loads((tmp_path / "o" / "wide.training_evidence.json").read_text())
    assert ev["rows_by_source"] == {"compliance_sft": 1}


def test_holdout_sample_and_mine_battle_where_run_no_statement(store, tmp_path, write_jsonl, run_cli):
    battles = [
        {
            "battle_id": f"b{i}",
            "prompt": f"Question number {i} about rivers?",
            "own_answer": f"own {i}",
            "opponent_answer": f"opponent {i}",
            "vote": "win",
            "category": "math" if i % 2 else "chat",
        }
        for i in range(12)
    ]
    store.close()
    assert run_cli("ingest", "battles", write_jsonl(tmp_path / "b.jsonl", battles)).exit_code == 0
    assert run_cli("holdout", "sample", "judge", "--n", "3", "--seed", "1").exit_code == 0
    attacks = [
        "1=1; UPDATE holdout SET removed_at = current_timestamp; SELECT 1",
        "1=1; DELETE FROM audit_log; SELECT 1",
        "battle_id IN (SELECT column0 FROM read_csv('/etc/hosts'))",
        "nextval('audit_log_seq') > 0",
        "1=1) OR (1=1",
    ]
    for where in attacks:
        res = run_cli("holdout", "sample", "other", "--n", "2", "--seed", "1", "--where", where)
        assert res.exit_code == 2 and "where" in res.output and len(res.output.splitlines()) == 1, res.output
        res = run_cli("mine", "battle", "--where", where)
        assert res.exit_code == 2 and "where" in res.output, res.output
    with open_store(tmp_path / "store.duckdb", read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM holdout WHERE removed_at IS NULL") == 3
        assert s.scalar("SELECT count(*) FROM holdout_sets") == 1
        assert s.scalar("SELECT count(*) FROM audit_log WHERE action = 'holdout.add'") == 3  # one per member
        assert s.scalar("SELECT count(*) FROM pairs") == 0
    res = run_cli("mine", "battle", "--where", "category = 'math'", "--json")
    assert res.exit_code == 0, res.output


@pytest.mark.slow
def test_sql_read_only_default_cannot_reach_files_or_other_databases(store, tmp_path, run_cli, fill_pairs):
    fill_pairs(store)
    store.close()
    target = tmp_path / "mixture.parquet"
    target.write_bytes(b"registered bytes")
    for query in [
        f"COPY pairs TO '{target}' (FORMAT parquet)",
        f"ATTACH '{tmp_path / 'other.duckdb'}' AS o",
        "INSTALL httpfs",
        "LOAD httpfs",
        f"SELECT * FROM read_text('{target}')",
        f"SELECT * FROM read_csv('{tmp_path / 'x.csv'}')",
        "SELECT * FROM glob('/etc/*')",
        "SET enable_external_access = true; SELECT 1",
        f"EXPORT DATABASE '{tmp_path / 'dump'}'",
    ]:
        res = run_cli("sql", query)
        assert res.exit_code == 2 and len(res.output.splitlines()) == 1, (query, res.output)
        res = run_cli("sql", "--write", query)
        assert res.exit_code == 2, (query, res.output)
    assert target.read_bytes() == b"registered bytes"
    assert not (tmp_path / "other.duckdb").exists() and not (tmp_path / "dump").exists()
    res = run_cli("sql", "--allow-files", f"COPY (SELECT source FROM pairs) TO '{tmp_path / 'ok.csv'}'")
    assert res.exit_code == 0 and (tmp_path / "ok.csv").exists()
    assert run_cli("sql", "SELECT count(*) AS n FROM pairs", "--json").exit_code == 0


def test_sql_write_cannot_repeat_a_pair_or_origin_key(store, tmp_path, run_cli, fill_pairs):
    """`pairs` and `pair_origins` have no DuckDB index (it would stay in memory whole); their keys stay
    unique because their writer adds only what is new and --write checks before it commits."""
    fill_pairs(store)
    pairs, origins = (
        store.scalar("SELECT count(*) FROM pairs"),
        store.scalar("SELECT count(*) FROM pair_origins"),
    )
    store.close()
    for query, table in [
        ("INSERT INTO pairs SELECT * FROM pairs LIMIT 1", "pairs"),
        ("UPDATE pairs SET pair_id = (SELECT min(pair_id) FROM pairs)", "pairs"),
        (
            "INSERT INTO pair_origins SELECT * REPLACE ('another rule' AS rule) FROM pair_origins LIMIT 2",
            "pair_origins",
        ),
        ("DELETE FROM pairs WHERE family = 'none'; INSERT INTO pairs SELECT * FROM pairs", "pairs"),
    ]:
        res = run_cli("sql", "--write", query)
        assert res.exit_code == 2, (query, res.output)
        assert f"of {table} repeating the key" in res.output and "nothing was committed" in res.output
    # a change that keeps every key one row is allowed
    assert run_cli("sql", "--write", "UPDATE pairs SET family = 'edited'").exit_code == 0
    with open_store(tmp_path / "store.duckdb", read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM pairs") == pairs
        assert s.scalar("SELECT count(*) FROM pair_origins") == origins
        assert s.scalar("SELECT count(DISTINCT pair_id) FROM pairs") == pairs


def test_sql_write_is_all_or_nothing_and_keeps_logged_tables(store, tmp_path, run_cli, fill_pairs):
    from pairstore.holdout.sets import add_members

    fill_pairs(store)
    add_members(
        store, "judge", [{"item_id": "b1", "item_kind": "battle", "match_key": "k", "match_text": "t"}]
    )
    before = store.scalar("SELECT count(*) FROM audit_log")
    store.close()
    for query in [
        "DELETE FROM audit_log",
        "UPDATE holdout SET removed_at = current_timestamp",
        "DELETE FROM holdout",
        "DROP TABLE holdout_exemptions",
        "INSERT INTO holdout_sets (set_name) VALUES ('x')",
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
        "VALUES ('x', 'r', 'export', 'p', 's', 1, 'c')",
        "INSERT INTO export_rows VALUES ('x', 0, 'p')",
        "ALTER TABLE audit_log RENAME TO old_log; CREATE TABLE audit_log AS SELECT * FROM old_log",
        "UPDATE pairs SET family = 'changed'; DELETE FROM holdout",
    ]:
        res = run_cli("sql", "--write", query)
        assert res.exit_code == 2 and "nothing was committed" in res.output, (query, res.output)
    # a failing second statement leaves the first undone
    res = run_cli("sql", "--write", "UPDATE pairs SET family = 'first'; SELECT no_such_column FROM pairs")
    assert res.exit_code == 2 and "nothing was committed" in res.output
    res = run_cli("sql", "--write", "BEGIN; UPDATE pairs SET family = 'x'; COMMIT")
    assert res.exit_code == 2 and "transaction" in res.output
    with open_store(tmp_path / "store.duckdb", read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM audit_log") == before
        assert s.scalar("SELECT count(*) FROM holdout WHERE removed_at IS NULL") == 1
        assert s.scalar("SELECT count(*) FROM pairs WHERE family IN ('first', 'changed', 'x')") == 0
    res = run_cli("sql", "--write", "UPDATE pairs SET family = 'renamed' WHERE family = 'science'")
    assert res.exit_code == 0, res.output
    with open_store(tmp_path / "store.duckdb", read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM pairs WHERE family = 'renamed'") == 12
