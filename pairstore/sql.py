"""`pairstore sql`: run one query, read-only unless asked to write."""

from __future__ import annotations

import duckdb

from pairstore.errors import BadInput


def run_sql(store, query: str, *, write: bool = False) -> tuple[list[str], list[tuple]]:
    """Run `query`; return (columns, rows). A write needs a store opened for writing."""
    try:
        if write:
            with store.transaction():
                cur = store.con.execute(query)
                cols = [d[0] for d in cur.description] if cur.description else []
                rows = cur.fetchall() if cols else []
        else:
            cur = store.con.execute(query)
            cols = [d[0] for d in cur.description] if cur.description else []
            rows = cur.fetchall() if cols else []
    except duckdb.Error as e:
        first = str(e).splitlines()[0]
        if store.read_only and "read-only" in first.lower():
            raise BadInput(f"the store is opened read-only; pass --write to change it ({first})") from None
        raise BadInput(f"SQL error: {first}") from None
    return cols, rows
