"""The registry tables: `exports` (one row per mixture file, exported here or attached from elsewhere) and
`export_rows` (which pair sits at which row of it). This module is the one that writes both; what goes
into them is decided by pairstore.export.registry.

    add_export(store, export_id, round_name, "export", path, sha, rows, content_hash, evidence_json,
               evidence_path=..., evidence_sha256=...)
    add_planned_rows(store, export_id, "_mix_plan", "dpo")   # every row of the file, from its plan
    add_rows(store, export_id, [(0, "p1"), (1, "p2")])       # an attached file's rows
    supersede(store, ["old id"], by="new id")

Each runs inside the caller's transaction when there is one (a registration is one transaction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pairstore.store.store import Store


def add_export(
    store: Store,
    export_id: str,
    round_name: str,
    kind: str,
    path: str,
    sha256: str,
    rows: int,
    content_hash: str,
    evidence_json: str,
    *,
    evidence_path: str | None = None,
    evidence_sha256: str | None = None,
) -> None:
    """One new row of `exports` (kind "export" or "attached")."""
    store.con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash, evidence, "
        "evidence_path, evidence_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            export_id,
            round_name,
            kind,
            path,
            sha256,
            rows,
            content_hash,
            evidence_json,
            evidence_path,
            evidence_sha256,
        ],
    )


def renew_export(
    store: Store, export_id: str, evidence_json: str, *, evidence_path: str, evidence_sha256: str
) -> None:
    """A registered file registered again with new evidence: not superseded, the newest."""
    store.con.execute(
        "UPDATE exports SET evidence = ?, evidence_path = ?, evidence_sha256 = ?, "
        "superseded_at = NULL, superseded_by = NULL, created_at = current_timestamp "
        "WHERE export_id = ?",
        [evidence_json, evidence_path, evidence_sha256, export_id],
    )


def supersede(store: Store, export_ids: list[str], *, by: str) -> None:
    """Mark the registrations `export_ids` superseded by the registration `by`, now."""
    store.con.execute(
        "UPDATE exports SET superseded_at = current_timestamp, superseded_by = ? "
        "WHERE export_id IN (SELECT unnest(?::VARCHAR[]))",
        [by, export_ids],
    )


def add_planned_rows(store: Store, export_id: str, plan_table: str, kind: str) -> None:
    """Every row of an exported file in one statement, from the planned mixture in the temp table
    `plan_table` (kind, block, prow, pair_id, copies): rows in file order (block, store order, copies
    adjacent)."""
    # a running sum over the plan's entries (one per pair) gives each pair's first file row: a sort of
    # the entries, where numbering the file rows sorted every copy
    store.con.execute(
        f"""
        INSERT INTO export_rows
        SELECT ?, first_row + unnest(range(copies)), pair_id
        FROM (SELECT pair_id, copies, sum(copies) OVER (ORDER BY block, prow ROWS BETWEEN UNBOUNDED \
PRECEDING AND CURRENT ROW) - copies AS first_row FROM {plan_table} WHERE kind = ?)""",
        [export_id, kind],
    )


def add_rows(store: Store, export_id: str, row_pairs: list[tuple[int, str]]) -> None:
    """The pair of each row of a file: (row index, pair id) each."""
    if not row_pairs:
        return
    table = pa.table(
        {
            "row_index": pa.array([i for i, _ in row_pairs], pa.int64()),
            "pair_id": pa.array([p for _, p in row_pairs], pa.string()),
        }
    )
    with store.registered("_export_rows_in", table):
        store.con.execute(
            "INSERT INTO export_rows SELECT ?, row_index, pair_id FROM _export_rows_in", [export_id]
        )
