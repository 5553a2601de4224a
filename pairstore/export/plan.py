"""Planning a round's mixture: which pairs, how many copies, in SQL over `pairs`.

    with planned_mixture(store, get_round(store, "m11a")) as mix:   # creates the plan's temp table
        run_gate(store, "m11a", mix); write_mixture_file(store, path, mix, "dpo", system_prompt)
    # ... and drops it here

Each `[[mix]]` block selects pairs by source and its `where` (checked by pairstore.store.sql_guard, then
applied inside a subquery already limited to the block's source, so it can only narrow it), then a seeded
`limit` (pairs ordered by keys.seeded_rank(seed, "limit", pair_id), the first `limit` kept; more than there is
= all, noted in the evidence), then `upsample` (integer copies; a fraction adds a partial copy of the pairs
first in keys.seeded_rank(seed, "copy", pair_id) order).

The plan is a MixturePlan: its blocks (what each `[[mix]]` block matched, selected and became) and a
temp table (block, prow, pair_id, kind, copies), prow being the pair's rowid in `pairs`, that only
`planned_mixture` creates and drops; the gate checks it, the writer streams it and the registry records
its rows, each reading the table the plan names (pairstore/export/run.py runs them).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from pairstore.errors import BadInput, duckdb_message
from pairstore.keys import seeded_order
from pairstore.rounds.recipes import DpoRecipe, mix_rows_sql
from pairstore.store.sql_guard import check_condition
from pairstore.store.store import Store


@dataclass
class BlockPlan:
    index: int
    source: str
    where: str | None
    limit: int | None
    upsample: float
    matched: int = 0  # pairs the source and condition select
    selected: int = 0  # after the seeded limit
    rows: int = 0  # after upsampling
    note: str | None = None
    dropped: int = 0  # pairs dropped because they hold held-out text (export --drop-held-out)

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "where": self.where,
            "limit": self.limit,
            "upsample": self.upsample,
            "matched": self.matched,
            "selected": self.selected,
            "rows": self.rows,
            "dropped": self.dropped,
            "note": self.note,
        }


@dataclass(frozen=True)
class MixturePlan:
    """A planned mixture, alive inside `planned_mixture`: its blocks, and the temp table `table` of
    (block INTEGER, prow BIGINT, pair_id VARCHAR, kind VARCHAR, copies INTEGER), one row per selected pair
    of a block with its copies (at least 1)."""

    store: Store
    table: str
    blocks: list[BlockPlan]

    def entries(self) -> int:
        """Rows of the plan's table: (block, pair) entries, copies not counted."""
        return int(self.store.con.execute(f"SELECT count(*) FROM {self.table}").fetchall()[0][0])

    def kinds(self) -> set[str]:
        """The pair kinds the plan holds (dpo, sft)."""
        return {k for (k,) in self.store.con.execute(f"SELECT DISTINCT kind FROM {self.table}").fetchall()}

    def drop_pairs(self, pair_ids: list[str]) -> int:
        """Take these pairs out of every block (the gate's --drop-held-out); each block's `dropped` and
        `rows` follow. Returns the entries left."""
        con = self.store.con
        counts = dict(
            con.execute(
                f"SELECT block, count(*) FROM {self.table} WHERE pair_id IN (SELECT unnest(?::VARCHAR[])) "
                "GROUP BY block",
                [pair_ids],
            ).fetchall()
        )
        con.execute(f"DELETE FROM {self.table} WHERE pair_id IN (SELECT unnest(?::VARCHAR[]))", [pair_ids])
        for plan in self.blocks:
            plan.dropped += int(counts.get(plan.index, 0))
        _count_rows(con, self.table, self.blocks)
        return self.entries()


# One name per plan, so two plans on one connection never share a table.
_plan_numbers = itertools.count()


