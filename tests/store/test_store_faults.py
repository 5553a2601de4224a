"""Every command against a store file that is damaged, someone else's, or not what its schema_version says:
one line on stderr, the documented exit status, and the file's bytes unchanged. Plus `sql --write`
against the gate: every statement that could blind it is refused, and the gate still refuses after."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pairstore.cli import cli
from pairstore.store.store import open_store
from tests.command_table import CASES, build_workspace
from tests.paths import ROOT

# Every command that opens the store, with arguments that would otherwise get it to its work (the table
# tests/cli/test_every_command.py checks against the Click tree).
OPENS_STORE = [name for name, case in CASES.items() if case.opens_store]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The input files every command of the table reads (its store is not used here)."""
    return build_workspace(tmp_path_factory.mktemp("inputs") / "ws", model_inputs=True)


def _sha(p) -> str:
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """{kind: path} of a truncated, a corrupted, a foreign, a schema-mismatched, a newer store, a store
    with a shadowing macro and one with a trigger; made once."""
    d = tmp_path_factory.mktemp("stores")
    good = d / "good.duckdb"
    with open_store(good) as s:
        s.con.execute(
            "CREATE TABLE scratch.filler AS SELECT range AS i, repeat('x', 200) AS t FROM range(20000)"
        )
    data = good.read_bytes()
    out = {}
    out["truncated"] = d / "truncated.duckdb"
    out["truncated"].write_bytes(data[: len(data) // 2])
    corrupt = bytearray(data)
    for i in range(12288, 12288 + 4096):
        corrupt[i] ^= 0x5A
    out["corrupted"] = d / "corrupted.duckdb"
    out["corrupted"].write_bytes(bytes(corrupt))
    out["not duckdb"] = d / "garbage.duckdb"
    out["not duckdb"].write_bytes(b"these are not the bytes of a database\n" * 200)
    out["foreign"] = d / "foreign.duckdb"
    con = duckdb.connect(str(out["foreign"]))
    con.execute("CREATE TABLE battles (id INTEGER, note VARCHAR); INSERT INTO battles VALUES (1, 'mine')")
    con.close()
    out["mismatched"] = d / "mismatched.duckdb"
    shutil.copy(good, out["mismatched"])
    con = duckdb.connect(str(out["mismatched"]))
    # A row in the middle: the last migration may change only data, and an older store without it is
    # legitimately migrated, not mismatched.
    con.execute("DELETE FROM schema_version WHERE version = 2")
    con.close()
    out["newer"] = d / "newer.duckdb"
    shutil.copy(good, out["newer"])
    con = duckdb.connect(str(out["newer"]))
    con.execute("INSERT INTO schema_version (version, name) VALUES (999, 'm999_from_the_future')")
    con.close()
    out["shadowing macro"] = d / "macro.duckdb"
    shutil.copy(good, out["shadowing macro"])
    con = duckdb.connect(str(out["shadowing macro"]))
    con.execute("CREATE MACRO list_filter(l, f) AS []")
    con.close()
    out["trigger"] = with_trigger(good, d / "trigger.duckdb")
    out["changed default"] = d / "default.duckdb"
    shutil.copy(good, out["changed default"])
    con = duckdb.connect(str(out["changed default"]))
    con.execute(CHANGED_DEFINITIONS["a default that removes every new holdout member"])
    con.close()
    return out


# Definitions of the migrations' tables and views another DuckDB client could change, with what is named.
CHANGED_DEFINITIONS = {
    "a default that removes every new holdout member": "ALTER TABLE holdout ALTER COLUMN removed_at "
    "SET DEFAULT current_timestamp",
    "a default dropped": "ALTER TABLE holdout ALTER COLUMN added_at DROP DEFAULT",
    "a NOT NULL dropped": "ALTER TABLE holdout ALTER COLUMN match_key DROP NOT NULL",
    "a view's query": "CREATE OR REPLACE VIEW pairs_by_source AS "
    "SELECT source, family, kind, count(*) AS pairs FROM pairs WHERE false GROUP BY ALL",
    "a view made a table": "CREATE TABLE v AS SELECT * FROM holdout_status; DROP VIEW holdout_status; "
    "ALTER TABLE v RENAME TO holdout_status",
}


WIPE = "CREATE TRIGGER wipe AFTER INSERT ON ingests FOR EACH STATEMENT DELETE FROM holdout"


def with_trigger(store, path, trigger: str | None = WIPE):
    """A copy of `store` in DuckDB's v2.0.0 format (the first that holds triggers, as any DuckDB 2.x client
    can write it) with `trigger` made in it."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{store}' AS old (READ_ONLY)")
    con.execute(f"ATTACH '{path}' AS new (STORAGE_VERSION 'v2.0.0')")
    con.execute("COPY FROM DATABASE old TO new")
    if trigger:
        con.execute("USE new")
        con.execute(trigger)
    con.close()
    return path


EXPECTED = {
    "truncated": (1, "damaged"),
    "corrupted": (1, "damaged"),
    "not duckdb": (1, "damaged or not a DuckDB file"),
    "foreign": (2, "not a pairstore store"),
    "mismatched": (1, "schema_version"),
    "newer": (1, "newer pairstore"),
    "shadowing macro": (1, "list_filter"),
    "trigger": (1, "trigger wipe on table main.ingests"),
    "changed default": (1, "table holdout is not what this pairstore's migrations make"),
}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", list(EXPECTED))
def test_every_command_on_a_bad_store_is_one_line_and_leaves_it_unchanged(stores, kind, tmp_path, workspace):
    db = tmp_path / "store.duckdb"
    shutil.copy(stores[kind], db)
    before = _sha(db)
    code, words = EXPECTED[kind]
    runner = CliRunner()
    for name in OPENS_STORE:
        args = CASES[name].argv(workspace, tmp_path / "out")
        r = runner.invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
        lines = r.stderr.strip().splitlines()
        assert r.exit_code == code, (kind, name, r.output)
        assert len(lines) == 1 and words in lines[0] and "Traceback" not in r.output, (kind, name, r.output)
        assert _sha(db) == before, (kind, name)
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("store.duckdb.")], (kind, name)
        assert not (tmp_path / "out").exists(), (kind, name)
    assert len(OPENS_STORE) >= 40


def test_a_trigger_another_client_wrote_is_refused_before_it_can_empty_the_holdout(tmp_path):
    """A trigger runs inside pairstore's own writes: this one would delete every holdout member at the
    next ingest, with no audit-log entry. The store is refused at open, whatever the command, and its
    bytes are kept; the same store without the trigger, in the same format, opens."""
    from pairstore.errors import PairstoreError
    from pairstore.holdout.sets import add_members

    made = tmp_path / "made.duckdb"
    with open_store(made) as s:
        add_members(
            s, "h", [{"item_id": "b1", "item_kind": "battle", "match_key": "k", "match_text": "a b c"}]
        )
    bad = with_trigger(made, tmp_path / "trigger.duckdb")
    before = _sha(bad)
    for read_only in (False, True):
        with pytest.raises(
            PairstoreError, match=r"trigger wipe on table main\.ingests.*DROP TRIGGER wipe ON"
        ):
            open_store(bad, read_only=read_only)
    assert _sha(bad) == before
    with open_store(with_trigger(made, tmp_path / "plain.duckdb", trigger=None)) as s:
        assert s.scalar("SELECT count(*) FROM holdout WHERE removed_at IS NULL") == 1


@pytest.mark.parametrize("change", list(CHANGED_DEFINITIONS))
def test_a_table_or_view_another_client_redefined_is_refused_naming_it(tmp_path, change):
    """Its columns and types unchanged, a table or view of the migrations defined otherwise is refused at
    open, naming it, and the file is kept as it was."""
    from pairstore.errors import PairstoreError

    path = tmp_path / "store.duckdb"
    open_store(path).close()
    con = duckdb.connect(str(path))
    con.execute(CHANGED_DEFINITIONS[change])
    con.close()
    before = _sha(path)
    named = {"a view's query": "view pairs_by_source", "a view made a table": "view holdout_status"}
    with pytest.raises(PairstoreError, match=named.get(change, "table holdout") + " is not what"):
        open_store(path, read_only=True)
    assert _sha(path) == before


@pytest.fixture(scope="module")
def fresh_store(tmp_path_factory):
    """A new store's file and {(table, column): its default} of every column of the migrations' tables."""
    path = tmp_path_factory.mktemp("fresh") / "store.duckdb"
    open_store(path).close()
    con = duckdb.connect(str(path), read_only=True)
    columns = dict(
        ((t, c), d)
        for t, c, d in con.execute(
            """SELECT table_name, column_name, column_default FROM duckdb_columns()
            WHERE schema_name = 'main' AND table_name IN (SELECT table_name FROM duckdb_tables())"""
        ).fetchall()
    )
    con.close()
    return path, columns


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_column_default_another_client_sets_is_refused(fresh_store, tmp_path_factory, data):
    """Any table of the migrations, any column, any default: where the default is not the one the
    migrations gave, the store is refused at open naming the table; where it is, the store opens."""
    from pairstore.errors import PairstoreError

    made, columns = fresh_store
    table, column = data.draw(st.sampled_from(sorted(columns)), label="column")
    value = data.draw(st.one_of(st.integers(-5, 5), st.sampled_from(["''", "'x'", "NULL"])), label="default")
    path = tmp_path_factory.mktemp("changed") / "store.duckdb"
    shutil.copy(made, path)
    con = duckdb.connect(str(path))
    try:
        con.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET DEFAULT {value}')
        rendered = con.execute(
            "SELECT column_default FROM duckdb_columns() WHERE table_name = ? AND column_name = ?",
            [table, column],
        ).fetchall()[0][0]
    except duckdb.Error:
        return  # DuckDB refuses this default for this column: nothing was changed
    finally:
        con.close()
    if rendered == columns[(table, column)]:
        open_store(path, read_only=True).close()
    else:
        with pytest.raises(PairstoreError, match=f"table {table} is not what"):
            open_store(path, read_only=True)


def test_a_store_in_the_format_pairstore_writes_cannot_hold_a_trigger(tmp_path):
    """Why opening a v1.x file does not list triggers: DuckDB refuses to make one there. A DuckDB that
    allowed it would fail this test, and recognize.file_triggers would have to list them in every file."""
    path = tmp_path / "store.duckdb"
    open_store(path).close()
    con = duckdb.connect(str(path))
    try:
        with pytest.raises(duckdb.Error, match="storage version"):
            con.execute(WIPE)
    finally:
        con.close()


def test_a_missing_store_is_created_and_an_empty_duckdb_file_is_taken(tmp_path):
    with open_store(tmp_path / "new.duckdb") as s:
        assert s.schema_version() > 0
    duckdb.connect(str(tmp_path / "empty.duckdb")).close()
    with open_store(tmp_path / "empty.duckdb") as s:
        assert s.scalar("SELECT count(*) FROM holdout") == 0


def test_a_new_store_whose_migrations_fail_is_left_empty_and_made_on_the_next_open(tmp_path, monkeypatch):
    """A new store takes every migration in one transaction: one that fails leaves no table of the
    others, and the next open makes the store from the start."""
    from pairstore.store import store as store_module

    def broken(con):
        raise RuntimeError("disk went away")

    path = tmp_path / "new.duckdb"
    monkeypatch.setattr(store_module, "MIGRATIONS", [*store_module.MIGRATIONS[:-1], broken])
    with pytest.raises(RuntimeError):
        open_store(path)
    con = duckdb.connect(str(path))
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert tables == {"schema_version"}
    monkeypatch.undo()
    s = open_store(path)
    assert s.schema_version() == len(store_module.MIGRATIONS)
    s.close()


def test_no_traceback_from_a_subprocess_on_a_read_only_store_folder(tmp_path):
    """A store in a folder the process cannot write (read-only bind: chmod is no barrier for root, so the
    folder is made unwritable with a read-only tmpfs where root can mount one)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    with open_store(folder / "s.duckdb"):
        pass
    mounted = (
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True).returncode == 0
    )
    if not mounted:
        mounted = subprocess.run(
            ["mount", "--bind", "-o", "ro", str(folder), str(folder)], capture_output=True
        )
        mounted = mounted.returncode == 0
    if not mounted:
        os.chmod(folder, 0o555)
        if os.access(folder, os.W_OK):
            pytest.skip("cannot make a read-only folder here (root without mount rights)")
    try:
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                "from pairstore.cli import main; main()",
                "--db",
                str(folder / "s.duckdb"),
                "ingest",
                "battles",
                str(ROOT / "pairstore" / "sample_data" / "battles.jsonl"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr and "s.duckdb" in r.stderr, r.stderr
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)
        os.chmod(folder, 0o755)


# ---------------------------------------------------------------------------- sql --write and the gate

BLINDING = [
    "CREATE MACRO list_filter(l, f) AS []",
    "CREATE MACRO hash(x) AS 0",
    "CREATE OR REPLACE MACRO scratch.hash(x) AS 0",
    "CREATE FUNCTION f(x) AS x",
    "ALTER TABLE holdout ALTER COLUMN removed_at SET DEFAULT current_timestamp",
    "ALTER TABLE audit_log ALTER COLUMN seq DROP DEFAULT",
    "DELETE FROM benchmark_refs",
    "DELETE FROM benchmark_ngrams",
    "DELETE FROM eval_items",
    "DELETE FROM tasks",
    "DELETE FROM checkpoints",
    "DELETE FROM schema_version WHERE version > 1",
    "UPDATE rounds SET recipe = '{}'",
    "UPDATE holdout SET removed_at = current_timestamp",
    "TRUNCATE holdout",
    "WITH x AS (SELECT 1) DELETE FROM holdout",
    'DELETE FROM "main"."holdout"',
    "COMMENT ON TABLE pairs IS 'x'",
    "COMMENT ON COLUMN holdout.removed_at IS 'x'",
    "ALTER TABLE pairs RENAME TO p2",
    "ALTER VIEW holdout_status RENAME TO h2",
    "DROP VIEW holdout_status",
    "DROP TABLE holdout_exemptions",
    "CREATE TABLE mine AS SELECT 1",
    "CREATE VIEW main.v AS SELECT 1",
    "CREATE SCHEMA other",
    "CREATE TYPE mood AS ENUM ('a')",
    "CREATE SEQUENCE s",
    "CREATE INDEX i ON pairs(pair_id)",
    "CREATE TRIGGER wipe AFTER INSERT ON ingests FOR EACH STATEMENT DELETE FROM holdout",
    "SET search_path = 'scratch'",
    "PRAGMA enable_profiling",
    "CALL checkpoint()",
    "CREATE TABLE scratch.ok AS SELECT 1 AS a; CREATE MACRO array_filter(l, f) AS []",
]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_blinding_write_is_refused_and_the_gate_still_refuses(round_r1, tmp_path, run_cli):
    from pairstore.holdout.sets import add_members

    store = round_r1
    row = store.one("SELECT pair_id, match_key FROM pairs WHERE source = 'battle' LIMIT 1")
    add_members(
        store,
        "judge",
        [{"item_id": "b00", "item_kind": "battle", "match_key": row[1], "match_text": "battle question 0"}],
    )
    db = store.path
    store.close()
    before = _sha(db)
    r = run_cli("export", "--round", "r1", "--out", tmp_path / "out")
    assert r.exit_code == 3, r.output
    for query in BLINDING:
        r = run_cli("sql", "--write", query)
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, (query, r.output)
        assert "nothing was committed" in r.output or "not allowed" in r.output, (query, r.output)
        r = run_cli("export", "--round", "r1", "--out", tmp_path / "out")
        assert r.exit_code == 3, (query, r.output)
    with open_store(db, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM system.main.duckdb_functions() WHERE NOT internal") == 0
        assert s.scalar("SELECT count(*) FROM holdout WHERE removed_at IS NULL") == 1
    # the user's own schema works
    assert run_cli("sql", "--write", "CREATE TABLE scratch.mine AS SELECT pair_id FROM pairs").exit_code == 0
    r = run_cli("sql", "SELECT count(*) AS n FROM scratch.mine", "--json")
    assert json.loads(r.output)[0]["n"] > 0
    assert before  # the store changed only through scratch


def test_a_round_rewritten_outside_pairstore_is_refused(round_r1, tmp_path, run_cli):
    db = round_r1.path
    round_r1.close()
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE rounds SET recipe = replace(recipe, '\"upsample\": 2.5', '\"upsample\": 9.0') "
        "WHERE name = 'r1'"
    )
    con.close()
    r = run_cli("export", "--round", "r1", "--out", tmp_path / "out")
    assert r.exit_code == 1 and "changed in the store outside pairstore" in r.output, r.output
    assert not (tmp_path / "out").exists()
