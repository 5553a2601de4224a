"""One validator for every SQL fragment a user gives: a recipe's `where`, `holdout sample --where`,
`mine battle --where`.

    cond = check_condition(where, field="mix[0].where")
    con.execute(f"SELECT ... FROM (SELECT * FROM pairs WHERE source = ?) AS pairs WHERE {cond}", [source])

A fragment must be exactly one boolean expression: no `;`, no comment, parentheses balanced on their
own (so `1=0) OR (source = 'x'` cannot close the caller's parenthesis), no statement of any kind, no
table function (read_csv, glob, query, ...), no table outside the store's own schema, and no function
with a side effect or a result that changes from run to run (nextval, setseed, random, now, getenv,
...). It is parsed by DuckDB's own parser (json_serialize_sql) and every node of the tree is checked.
The caller applies it inside a subquery already limited to what the fragment may narrow, so it can only
take rows away. A refusal is BadInput (exit 2) naming the field; nothing has run, so nothing is
committed.
"""

from __future__ import annotations

import functools
import json

import duckdb

from pairstore.errors import BadInput

MAX_CHARS = 10_000
# Side effects, clocks, randomness, the environment, files and other databases.
FORBIDDEN_FUNCTIONS = frozenset(
    """
    nextval currval setseed random uuid gen_random_uuid uuidv4 uuidv7 now today transaction_timestamp
    localtime localtimestamp getenv checkpoint force_checkpoint glob query query_table sql_auto_complete
    which_secret icu_calendar_names enable_logging disable_logging truncate_duckdb_logs
""".split()
)
FORBIDDEN_PREFIXES = (
    "read_",
    "duckdb_",
    "pragma_",
    "parquet_",
    "sniff_",
    "current_",
    "get_current",
    "pg_",
    "iceberg_",
    "delta_",
    "postgres_",
    "sqlite_",
    "mysql_",
    "http",
    "s3_",
)


@functools.cache
def _parser() -> duckdb.DuckDBPyConnection:
    """An in-memory connection that only parses (json_serialize_sql never runs the statement)."""
    return duckdb.connect()


def _tokens(fragment: str) -> list[tuple[str, str]]:
    """(token text, token type name) of the fragment."""
    toks = duckdb.tokenize(fragment)
    out = []
    for k, (pos, kind) in enumerate(toks):
        end = toks[k + 1][0] if k + 1 < len(toks) else len(fragment)
        out.append((fragment[pos:end].strip(), kind.name))
    return out


def _walk(node, fail) -> None:
    if isinstance(node, list):
        for v in node:
            _walk(v, fail)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "TABLE_FUNCTION":
        fail("table functions (read_csv, glob, query, ...) are not allowed")
    if node.get("type") == "BASE_TABLE":
        if node.get("catalog_name") or node.get("schema_name") not in ("", "main"):
            fail(
                f"only the store's own tables may be read, not "
                f"{'.'.join(p for p in (node.get('catalog_name'), node.get('schema_name'), node.get('table_name')) if p)}"
            )
    name = None
    if node.get("class") == "FUNCTION":
        name = str(node.get("function_name", "")).lower()
    elif node.get("class") == "COLUMN_REF" and len(node.get("column_names") or []) == 1:
        name = str(node["column_names"][0]).lower()  # current_timestamp, current_date: functions in disguise
    if name and (name in FORBIDDEN_FUNCTIONS or name.startswith(FORBIDDEN_PREFIXES)):
        fail(f"{name}() is not allowed: a condition must be deterministic, read-only and inside the store")
    for v in node.values():
        _walk(v, fail)


def check_condition(fragment, *, field: str, path: str | None = None, line: int | None = None) -> str:
    """The fragment, stripped, when it is exactly one safe boolean expression; else BadInput naming `field`."""

    def fail(reason: str):
        raise BadInput(f"{field} must be one SQL condition: {reason}", path=path, line=line, field=field)

    if not isinstance(fragment, str) or not fragment.strip():
        fail("it is empty")
    fragment = fragment.strip()
    if len(fragment) > MAX_CHARS:
        fail(f"it is longer than {MAX_CHARS:,} characters")
    try:
        tokens = _tokens(fragment)
    except (duckdb.Error, RuntimeError) as e:
        fail(f"not valid SQL ({str(e).splitlines()[0]})")
    depth = 0
    for text, kind in tokens:
        if kind == "comment":
            fail("comments are not allowed")
        if kind == "operator":
            if ";" in text:
                fail("';' (a second statement) is not allowed")
            depth += text.count("(") - text.count(")")
            if depth < 0:
                fail("a ')' closes a parenthesis the condition did not open")
    if depth:
        fail("its parentheses are not balanced")
    sql = f"SELECT 1 FROM __condition WHERE ({fragment})"
    try:
        parsed = json.loads(_parser().execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0])
    except duckdb.Error as e:
        fail(f"not valid SQL ({str(e).splitlines()[0]})")
    if parsed.get("error"):
        fail(f"not valid SQL ({parsed.get('error_message', '').splitlines()[0]})")
    statements = parsed.get("statements") or []
    if len(statements) != 1 or statements[0].get("node", {}).get("type") != "SELECT_NODE":
        fail("exactly one expression, no statement")
    node = statements[0]["node"]
    if node.get("from_table", {}).get("table_name") != "__condition" or node.get("where_clause") is None:
        fail("exactly one expression, no statement")
    _walk(node["where_clause"], fail)
    return fragment