@contextmanager
def planned_mixture(store: Store, recipe: DpoRecipe) -> Iterator[MixturePlan]:
    """Plan the recipe's mixture into a temp table of its own; the table is dropped on leaving, whatever
    happens inside."""
    table = f"_mix_plan_{next(_plan_numbers)}"
    try:
        blocks = _plan_into(store, recipe, table)
        yield MixturePlan(store, table, blocks)
    finally:
        store.con.execute(f"DROP TABLE IF EXISTS {table}")
        store.con.execute(f"DROP TABLE IF EXISTS {table}_sel")


# -- the plan ------------------------------------------------------------------------


def _plan_into(store: Store, recipe: DpoRecipe, table: str) -> list[BlockPlan]:
    """Fill the temp table `table` (block, prow, pair_id, kind, copies) for the recipe."""
    con = store.con
    seed = recipe.seed
    selected = f"{table}_sel"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {selected} (block INTEGER, prow BIGINT, pair_id VARCHAR, "
        "kind VARCHAR, copies INTEGER)"
    )
    plans = []
    for i, blk in enumerate(recipe.mix):
        plan = BlockPlan(i, blk.source, blk.where, blk.limit, blk.upsample)
        rows = mix_rows_sql(check_condition(blk.where, field=f"mix[{i}].where") if blk.where else None)
        whole = int(blk.upsample)
        frac = blk.upsample - whole
        try:
            if blk.limit is None and frac == 0:
                con.execute(
                    f"INSERT INTO {selected} SELECT {i}, prow, pair_id, kind, {whole} FROM {rows}",
                    [blk.source],
                )
                plan.matched = plan.selected = con.execute(
                    f"SELECT count(*) FROM {selected} WHERE block = {i}"
                ).fetchall()[0][0]
            else:
                tbl = con.sql(
                    f"SELECT prow, pair_id, kind FROM {rows} ORDER BY pair_id", params=[blk.source]
                ).to_arrow_table()
                plan.matched = tbl.num_rows
                ids = tbl.column("pair_id")
                keep = np.arange(len(ids))
                if blk.limit is not None and len(ids) > blk.limit:
                    keep = np.sort(seeded_order(seed, ids, "limit")[: blk.limit])
                elif blk.limit is not None and len(ids) < blk.limit:
                    plan.note = f"limit {blk.limit} > {len(ids)} pairs available: all taken"
                tbl = tbl.take(pa.array(keep))
                copies = np.full(tbl.num_rows, whole, dtype=np.int32)
                if frac:
                    extra = int(np.floor(frac * tbl.num_rows + 0.5))
                    part = seeded_order(seed, tbl.column("pair_id"), "copy")[:extra]
                    copies[part] += 1
                sel = pa.table(
                    {
                        "block": pa.array(np.full(tbl.num_rows, i, dtype=np.int32)),
                        "prow": tbl.column("prow"),
                        "pair_id": tbl.column("pair_id"),
                        "kind": tbl.column("kind"),
                        "copies": pa.array(copies),
                    }
                )
                with store.registered("_mix_block", sel):
                    con.execute(f"INSERT INTO {selected} SELECT * FROM _mix_block")
                plan.selected = tbl.num_rows
        except duckdb.Error as e:
            raise BadInput(
                f"round {recipe.name!r}, [[mix]] block {i + 1}: {duckdb_message(e)}",
                field=f"mix[{i}].where",
            ) from None
        if plan.matched == 0:
            plan.note = "no pairs match this block"
        plans.append(plan)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM {selected} WHERE copies > 0")
    con.execute(f"DROP TABLE {selected}")
    _count_rows(con, table, plans)
    return plans


def _count_rows(con: duckdb.DuckDBPyConnection, table: str, plans: list[BlockPlan]) -> None:
    """Each block's rows: its pairs' copies in the plan's table."""
    for plan in plans:
        plan.rows = int(
            con.execute(
                f"SELECT coalesce(sum(copies), 0) FROM {table} WHERE block = ?", [plan.index]
            ).fetchall()[0][0]
        )
