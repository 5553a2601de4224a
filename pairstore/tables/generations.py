"""The `generations` table: a model's outputs on problems, tasks, eval items and prompts. This module is
the one that writes it.

    insert_generations(store, rows)    # ingest, `train sample`, `eval`: new outputs
                                       # (a known gen_id is skipped)
    record_verdicts(store, verdicts)   # miners: the verifier's verdict and the scanner's loop flags

A generation's id is the content id of the model, the item, the sample number, the temperature and
the text (generation_id), so the same output stored twice is one row. Ingest leaves verdicts and loop
flags NULL (the verifier and the scanner live outside the store package); `train sample` stores them
at once; the miners fill or refresh them with record_verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from pairstore.keys import content_id

if TYPE_CHECKING:
    from pairstore.store.store import Store

MSG_TYPE = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
GEN_SCHEMA = pa.schema(
    [
        ("gen_id", pa.string()),
        ("model", pa.string()),
        ("item_kind", pa.string()),
        ("item_id", pa.string()),
        ("suite", pa.string()),
        ("prompt", MSG_TYPE),
        ("output", pa.string()),
        ("sample_index", pa.int32()),
        ("temperature", pa.float64()),
        ("top_p", pa.float64()),
        ("max_new_tokens", pa.int32()),
        ("seed", pa.int64()),
        ("decoding", pa.string()),
        ("extracted_answer", pa.string()),
        ("verdict", pa.string()),
        ("loop_flagged", pa.bool_()),
        ("loop_catastrophic", pa.bool_()),
        ("loop_tail", pa.bool_()),
        ("max_repeat", pa.int32()),
        ("n_tokens", pa.int32()),
        ("source_file", pa.string()),
        ("verdict_reason", pa.string()),
        ("verdict_readings", pa.string()),
    ]
)
VERDICT_SCHEMA = pa.schema(
    [
        ("gen_id", pa.string()),
        ("extracted_answer", pa.string()),
        ("verdict", pa.string()),
        ("verdict_reason", pa.string()),
        ("verdict_readings", pa.string()),
        ("loop_flagged", pa.bool_()),
        ("loop_catastrophic", pa.bool_()),
        ("loop_tail", pa.bool_()),
        ("max_repeat", pa.int32()),
        ("n_tokens", pa.int32()),
    ]
)


def generation_id(
    model: str, item_kind: str, item_ref: str, sample_index: int, temperature: float | None, output: str
) -> str:
    """Content id of one output: the model, the item (id or prompt text), sample number, temperature, text."""
    return content_id(model, item_kind, item_ref, str(sample_index), repr(temperature), output)


def insert_generations(store: Store, rows: list[dict]) -> int:
    """Insert the rows whose gen_id is new; returns how many were added. A row names any subset of
    GEN_SCHEMA's columns (the rest are NULL). Joins the caller's transaction when there is one."""
    if not rows:
        return 0
    unique: dict = {}
    for r in rows:
        unique.setdefault(r["gen_id"], r)
    table = pa.Table.from_pylist(
        [{c: r.get(c) for c in GEN_SCHEMA.names} for r in unique.values()], schema=GEN_SCHEMA
    )
    cols = ", ".join(GEN_SCHEMA.names)
    with store.transaction(), store.registered("_new_generations", table):
        return store.con.execute(
            f"INSERT INTO generations ({cols}) SELECT {cols} FROM _new_generations n "
            "ANTI JOIN generations g USING (gen_id)"
        ).fetchall()[0][0]


def insert_generations_select(
    store: Store,
    select_sql: str,
    columns: list[str],
    params: Sequence[object] = (),
    *,
    distinct: bool = False,
) -> int:
    """Insert the rows of `select_sql` (the GEN_SCHEMA `columns` by name, plus `_row`: the order to store
    them in; the other columns are NULL) whose gen_id is new, the first of each gen_id by `_row`;
    returns how many were added. The vectorized ingest uses it so its rows never become Python objects.
    `distinct`: the caller knows no gen_id repeats in the rows, so the window that keeps the first of
    each is skipped (it sorts every row)."""
    unknown = set(columns) - set(GEN_SCHEMA.names)
    if unknown or "gen_id" not in columns:
        raise ValueError(f"not generation columns: {sorted(unknown)}" if unknown else "gen_id is required")
    cols = ", ".join(c for c in GEN_SCHEMA.names if c in columns)
    first = "" if distinct else "QUALIFY row_number() OVER (PARTITION BY gen_id ORDER BY _row) = 1"
    with store.transaction():
        return store.con.execute(
            f"INSERT INTO generations ({cols}) SELECT {cols} FROM ("
            f"  SELECT * FROM ({select_sql}) {first}"
            ") n ANTI JOIN generations g USING (gen_id) ORDER BY n._row",
            list(params),
        ).fetchall()[0][0]


def record_verdicts(store: Store, verdicts: list[dict]) -> int:
    """Write the verifier's verdicts and the scanner's loop flags onto stored generations (rows in
    VERDICT_SCHEMA's columns), in one transaction (joins an open one). Returns the rows that changed.
    A streaming miner calls it once a batch and commits each: DuckDB keeps an uncommitted UPDATE's old
    values in memory, and an open transaction (a reader's too) keeps committed ones from being
    checkpointed, so one UPDATE of every generation mined would grow with them."""
    if not verdicts:
        return 0
    batch = pa.Table.from_pylist(verdicts, schema=VERDICT_SCHEMA)
    with store.transaction(), store.registered("_verdicts", batch):
        return store.con.execute("""
            UPDATE generations g SET extracted_answer = j.extracted_answer, verdict = j.verdict,
                verdict_reason = j.verdict_reason, verdict_readings = j.verdict_readings,
                loop_flagged = j.loop_flagged, loop_catastrophic = j.loop_catastrophic,
                loop_tail = j.loop_tail, max_repeat = j.max_repeat, n_tokens = j.n_tokens
            FROM _verdicts j
            WHERE g.gen_id = j.gen_id AND (g.verdict IS DISTINCT FROM j.verdict
                OR g.verdict_reason IS DISTINCT FROM j.verdict_reason
                OR CAST(g.verdict_readings AS VARCHAR) IS DISTINCT FROM j.verdict_readings
                OR g.extracted_answer IS DISTINCT FROM j.extracted_answer
                OR g.loop_flagged IS DISTINCT FROM j.loop_flagged
                OR g.max_repeat IS DISTINCT FROM j.max_repeat
                OR g.n_tokens IS DISTINCT FROM j.n_tokens
                OR g.loop_catastrophic IS DISTINCT FROM j.loop_catastrophic
                OR g.loop_tail IS DISTINCT FROM j.loop_tail)""").fetchall()[0][0]
