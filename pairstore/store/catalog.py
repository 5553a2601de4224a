"""What a DuckDB catalog says a store holds: each table's and view's columns, and DuckDB's rendering of
each CREATE statement. pairstore.store.recognize reads a file's this way, and pairstore.store.schema_snapshot
an in-memory store's that the migrations ran on, so the two compare alike."""

from __future__ import annotations

import duckdb

# Schemas a migration made are listed under this name, which no table can have.
SCHEMAS = " schemas"
# Objects of DuckDB's own (and of the in-session temp catalog) are not the file's.
FILE_OBJECTS = "database_name NOT IN ('system', 'temp')"


def _in(database: str | None) -> str:
    """The condition of a catalog row in `database` (an in-memory store's), or else in the file."""
    return f"database_name = '{database}'" if database else FILE_OBJECTS


def definitions_of(con: duckdb.DuckDBPyConnection, database: str | None = None) -> dict[str, str]:
    """{"table NAME" or "view NAME": its CREATE statement} in `database`, or else in the file."""
    # DuckDB renders each CREATE statement from the catalog entry, not from the text it was given, so a
    # file's and an in-memory store's compare alike whichever DuckDB wrote the file.
    where = _in(database)
    rows = con.execute(
        f"""SELECT 'table ' || table_name, sql FROM system.main.duckdb_tables()
            WHERE schema_name = 'main' AND {where}
        UNION ALL SELECT 'view ' || view_name, sql FROM system.main.duckdb_views()
            WHERE NOT internal AND schema_name = 'main' AND {where}"""
    ).fetchall()
    return dict(rows)


def schema_of(con: duckdb.DuckDBPyConnection, database: str | None = None) -> dict[str, frozenset]:
    """{table or view name: frozenset of (column, type)} in `database`, or else in the file; the
    schemas other than main under SCHEMAS."""
    where = "schema_name = 'main' AND " + _in(database)
    out: dict[str, set] = {}
    for (schema,) in con.execute(
        "SELECT schema_name FROM system.main.duckdb_schemas() WHERE NOT internal AND " + _in(database)
    ).fetchall():
        out.setdefault(SCHEMAS, set()).add((schema, "SCHEMA"))
    for table, column, dtype in con.execute(
        f"SELECT table_name, column_name, data_type FROM system.main.duckdb_columns() WHERE {where}"
    ).fetchall():
        out.setdefault(table, set()).add((column, dtype))
    return {t: frozenset(c) for t, c in out.items()}
