"""Recognising a store before anything touches it.

    version = recognize(con, path, new=not existed)   # the store's schema version, or a refusal

A command opens a file only when it is a pairstore store this pairstore can work on:

- a file that did not exist (DuckDB just made it) is a new store: migrations create the tables;
- a DuckDB file holding tables, views or macros but no `schema_version` is someone else's database:
  BadInput (exit 2), and nothing is added to it;
- a `schema_version` newer than this pairstore's: refused with the version it needs (exit 1);
- a `schema_version` whose rows are not the migrations 1..N in order, or whose tables lack a table or a
  column those migrations make: refused naming the mismatch (exit 1), before any migration runs again;
- a user-defined macro or function (made by any DuckDB client) whose name is a built-in's: refused naming
  it (exit 1). pairstore's SQL (the gate's, the audits') calls built-ins by their plain names; a macro of
  the same name in the file would change their answers;
- a table or view of the migrations defined otherwise than they define it (a default, a constraint, a
  generated column, a view's query; checked on DuckDB's rendering of each CREATE statement): refused
  naming it and where it differs (exit 1). A default on `holdout.removed_at` set by another client would
  make every holdout member added later born removed;
- a trigger (made by any DuckDB 2.x client): refused naming it (exit 1). pairstore makes none, and a
  trigger runs statements of its own inside pairstore's writes: one on `ingests` could delete every
  holdout member at the next ingest, with no audit-log entry, and the next export would let them through.

Every catalog query here names DuckDB's own functions as `system.main.*`, which no macro can shadow.
A damaged file (a checksum that does not match, a block past the end) surfaces as a duckdb.Error;
`damaged_store` turns it into one line naming the file and what to do.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import duckdb

from pairstore.errors import BadInput, PairstoreError
from pairstore.store.catalog import FILE_OBJECTS, SCHEMAS, definitions_of, schema_of

if TYPE_CHECKING:
    from pairstore.store.schema_snapshot import Made


def damaged_store(path: str, error: BaseException) -> PairstoreError:
    """One line for a store DuckDB cannot read or write: what happened and what to do."""
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    low = first.lower()
    if "permission denied" in low:
        return PairstoreError(
            f"cannot open store {path}: permission denied; check the file's and its folder's permissions"
        )
    if "read-only file system" in low:
        return PairstoreError(
            f"cannot write store {path}: the file system is read-only; copy the store elsewhere"
        )
    if "no space left" in low or "disk is full" in low or "could not write" in low:
        return PairstoreError(
            f"cannot write store {path}: no space left on the device; free space and run again"
        )
    return PairstoreError(
        f"store {path} is damaged or not a DuckDB file ({first}); restore it from a backup, or pass --db "
        "with a new path to start a new store"
    )


@functools.cache
def _made_by_migrations(version: int) -> Made:
    """(expected_schema, expected_definitions) of `version`, once a process: saved
    (pairstore.store.schema_snapshot) where the saved copy is this DuckDB's and these migrations', else
    read from an in-memory store that migrations 1..version were run on."""
    from pairstore.store.schema_snapshot import from_scratch, saved

    return saved(version) or from_scratch(version)


def expected_schema(version: int) -> dict[str, frozenset]:
    """{table or view name: frozenset of (column, type)} that migrations 1..version make."""
    return _made_by_migrations(version)[0]


def expected_definitions(version: int) -> dict[str, str]:
    """{"table NAME" or "view NAME": its CREATE statement} of what migrations 1..version make."""
    return _made_by_migrations(version)[1]


def changed_definition(con: duckdb.DuckDBPyConnection, version: int) -> tuple[str, str | None, str] | None:
    """(object, the file's CREATE statement or None, the migrations') of the first table or view the
    migrations make whose definition in the file is not theirs -- a default, a constraint, a generated
    column or a view's query changed by another client, or a view made a table -- or None."""
    have = definitions_of(con)
    for name, sql in sorted(expected_definitions(version).items()):
        if have.get(name) != sql:
            return name, have.get(name), sql
    return None


def _first_difference(have: str, want: str) -> str:
    """Where two CREATE statements part, from the column or clause it happens in."""
    at = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
    start = max(have.rfind(", ", 0, at), have.rfind("(", 0, at)) + 1
    return f"'{have[start : at + 40].strip()}...' where they write '{want[start : at + 40].strip()}...'"


