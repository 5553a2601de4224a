"""docs/schema.md documents every table, view and column of a fresh store."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "schema.md"


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
