"""A miner's input read in batches of whole items, so its memory does not grow with the number of
generations.

    for rows in item_batches(store, "SELECT ... ORDER BY p.problem_id, ...", [model], key="problem_id"):
        ...   # dicts in the query's order; every row of one problem in one list

The query runs on a cursor of its own (a second connection to the same store), so the miner writes
through store.con while the rows stream in. DuckDB sorts them (spilling to disk beyond its memory limit)
and hands them over BATCH_ROWS at a time; a batch holds as many whole items as fit in BATCH_ROWS rows,
an item larger than that a batch of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pairstore.store.store import Store

# Rows (generations) per batch: about 4 KB each in Python while a batch is mined.
BATCH_ROWS = 20_000


def item_batches(
    store: Store, sql: str, params: Sequence[object], *, key: str, batch_rows: int | None = None
) -> Iterator[list[dict]]:
    """The rows of `sql` (ordered by `key` first) as lists of dicts, each holding whole items (the rows
    of one value of `key`): as many items as fit in `batch_rows` rows (default BATCH_ROWS), or one item
    alone where it has more."""
    size = max(1, batch_rows or BATCH_ROWS)
    cursor = store.con.cursor()
    try:
        reader = cursor.sql(sql, params=list(params)).to_arrow_reader(size)
        batch: list[dict] = []
        item: list[dict] = []  # the rows of the item being read
        for record_batch in reader:
            for row in record_batch.to_pylist():
                if item and row[key] != item[0][key]:
                    if batch and len(batch) + len(item) > size:
                        yield batch
                        batch = []
                    batch += item
                    item = []
                item.append(row)
        if batch and len(batch) + len(item) > size:
            yield batch
            batch = []
        if batch + item:
            yield batch + item
    finally:
        cursor.close()
