"""`pairstore sql`: run SQL against the store, read-only unless asked to write.

    pairstore sql "SELECT source, count(*) FROM pairs GROUP BY 1"
    pairstore sql --write "<one or more statements>"      # all of them or none
    pairstore sql --allow-files "COPY (SELECT * FROM pairs_by_source) TO 'sources.csv'"

- Files and other databases are out of reach unless `--allow-files`: no COPY, ATTACH, INSTALL, LOAD,
  EXPORT/IMPORT DATABASE, and no file-reading function (read_csv, read_text, glob, ...). Besides
  refusing those statements by type, the connection is set to `enable_external_access = false` and
  its configuration locked, so no setting can turn it back on.
- `--write` runs every statement in one transaction: all of them or none. Transaction statements of
  its own (BEGIN, COMMIT, ...) are refused. It cannot change what pairstore computes: new tables and
  views go in the schema `scratch` (CREATE TABLE scratch.mine AS ...); no macro or function, schema,
  type or sequence; no ALTER, DROP, COMMENT or rename of pairstore's objects; no write to the tables
  that change only through their own commands or that a gate or an audit reads (PROTECTED). Rows of
  the other tables (pairs, battles, ...) may change: the gate reads them again at every export.
  Checked twice: on DuckDB's parse of each statement before anything runs
  (pairstore.store.sql_guard.check_write_statements), and before the commit by comparing the catalog
  and PROTECTED's rows with DuckDB's own functions (`system.main.*`); any change rolls everything back.
  Before the commit, too, every key of UNIQUE_KEYS must be on one row: `pairs` and `pair_origins` have
  no DuckDB index (it would stay in memory whole), so this check is what a primary key did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import duckdb

from pairstore.errors import BadInput, duckdb_message
from pairstore.store.recognize import damaged_store
from pairstore.store.sql_guard import USER_SCHEMA, check_write_statements

if TYPE_CHECKING:
    from pairstore.store.store import Store

# Changed only by their own commands (which log every change), or read by a gate or an audit: --write
# refuses any change to their rows or their definitions.
PROTECTED = (
    "holdout",
    "holdout_sets",
    "holdout_exemptions",
    "audit_log",
    "exports",
    "export_rows",
    "benchmark_refs",
    "benchmark_ngrams",
    "eval_items",
    "tasks",
    "checkpoints",
    "rounds",
    "schema_version",
    "key_versions",
)
# Kept unique by their one writer (pairstore.tables.pairs), not by a DuckDB index (migration m010: an
# index stays in memory whole): --write refuses a change that leaves a key on two rows.
UNIQUE_KEYS = {"pairs": "pair_id", "pair_origins": "pair_id, origin_kind, origin_id"}
_FILE_STATEMENTS = {
    duckdb.StatementType.COPY,
    duckdb.StatementType.ATTACH,
    duckdb.StatementType.DETACH,
    duckdb.StatementType.LOAD,
    duckdb.StatementType.EXPORT,
    duckdb.StatementType.COPY_DATABASE,
    duckdb.StatementType.EXTENSION,
}
# Outside the user's schema and the session's temp catalog, every object belongs to pairstore.
_NOT_USERS = f"database_name NOT IN ('system', 'temp') AND schema_name <> '{USER_SCHEMA}'"


def _catalog(con: duckdb.DuckDBPyConnection) -> dict:
    """Every object of the file outside the user's schema, and every user-defined function anywhere, read
    through DuckDB's own catalog functions (system.main.*: no macro can shadow them)."""
    q = {
        "functions": "SELECT schema_name, function_name, function_type, macro_definition "
        "FROM system.main.duckdb_functions() WHERE NOT internal AND database_name NOT IN ('system')",
        "schemas": "SELECT schema_name, comment FROM system.main.duckdb_schemas() "
        "WHERE database_name NOT IN ('system', 'temp')",
        "tables": f"SELECT schema_name, table_name, table_oid, sql, comment FROM system.main.duckdb_tables() "
        f"WHERE {_NOT_USERS}",
        "columns": "SELECT schema_name, table_name, column_name, column_index, data_type, column_default, "
        f"is_nullable, comment FROM system.main.duckdb_columns() WHERE {_NOT_USERS}",
        "views": f"SELECT schema_name, view_name, sql, comment FROM system.main.duckdb_views() "
        f"WHERE NOT internal AND {_NOT_USERS}",
        "indexes": f"SELECT schema_name, index_name, table_name, sql FROM system.main.duckdb_indexes() "
        f"WHERE {_NOT_USERS}",
        "constraints": "SELECT schema_name, table_name, constraint_type, constraint_text "
        f"FROM system.main.duckdb_constraints() WHERE {_NOT_USERS}",
        "sequences": "SELECT schema_name, sequence_name, last_value FROM system.main.duckdb_sequences() "
        f"WHERE {_NOT_USERS}",
        "types": "SELECT schema_name, type_name FROM system.main.duckdb_types() "
        f"WHERE NOT internal AND {_NOT_USERS}",
    }
    return {k: sorted(map(repr, con.execute(sql).fetchall())) for k, sql in q.items()}


