"""Store.registered lets go of an Arrow table when its block ends, even inside a long transaction.

DuckDB keeps a view dropped inside a transaction until the transaction ends, with what the view reads.
A miner or an ingest registers each batch inside its one transaction; held, every batch it read would
stay in memory until the commit. These tests count the Arrow memory still allocated while the
transaction is open: without the holder in Store.registered they hold every batch.
"""

from __future__ import annotations

import gc

import pyarrow as pa
import pytest

from pairstore.store.store import open_store
from pairstore.tables.generations import VERDICT_SCHEMA, staged_verdicts

BATCHES, ROWS = 6, 20_000


def _batch(i: int) -> pa.Table:
    return pa.table({"a": [f"batch {i} row {j} " * 4 for j in range(ROWS)]})


def test_a_table_registered_inside_a_transaction_is_let_go_when_its_block_ends(tmp_path):
    with open_store(tmp_path / "s.duckdb") as store, store.transaction():
        store.con.execute("CREATE TEMP TABLE kept (a VARCHAR)")
        gc.collect()
        before = pa.total_allocated_bytes()
        one = _batch(0).nbytes
        for i in range(BATCHES):
            table = _batch(i)
            with store.registered("_b", table):
                store.con.execute("INSERT INTO kept SELECT * FROM _b")
            del table
        gc.collect()
        held = pa.total_allocated_bytes() - before
        assert store.scalar("SELECT count(*) FROM kept") == BATCHES * ROWS
        assert held < one, f"{held:,} bytes of Arrow memory held after {BATCHES} batches of {one:,}"


def test_a_registered_table_reads_the_same_as_duckdbs_own_registration(tmp_path):
    table = pa.table({"k": [3, 1, 2], "s": ["c", None, "b"], "l": [[1], [], None]})
    with open_store(tmp_path / "s.duckdb") as store:
        with store.registered("_t", table):
            ours = store.rows("SELECT * FROM _t ORDER BY k")
            columns = store.rows("SELECT column_name, column_type FROM (DESCRIBE _t)")
        store.con.register("_plain", table)
        theirs = store.rows("SELECT * FROM _plain ORDER BY k")
        plain_columns = store.rows("SELECT column_name, column_type FROM (DESCRIBE _plain)")
        store.con.unregister("_plain")
        assert ours == theirs and columns == plain_columns
        with pytest.raises(Exception, match="_t"):
            store.rows("SELECT * FROM _t")  # gone once the block ends


def test_a_miners_staged_verdicts_hold_no_batch_until_the_commit(tmp_path):
    def verdicts(i: int) -> list[dict]:
        row = {name: None for name in VERDICT_SCHEMA.names}
        return [{**row, "gen_id": f"g{i}-{j}", "verdict_reason": "x" * 40} for j in range(ROWS)]

    with open_store(tmp_path / "s.duckdb") as store, staged_verdicts(store) as stage:
        gc.collect()
        before = pa.total_allocated_bytes()
        for i in range(BATCHES):
            stage.add(verdicts(i))
        gc.collect()
        held = pa.total_allocated_bytes() - before
        one = pa.Table.from_pylist(verdicts(0), schema=VERDICT_SCHEMA).nbytes
        assert held < one, f"{held:,} bytes of Arrow memory held after {BATCHES} batches of {one:,}"
