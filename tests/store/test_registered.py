"""Store.registered lets go of an Arrow table when its block ends, even inside a long transaction.

DuckDB keeps a view dropped inside a transaction until the transaction ends, with what the view reads.
An ingest registers each batch inside its one transaction (a miner, inside a caller's); held, every
batch it read would stay in memory until the commit. These tests count the Arrow memory still
allocated while the transaction is open: without the holder in Store.registered they hold every batch.
"""

from __future__ import annotations

import gc

import pyarrow as pa
import pytest

from pairstore.store.store import open_store
from pairstore.tables.pairs import Origin, Pair, PairStage, pair_rows

BATCHES, ROWS = 6, 20_000
PAIRS = 2_000  # pairs a batch: each is checked, hashed and keyed in Python


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


def test_a_miners_staged_pairs_hold_no_batch_until_the_commit(tmp_path):
    def pairs(i: int) -> list[Pair]:
        return [
            Pair(
                prompt=f"question {i}-{j}",
                chosen=f"right {i}-{j} " * 20,
                rejected=f"wrong {i}-{j} " * 20,
                source="self_repair",
                origins=[Origin("generation", f"g{i}-{j}", "wrong sample")],
            )
            for j in range(PAIRS)
        ]

    with open_store(tmp_path / "s.duckdb") as store, store.transaction():
        with PairStage(store, miner="test", miner_version="1") as stage:
            gc.collect()
            before = pa.total_allocated_bytes()
            for i in range(BATCHES):
                stage.add(pairs(i))
            gc.collect()
            held = pa.total_allocated_bytes() - before
            one = pair_rows(pairs(0), miner="test", miner_version="1")[1].nbytes
            assert held < one, f"{held:,} bytes of Arrow memory held after {BATCHES} batches of {one:,}"
            assert stage.commit().added == BATCHES * PAIRS


def test_a_bulk_write_bounds_duckdbs_memory_and_keeps_a_lower_limit(tmp_path):
    """Ingests and mines run under bounded_memory: DuckDB spills beyond BULK_MEMORY_LIMIT; a lower limit
    the caller set stays, and the connection's own comes back after (as DuckDB shows it, to a per cent)."""
    from pairstore.store.store import BULK_MEMORY_LIMIT, _size_bytes, bounded_memory

    def limit(store) -> str:
        return store.scalar("SELECT current_setting('memory_limit')")

    with open_store(tmp_path / "s.duckdb") as store:
        own = limit(store)
        with bounded_memory(store.con):
            assert limit(store) == f"{BULK_MEMORY_LIMIT / (1 << 20):.1f} MiB"
        assert abs(_size_bytes(limit(store)) - _size_bytes(own)) <= 0.01 * _size_bytes(own)
        store.con.execute("SET memory_limit = '64MB'")
        with bounded_memory(store.con):
            assert limit(store) == "61.0 MiB"
        assert limit(store) == "61.0 MiB"


def test_a_failed_statement_inside_a_registration_raises_its_own_error(tmp_path):
    """A statement that fails aborts the transaction; DuckDB then refuses the unregister as well. The
    error raised is the statement's (here a conversion), not "Current transaction is aborted"."""
    import duckdb

    with open_store(tmp_path / "s.duckdb") as store:
        with pytest.raises(duckdb.ConversionException), store.transaction():
            with store.registered("_t", pa.table({"a": ["x"]})):
                store.con.execute("SELECT CAST(a AS INTEGER) FROM _t").fetchall()
        with store.registered("_t", pa.table({"a": ["1"]})):  # the name is free again
            assert store.scalar("SELECT CAST(a AS INTEGER) FROM _t") == 1