def user_functions(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(schema, name) of every user-defined function and macro in the file, sorted."""
    return con.execute(
        f"""SELECT DISTINCT schema_name, function_name FROM system.main.duckdb_functions()
        WHERE NOT internal AND {FILE_OBJECTS} ORDER BY 1, 2"""
    ).fetchall()


def shadowing_functions(
    con: duckdb.DuckDBPyConnection, user: list[tuple[str, str]] | None = None
) -> list[str]:
    """User-defined functions and macros in the file whose names are built-ins' (schema.name)."""
    user = user_functions(con) if user is None else user
    if not user:
        return []  # the common case: listing the built-ins (thousands) costs a scan of them
    # Compared in Python: any SQL function called here by its plain name could itself be shadowed.
    builtins = {
        name
        for (name,) in con.execute(
            "SELECT DISTINCT function_name FROM system.main.duckdb_functions() WHERE internal"
        ).fetchall()
    }
    return [f"{schema}.{name}" for schema, name in user if name in builtins]


def file_triggers(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(trigger, schema.table it is on) of every trigger in the file, sorted. DuckDB makes triggers only
    in files of storage format v2.0.0 and later (it refuses CREATE TRIGGER in a v1.x file; a test holds
    it to that), so a v1.x file is not searched: the listing scans the catalog (about 5 ms), which
    every open of a store in the v1.x format pairstore writes would pay."""
    (tag,) = con.execute(
        "SELECT tags['storage_version'] FROM system.main.duckdb_databases() "
        "WHERE database_name = system.main.current_database()"
    ).fetchall()[0]
    if tag is not None and str(tag).startswith(("v0.", "v1.")):
        return []
    return con.execute(
        f"""SELECT trigger_name, schema_name || '.' || table_name FROM system.main.duckdb_triggers()
        WHERE {FILE_OBJECTS} ORDER BY 1, 2"""
    ).fetchall()


def recognize(con: duckdb.DuckDBPyConnection, path: str, *, new: bool) -> int:
    """The store's schema version (0 for a new, empty store); raises when it is not one to work on."""
    from pairstore.store.migrations import MIGRATIONS, SCHEMA_VERSION

    try:
        user = user_functions(con)
        shadows = shadowing_functions(con, user)
        if shadows:
            raise PairstoreError(
                f"store {path} holds user-defined function {shadows[0]} with a built-in's name; pairstore's "
                f"SQL would call it instead of DuckDB's. Drop it with another DuckDB client "
                f"(DROP MACRO {shadows[0]}) and run again"
            )
        triggers = file_triggers(con)
        if triggers:
            name, table = triggers[0]
            raise PairstoreError(
                f"store {path} holds trigger {name} on table {table}; pairstore makes none, and a trigger "
                "runs its own statements inside pairstore's writes (it could delete holdout members with no "
                f"log entry). Drop it with another DuckDB client (DROP TRIGGER {name} ON {table}) "
                "and run again"
            )
        objects = con.execute(
            f"""SELECT table_name FROM system.main.duckdb_tables() WHERE {FILE_OBJECTS}
            UNION ALL SELECT view_name FROM system.main.duckdb_views()
                WHERE NOT internal AND {FILE_OBJECTS}"""
        ).fetchall()
        names = {n for (n,) in objects} | {name for _, name in user}
        if not names:
            return 0  # a new file, or an empty DuckDB file: nothing in it to mistake for a store
        if "schema_version" not in names:
            listed = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
            raise BadInput(
                f"{path} is a DuckDB database but not a pairstore store (it holds {listed} and no "
                "schema_version); pass --db with a new path to make a store there"
            )
        rows = con.execute("SELECT version, name FROM main.schema_version ORDER BY version").fetchall()
    except duckdb.Error as e:
        raise damaged_store(path, e) from None
    version = rows[-1][0] if rows else 0
    if version > SCHEMA_VERSION:
        raise PairstoreError(
            f"store {path} is at schema version {version}, made by a newer pairstore; this one knows "
            f"versions up to {SCHEMA_VERSION}: upgrade pairstore to one with migration {version}"
        )
    expected = [(i, fn.__name__) for i, fn in enumerate(MIGRATIONS[:version], start=1)]
    if [tuple(r) for r in rows] != expected:
        have = {v: n for v, n in rows}
        wrong = next(
            (
                f"version {v} should be {n!r}, the store has {have.get(v)!r}"
                for v, n in expected
                if have.get(v) != n
            ),
            f"it lists {len(rows)} rows for {version} versions",
        )
        raise PairstoreError(
            f"store {path}: schema_version does not match this pairstore's migrations ({wrong}); "
            "the store was changed outside pairstore: restore it from a backup"
        )
    try:
        have_schema = schema_of(con)
    except duckdb.Error as e:
        raise damaged_store(path, e) from None
    for table, columns in sorted(expected_schema(version).items()):
        if table == SCHEMAS:
            continue
        if table not in have_schema:
            raise PairstoreError(
                f"store {path} is at schema version {version} but has no table {table!r}; the store was "
                "changed outside pairstore: restore it from a backup"
            )
        missing = sorted(columns - have_schema[table])
        if missing:
            col, dtype = missing[0]
            raise PairstoreError(
                f"store {path} is at schema version {version} but {table}.{col} is not {dtype} "
                "(missing or another type); the store was changed outside pairstore: restore it from a backup"
            )
    later = {(t, c) for t, cols in expected_schema(SCHEMA_VERSION).items() for c in cols} - {
        (t, c) for t, cols in expected_schema(version).items() for c in cols
    }
    ahead = sorted((t, c) for t, cols in have_schema.items() for c in cols if (t, c) in later)
    if ahead:
        (table, (col, _)) = ahead[0]
        what = f"schema {col}" if table == SCHEMAS else f"{table}.{col}"
        raise PairstoreError(
            f"store {path} says schema version {version} but already has {what}, which a later "
            "migration adds (a schema_version row was removed?); restore the store from a backup"
        )
    try:
        changed = changed_definition(con, version)
    except duckdb.Error as e:
        raise damaged_store(path, e) from None
    if changed is not None:
        name, file_sql, migrations_sql = changed
        how = (
            f"it is not a {name.split()[0]}"
            if file_sql is None
            else _first_difference(file_sql, migrations_sql)
        )
        raise PairstoreError(
            f"store {path}: {name} is not what this pairstore's migrations make ({how}); another client "
            "changed it, and pairstore's own statements would then do something else (a default that "
            "removes every new holdout member, say): restore the store from a backup"
        )
    return version
