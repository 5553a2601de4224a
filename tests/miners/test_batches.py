"""miners.batches.item_batches: a sorted query's rows in batches of whole items."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from miners.batches import item_batches


class _Store:
    """What item_batches uses of a Store: its connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con


@pytest.fixture(scope="module")
def con():
    con = duckdb.connect()
    yield con
    con.close()


@given(
    counts=st.lists(st.integers(min_value=1, max_value=7), max_size=30),
    batch_rows=st.integers(min_value=1, max_value=12),
)
def test_batches_hold_every_row_in_order_and_never_split_an_item(con, counts, batch_rows):
    rows = [(f"item{i:03d}", k) for i, n in enumerate(counts) for k in range(n)]
    con.execute("CREATE OR REPLACE TABLE t (item VARCHAR, k INTEGER)")
    if rows:
        con.executemany("INSERT INTO t VALUES (?, ?)", rows[::-1])  # stored out of order: the query sorts
    batches = list(
        item_batches(
            _Store(con), "SELECT item, k FROM t", [], key="item", order=("item", "k"), batch_rows=batch_rows
        )
    )
    assert [(r["item"], r["k"]) for b in batches for r in b] == rows
    for i, batch in enumerate(batches):
        items = [r["item"] for r in batch]
        # whole items, as many as fit: at most batch_rows rows, or one item alone that has more
        assert len(batch) <= batch_rows or len(set(items)) == 1
        if i < len(batches) - 1:
            following = batches[i + 1]
            assert items[-1] != following[0]["item"]  # an item is never split
            first_next = [r for r in following if r["item"] == following[0]["item"]]
            assert len(batch) + len(first_next) > batch_rows  # the next item did not fit


def test_no_transaction_is_held_between_batches_so_the_miners_commits_can_be_checkpointed(tmp_path):
    """A miner commits each batch's verdicts between batches; DuckDB can checkpoint them (and let go of
    their old values) only while no other transaction is open. With one read transaction around every
    batch, as before, the CHECKPOINT below fails with "there are other write transactions active"."""
    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    con.execute("CREATE TABLE t (item VARCHAR, k INTEGER, verdict VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, NULL)", [("a", 0), ("b", 0), ("c", 0)])
    batches = item_batches(
        _Store(con), "SELECT item, k FROM t", [], key="item", order=("item", "k"), batch_rows=1
    )
    seen = []
    for batch in batches:
        seen.append(batch)
        con.execute("BEGIN")
        con.execute("UPDATE t SET verdict = 'correct' WHERE item = ?", [batch[0]["item"]])
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    assert seen == [[{"item": "a", "k": 0}], [{"item": "b", "k": 0}], [{"item": "c", "k": 0}]]
    assert con.execute("SELECT count(*) FROM t WHERE verdict = 'correct'").fetchall() == [(3,)]
    con.close()


def test_a_null_key_or_an_order_not_led_by_the_key_is_refused(con):
    con.execute("CREATE OR REPLACE TABLE t (item VARCHAR, k INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [("a", 0), (None, 1)])
    with pytest.raises(ValueError, match="NULL"):
        list(item_batches(_Store(con), "SELECT item, k FROM t", [], key="item", order=("item", "k")))
    with pytest.raises(ValueError, match="must start with the key"):
        list(item_batches(_Store(con), "SELECT item, k FROM t", [], key="item", order=("k", "item")))
