"""`pairstore sql`: run SQL against the store, read-only unless asked to write.

    pairstore sql "SELECT source, count(*) FROM pairs GROUP BY 1"
    pairstore sql --write "<one or more statements>"      # all of them or none
    pairstore sql --allow-files "COPY (SELECT * FROM pairs_by_source) TO 'sources.csv'"

- Files and other databases are out of reach unless `--allow-files`: no COPY, ATTACH, INSTALL, LOAD,
  EXPORT/IMPORT DATABASE, and no file-reading function (read_csv, read_text, glob, ...). Besides
  refusing those statements by type, the connection is set to `enable_external_access = false` and
  its configuration locked, so no setting can turn it back on.
- `--write` runs every statement in one transaction: all of them or none. Transaction statements of
  its own (BEGIN, COMMIT, ...) are refused. The tables that change only through their own commands,
  which log every change (PROTECTED), are compared before the commit (their rows and their
  definitions); any change to them rolls everything back and is refused.
"""

from __future__ import annotations

import duckdb

from pairstore.errors import BadInput

# Changed only by holdout add/sample/remove/exempt, export, round attach and the audit log itself.
PROTECTED = ("holdout", "holdout_sets", "holdout_exemptions", "audit_log", "exports", "export_rows")
_FILE_STATEMENTS = {
    duckdb.StatementType.COPY,
    duckdb.StatementType.ATTACH,
    duckdb.StatementType.DETACH,
    duckdb.StatementType.LOAD,
    duckdb.StatementType.EXPORT,
    duckdb.StatementType.COPY_DATABASE,
    duckdb.StatementType.EXTENSION,
}


def _fingerprint(con) -> dict:
    """Per protected table: its definition (object id, columns) and an order-independent hash of its rows."""
    out = {}
    for table in PROTECTED:
        oid = con.execute(
            "SELECT table_oid FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?", [table]
        ).fetchall()
        columns = con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' "
            "AND table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
        rows = (
            con.execute(f"SELECT count(*), sum(hash(t)::HUGEINT) FROM main.{table} t").fetchall()
            if oid
            else None
        )
        out[table] = (oid, columns, rows)
    return out


def _run(con, statements) -> tuple[list[str], list[tuple]]:
    cols: list[str] = []
    rows: list[tuple] = []
    for st in statements:
        cur = con.execute(st)
        cols = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchall() if cols else []
    return cols, rows


def run_sql(
    store, query: str, *, write: bool = False, allow_files: bool = False
) -> tuple[list[str], list[tuple]]:
    """Run `query` (one or more statements); return (columns, rows) of the last. A write needs a store opened
    for writing and leaves PROTECTED as it was. Without `allow_files` the store's connection keeps no
    access to files afterwards (DuckDB cannot turn it back on): open the store again for other work, as
    the CLI does for every command."""
    con = store.con
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as e:
        raise BadInput(f"SQL error: {str(e).splitlines()[0]}") from None
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
        with store.transaction():
            before = _fingerprint(con)
            result = _run(con, statements)
            changed = [t for t, v in _fingerprint(con).items() if v != before[t]]
            if changed:
                raise BadInput(
                    f"--write cannot change {', '.join(changed)}: they change only through their own "
                    "commands, which log every change; nothing was committed"
                )
            return result
    except duckdb.Error as e:
        first = str(e).splitlines()[0]
        if store.read_only and "read-only" in first.lower():
            raise BadInput(f"the store is opened read-only; pass --write to change it ({first})") from None
        if "disabled by configuration" in first or "configuration has been locked" in first:
            raise BadInput(
                f"files and other databases are out of reach without --allow-files ({first})"
            ) from None
        raise BadInput(f"SQL error: {first}" + ("; nothing was committed" if write else "")) from None
