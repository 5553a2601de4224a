"""docs/schema.md documents every table, view and column of a fresh store."""

from __future__ import annotations

import re

from tests.paths import ROOT

DOC = ROOT / "docs" / "schema.md"


def documented() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#{2,3} (\w+)\s*$", line)
        if m:
            current = m.group(1)
            out.setdefault(current, set())
            continue
        m = re.match(r"^\| (\w+) \|", line)
        if m and current and m.group(1) != "column":
            out[current].add(m.group(1))
    return out


def test_every_column_is_documented(store):
    docs = documented()
    cols = store.con.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'"
    ).fetchall()
    missing = sorted(f"{t}.{c}" for t, c in cols if c not in docs.get(t, set()))
    assert not missing, f"undocumented in docs/schema.md: {', '.join(missing)}"


def test_no_documented_column_is_stale(store):
    cols = {
        (t, c)
        for t, c in store.con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'"
        ).fetchall()
    }
    tables = {t for t, _ in cols}
    stale = sorted(
        f"{t}.{c}" for t, cs in documented().items() if t in tables for c in cs if (t, c) not in cols
    )
    assert not stale, f"documented but not in the store: {', '.join(stale)}"


def test_every_table_view_and_column_carries_its_documented_comment(store):
    """The SQL comments are the documented text, object by object: none missing, none stale."""
    from pairstore.store.comments import documented_schema

    docs = documented_schema()
    objects = store.con.execute(
        "SELECT table_name, comment FROM duckdb_tables() WHERE schema_name = 'main' "
        "UNION ALL SELECT view_name, comment FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal"
    ).fetchall()
    assert objects
    wrong = [name for name, comment in objects if not comment or comment != docs[name].description]
    assert not wrong, f"tables/views whose comment is not their docs/schema.md paragraph: {wrong}"
    columns = store.con.execute(
        "SELECT table_name, column_name, comment FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND NOT internal"
    ).fetchall()
    wrong = [f"{t}.{c}" for t, c, comment in columns if not comment or comment != docs[t].columns[c]]
    assert not wrong, f"columns whose comment is not their docs/schema.md meaning: {wrong}"


def test_comments_follow_the_doc_when_it_changes(db_path):
    """A changed description reaches the store on the next writable open; an unchanged one writes nothing."""
    from pairstore.store import comments
    from pairstore.store.store import open_store

    with open_store(db_path) as s:
        assert comments.apply_comments(s.con) == 0
        docs = comments.documented_schema()
        docs["battles"].columns["vote"] = "edited meaning"
        statements = comments.comment_statements(s.con, docs)
        # the caller's edit stays in the caller's copy: the process's one parse of the file is unchanged
        assert comments.documented_schema()["battles"].columns["vote"] != "edited meaning"
        assert comments.apply_comments(s.con) == 0
    assert statements == ['COMMENT ON COLUMN "battles"."vote" IS \'edited meaning\'']


def test_the_packaged_schema_doc_is_docs_schema_md():
    from pairstore.store.comments import schema_doc_text

    assert schema_doc_text() == DOC.read_text(encoding="utf-8")
