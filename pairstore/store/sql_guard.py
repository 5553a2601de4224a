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
from collections.abc import Callable, Iterable
from typing import NoReturn

import duckdb

from pairstore.errors import BadInput, duckdb_message

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


def _walk(node: object, fail: Callable[[str], NoReturn]) -> None:
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
                "only the store's own tables may be read, not "
                + ".".join(
                    p
                    for p in (node.get("catalog_name"), node.get("schema_name"), node.get("table_name"))
                    if p
                )
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


def check_condition(fragment: object, *, field: str, path: str | None = None, line: int | None = None) -> str:
    """The fragment, stripped, when it is exactly one safe boolean expression; else
    BadInput naming `field`."""

    def fail(reason: str) -> NoReturn:
        raise BadInput(f"{field} must be one SQL condition: {reason}", path=path, line=line, field=field)

    if not isinstance(fragment, str) or not fragment.strip():
        fail("it is empty")
    fragment = fragment.strip()
    if len(fragment) > MAX_CHARS:
        fail(f"it is longer than {MAX_CHARS:,} characters")
    try:
        tokens = _tokens(fragment)
    except (duckdb.Error, RuntimeError) as e:
        fail(f"not valid SQL ({duckdb_message(e)})")
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
        fail(f"not valid SQL ({duckdb_message(e)})")
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


# ---------------------------------------------------------------------------- `pairstore sql --write`

# The one schema `pairstore sql --write` may create, change and drop objects in.
USER_SCHEMA = "scratch"
# What --write may run. Everything else (SET, PRAGMA, CALL, VACUUM, CHECKPOINT, EXPORT, ...) is refused.
WRITE_STATEMENTS = {"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "EXPLAIN"}
_CREATABLE = {"TABLE", "VIEW"}
_SKIP_WORDS = {"OR", "REPLACE", "TEMP", "TEMPORARY", "PERSISTENT", "IF", "NOT", "EXISTS", "UNIQUE"}


def _object_name(tokens: list[tuple[str, str]], start: int) -> list[str]:
    """The dotted name at tokens[start:] (quoted or not), its parts lower-cased and unquoted."""
    parts, k = [], start
    while k < len(tokens):
        text, kind = tokens[k]
        if kind not in ("identifier", "keyword"):
            break
        parts.append(text.strip('"').lower())
        if k + 1 < len(tokens) and tokens[k + 1][0] == ".":
            k += 2
            continue
        break
    return parts


def _in_user_schema(parts: list[str], main_objects: set[str], *, creating: bool) -> bool:
    """A name inside the user's schema: `scratch.x` (or `<catalog>.scratch.x`), or a bare name that runs in
    it and is not one of pairstore's objects (DROP/ALTER only: a bare CREATE would land in main)."""
    if len(parts) >= 2:
        return parts[-2] == USER_SCHEMA and (len(parts) == 2 or parts[-3] not in ("system", "temp"))
    return len(parts) == 1 and not creating and parts[0] not in main_objects


def check_write_statements(
    statements: Iterable[duckdb.Statement], main_objects: set[str], protected: tuple[str, ...]
) -> None:
    """Refuse, before anything runs, a --write statement that could change what pairstore computes: a macro
    or function, a schema, a type, a secret or a sequence; a table or view outside `scratch`; ALTER, DROP,
    COMMENT or rename of pairstore's objects; a write to a PROTECTED table; any statement outside
    WRITE_STATEMENTS. `main_objects`: the names of the store's own tables and views."""

    def refuse(st: duckdb.Statement, reason: str) -> NoReturn:
        query = " ".join(st.query.split())
        raise BadInput(f"--write refuses {query[:80]!r}: {reason}; nothing was committed")

    for st in statements:
        kind = st.type.name
        if kind not in WRITE_STATEMENTS:
            refuse(st, f"{kind} statements are not allowed with --write")
        tokens = [(t, k) for t, k in _tokens(st.query) if k != "comment"]
        words = [t.upper() if k == "keyword" else None for t, k in tokens]
        if kind == "CREATE":
            k = 1
            while k < len(words) and words[k] in _SKIP_WORDS:
                k += 1
            made = words[k] if k < len(words) else None
            if made not in _CREATABLE:
                refuse(
                    st, f"--write creates only tables and views in schema {USER_SCHEMA!r}, not {made or '?'}"
                )
            k += 1
            while k < len(words) and words[k] in _SKIP_WORDS:
                k += 1
            temp = {"TEMP", "TEMPORARY"} & set(words[1:k])
            parts = _object_name(tokens, k)
            if not temp and not _in_user_schema(parts, main_objects, creating=True):
                refuse(
                    st,
                    f"user tables and views go in schema {USER_SCHEMA!r} "
                    f"(CREATE TABLE {USER_SCHEMA}.name ...)",
                )
        elif kind in ("DROP", "ALTER"):
            k = 1
            if kind == "ALTER" and words[0] == "COMMENT":  # COMMENT ON TABLE|VIEW|COLUMN name
                k = 2
            elif words[k] not in _CREATABLE:
                refuse(st, f"{kind} applies only to tables and views in schema {USER_SCHEMA!r}")
            k += 1
            while k < len(words) and words[k] in _SKIP_WORDS:
                k += 1
            parts = _object_name(tokens, k)
            if words[0] == "COMMENT" and words[2] == "COLUMN":
                parts = parts[:-1]
            if not _in_user_schema(parts, main_objects, creating=False):
                refuse(
                    st,
                    f"pairstore's tables and views are changed only by pairstore; use schema {USER_SCHEMA!r}",
                )
        elif kind in ("INSERT", "UPDATE", "DELETE"):
            # The statement's own verb at depth 0 (after any WITH clause), then its target.
            depth, target = 0, None
            for k, (text, tkind) in enumerate(tokens):
                if tkind == "operator":
                    depth += text.count("(") - text.count(")")
                    continue
                w = words[k]
                if depth == 0 and w in ("INSERT", "UPDATE", "DELETE", "TRUNCATE"):
                    j = k + 1
                    while j < len(words) and words[j] in ("INTO", "FROM", "OR", "REPLACE", "IGNORE", "TABLE"):
                        j += 1
                    target = _object_name(tokens, j)
                    break
            name = target[-1] if target else None
            in_main = target is not None and (len(target) == 1 or target[-2] == "main")
            if name is None or (in_main and name in protected):
                refuse(
                    st,
                    f"{name or 'its target'} changes only through pairstore's own commands, "
                    "which log every change",
                )
