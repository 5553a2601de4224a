"""A miner's input read in batches of whole items, so its memory does not grow with the number of
generations.

    for rows in item_batches(store, "SELECT ... FROM generations g JOIN problems p ...", [model],
                             key="problem_id", order=("problem_id", "sample_index", "gen_id")):
        ...   # dicts in `order`; every row of one problem in one list

Two kinds of query run on a cursor of its own (a second connection to the same store), and the miner
writes through store.con meanwhile:

- the items: each value of `key` and its row count, in order (small: a key and a count per item), all
  read before the first batch;
- the rows of each batch: `key BETWEEN first AND last` item of the batch, sorted by `order`.

Each query is a read transaction of its own, ended when its rows are read. An open transaction, a
reader's too, keeps DuckDB from checkpointing what the miner commits meanwhile (each batch's verdicts),
so one read transaction around every batch would hold every verdict written in memory. What the miner
writes (verdicts, pairs) is not what its query selects on, and a store has one writing process (the
miner's), so the batches read the rows the item query counted.

One sorted query over every row would not do: DuckDB holds its whole sorted result in memory until
the last row is read (about 1.5 KB per generation in the miners' queries), so the process grows with
the number of generations. A batch holds as many whole items as fit in BATCH_ROWS rows, an item larger
than that a batch of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

    from pairstore.store.store import Store

# Rows (generations) per batch: about 4 KB each in Python while a batch is mined, so 20 MB a batch.
BATCH_ROWS = 5_000

# Items (key and row count) read at a time from the item query.
_ITEM_CHUNK = 65_536


def item_batches(
    store: Store,
    sql: str,
    params: Sequence[object],
    *,
    key: str,
    order: Sequence[str],
    batch_rows: int | None = None,
) -> Iterator[list[dict]]:
    """The rows of `sql` (unordered; `key` and every column of `order` among its output columns) as
    lists of dicts sorted by `order` (key first), each holding whole items (the rows of one value of
    `key`, never NULL): as many items as fit in `batch_rows` rows (default BATCH_ROWS), or one item
    alone where it has more."""
    if not order or order[0] != key:
        raise ValueError(f"order must start with the key {key!r}: {list(order)}")
    size = max(1, batch_rows or BATCH_ROWS)
    cursor = store.con.cursor()
    try:
        ranges = list(_item_ranges(cursor, sql, params, key, size))  # two keys a batch
        for first, last in ranges:
            yield _rows(cursor, sql, params, key, order, first, last)
    finally:
        cursor.close()


def _item_ranges(
    cursor: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object], key: str, size: int
) -> Iterator[tuple[object, object]]:
    """(first key, last key) of each batch: as many whole items as fit in `size` rows, or one alone."""
    items = cursor.sql(
        f'SELECT "{key}" AS key, count(*) AS n FROM ({sql}) GROUP BY ALL ORDER BY key', params=list(params)
    ).to_arrow_reader(_ITEM_CHUNK)
    first = last = None
    rows = 0
    for record_batch in items:
        for item in record_batch.to_pylist():
            if item["key"] is None:
                raise ValueError(f"{key} is NULL in a row of the miner's query")
            if rows and rows + item["n"] > size:
                yield first, last
                rows = 0
            if not rows:
                first = item["key"]
            last = item["key"]
            rows += item["n"]
    if rows:
        yield first, last


def _rows(
    cursor: duckdb.DuckDBPyConnection,
    sql: str,
    params: Sequence[object],
    key: str,
    order: Sequence[str],
    first: object,
    last: object,
) -> list[dict]:
    """The rows of `sql` whose key lies in [first, last], sorted by `order`."""
    by = ", ".join(f'"{c}"' for c in order)
    return (
        cursor.sql(
            f'SELECT * FROM ({sql}) WHERE "{key}" BETWEEN ? AND ? ORDER BY {by}',
            params=[*params, first, last],
        )
        .to_arrow_table()
        .to_pylist()
    )