def _fingerprint(con: duckdb.DuckDBPyConnection) -> dict:
    """The catalog (see _catalog), and per protected table an order-independent hash of its rows, computed
    with DuckDB's own hash and sum (system.main.*), never a function the file could redefine."""
    out: dict[str, Any] = {"catalog": _catalog(con)}
    if out["catalog"]["functions"]:
        return out  # a user function exists: refused before any row is hashed through the catalog
    present = {
        t
        for (t,) in con.execute(
            "SELECT table_name FROM system.main.duckdb_tables() "
            "WHERE database_name NOT IN ('system', 'temp') "
            "AND schema_name = 'main'"
        ).fetchall()
    }
    for table in PROTECTED:
        out[table] = (
            con.execute(
                "SELECT system.main.count_star(), system.main.sum(system.main.hash(t)::HUGEINT) "
                f"FROM main.{table} t"
            ).fetchall()
            if table in present
            else None
        )
    return out


def _changes(before: dict, after: dict) -> list[str]:
    changed = [t for t in PROTECTED if before.get(t) != after.get(t)]
    for part, rows in after["catalog"].items():
        if rows != before["catalog"][part]:
            changed.append(f"the store's {part}")
    return changed


def _refuse_repeated_keys(con: duckdb.DuckDBPyConnection) -> None:
    """BadInput where a table of UNIQUE_KEYS holds a key on more than one row (counted with DuckDB's own
    functions, system.main.*)."""
    for table, key in UNIQUE_KEYS.items():
        repeats = con.execute(
            f"SELECT system.main.count_star() - system.main.count(DISTINCT ({key})) FROM main.{table}"
        ).fetchall()[0][0]
        if repeats:
            raise BadInput(
                f"--write would leave {repeats:,} row(s) of {table} repeating the key ({key}) of another: "
                "a key is one row; nothing was committed",
                field=table,
            )


def _run(
    con: duckdb.DuckDBPyConnection, statements: Iterable[duckdb.Statement]
) -> tuple[list[str], list[tuple]]:
    cols: list[str] = []
    rows: list[tuple] = []
    for st in statements:
        cur = con.execute(st)
        cols = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchall() if cols else []
    return cols, rows


# What in a DuckDB error says the machine failed, not the SQL (the commit's write of the WAL, mostly).
_MACHINE_FAILURES = ("no space left", "disk is full", "could not write file", "read-only file system")


def run_sql(
    store: Store, query: str, *, write: bool = False, allow_files: bool = False
) -> tuple[list[str], list[tuple]]:
    """Run `query` (one or more statements); return (columns, rows) of the last. A write needs a store opened
    for writing and leaves PROTECTED as it was. Without `allow_files` the store's connection keeps no
    access to files afterwards (DuckDB cannot turn it back on): open the store again for other work, as
    the CLI does for every command."""
    con = store.con
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as e:
        raise BadInput(f"SQL error: {duckdb_message(e)}") from None
    if not statements:
        raise BadInput("no SQL statement given")
    for st in statements:
        if st.type == duckdb.StatementType.TRANSACTION:
            raise BadInput(
                "transaction statements are not allowed: --write runs everything as one transaction"
            )
        if st.type in _FILE_STATEMENTS and not allow_files:
            raise BadInput(f"{st.type.name} reaches files or other databases; pass --allow-files to allow it")
    if not allow_files:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    try:
        if not write:
            return _run(con, statements)
        main_objects = {
            n
            for (n,) in con.execute(
                "SELECT table_name FROM system.main.duckdb_tables() WHERE schema_name = 'main' "
                "UNION SELECT view_name FROM system.main.duckdb_views() WHERE schema_name = 'main'"
            ).fetchall()
        }
        check_write_statements(statements, main_objects, PROTECTED)
        with store.transaction():
            before = _fingerprint(con)
            result = _run(con, statements)
            changed = _changes(before, _fingerprint(con))
            if changed:
                raise BadInput(
                    f"--write cannot change {', '.join(changed)}: pairstore's own tables, views and "
                    f"functions change only through its commands, which log every change; user tables "
                    f"and views go in schema {USER_SCHEMA!r}; nothing was committed"
                )
            _refuse_repeated_keys(con)
            return result
    except duckdb.Error as e:
        first = duckdb_message(e)
        if store.read_only and "read-only" in first.lower():
            raise BadInput(f"the store is opened read-only; pass --write to change it ({first})") from None
        if "disabled by configuration" in first or "configuration has been locked" in first:
            raise BadInput(
                f"files and other databases are out of reach without --allow-files ({first})"
            ) from None
        if isinstance(e, duckdb.IOException) or any(w in first.lower() for w in _MACHINE_FAILURES):
            # The disk, not the statement: exit 1 like every command's machine failure, not bad input.
            raise damaged_store(str(store.path), e) from None
        raise BadInput(f"SQL error: {first}" + ("; nothing was committed" if write else "")) from None
