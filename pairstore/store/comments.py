"""COMMENTs on every table, view and column, read from the schema's one description (docs/schema.md).

The package carries that file as `pairstore/store/schema.md` (a link to docs/schema.md, copied into a
wheel), so the comments a DuckDB client shows (`duckdb_tables()`, `duckdb_columns()`, DBeaver's
tooltips) and the documentation are one text and cannot drift. `apply_comments` runs after the
migrations of every writable open and touches only comments that differ.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

_HEADING = re.compile(r"^#{2,3} (\w+)\s*$")
_ROW = re.compile(r"^\| (\w+) \| ([^|]+) \| (.*) \|\s*$")


@dataclass(frozen=True)
class DocumentedTable:
    name: str
    description: str
    columns: dict[str, str] = field(default_factory=dict)  # column -> meaning


def _plain(text: str) -> str:
    """Markdown inline code marks dropped and whitespace collapsed: what a SQL client shows."""
    return " ".join(text.replace("`", "").split())


def parse_schema_doc(text: str) -> dict[str, DocumentedTable]:
    """Every `## name` / `### name` section with a column table: its first paragraph and each row's
    meaning. Sections without a column table (the prose ones, "Views") are left out."""
    tables: dict[str, DocumentedTable] = {}
    name = None
    paragraph: list[str] = []
    columns: dict[str, str] = {}

    def close() -> None:
        if name and columns:
            tables[name] = DocumentedTable(name, _plain(" ".join(paragraph)), dict(columns))

    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            close()
            name, paragraph, columns = heading.group(1), [], {}
            continue
        if name is None:
            continue
        row = _ROW.match(line)
        if row:
            if row.group(1) != "column":
                columns[row.group(1)] = _plain(row.group(3))
        elif line.strip() and not line.startswith("|") and not columns:
            paragraph.append(line.strip())
    close()
    return tables


def schema_doc_text() -> str:
    return resources.files("pairstore.store").joinpath("schema.md").read_text(encoding="utf-8")


@functools.cache
def _parsed_schema_doc() -> dict[str, DocumentedTable]:
    # Read once a process: the file is the package's own, and a process that opens the store again (the
    # web app, a bench's warm run) parsed its 1,700 lines at every open (1.1 ms).
    return parse_schema_doc(schema_doc_text())


def documented_schema() -> dict[str, DocumentedTable]:
    """The parsed docs/schema.md, a copy of its own for the caller to change (the process's one parse
    stays as the file says)."""
    return {
        name: DocumentedTable(t.name, t.description, dict(t.columns))
        for name, t in _parsed_schema_doc().items()
    }


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def comment_statements(
    con: duckdb.DuckDBPyConnection, docs: dict[str, DocumentedTable] | None = None
) -> list[str]:
    """The COMMENT statements that bring the store's comments to the documented text (none when they
    already agree). Objects the documentation does not name are left alone: tests/store/test_schema_docs.py
    fails on those."""
    docs = _parsed_schema_doc() if docs is None else docs
    objects = con.execute(
        "SELECT table_name, 'TABLE', coalesce(comment, '') FROM duckdb_tables() "
        "WHERE schema_name = 'main' AND database_name = current_database() "
        "UNION ALL SELECT view_name, 'VIEW', coalesce(comment, '') FROM duckdb_views() "
        "WHERE schema_name = 'main' AND database_name = current_database() AND NOT internal"
    ).fetchall()
    columns = con.execute(
        "SELECT table_name, column_name, coalesce(comment, '') FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND database_name = current_database() AND NOT internal"
    ).fetchall()
    out = []
    for name, kind, comment in sorted(objects):
        doc = docs.get(name)
        if doc and doc.description and comment != doc.description:
            out.append(f"COMMENT ON {kind} {_ident(name)} IS {_literal(doc.description)}")
    for table, column, comment in sorted(columns):
        doc = docs.get(table)
        meaning = doc.columns.get(column) if doc is not None else None
        if meaning and comment != meaning:
            out.append(f"COMMENT ON COLUMN {_ident(table)}.{_ident(column)} IS {_literal(meaning)}")
    return out


def apply_comments(con: duckdb.DuckDBPyConnection) -> int:
    """Bring every documented comment up to date in one transaction; returns how many changed."""
    statements = comment_statements(con)
    if not statements:
        return 0
    con.execute("BEGIN TRANSACTION")
    try:
        # One call for all of them: a new store has a few hundred, and each call has its own overhead.
        con.execute(";\n".join(statements))
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return len(statements)
