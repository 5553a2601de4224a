"""The holdout tables: `holdout_sets` (named sets), `holdout` (their members; removal keeps the row) and
`holdout_exemptions` ((member, pair) exemptions with reasons). This module is the one that writes all
three; pairstore.holdout.sets checks what a person asks for and calls it.

    add_set_members(store, "judge34", members, description=None, method="sample", seed=7)
    mark_removed(store, "judge34", "b0042", reason="published in a blog post")
    add_exemption_row(store, "judge34", "b0042", "p9f3...", reason="same question, other numbers")

Each function is one transaction (joining the caller's) and logs what it changed to audit_log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pairstore.tables.audit_log import log_action, log_each

if TYPE_CHECKING:
    import pyarrow as pa

    from pairstore.store.store import Store


def add_set_members(
    store: Store,
    set_name: str,
    members: pa.Table,
    *,
    description: str | None,
    method: str | None,
    seed: int | None,
) -> int:
    """Add `members` (item_id, item_kind, match_key, task_key, match_text, source_text; each item_id
    once) to the set, creating the set on first use; returns how many were added or made active again.

    A member removed earlier becomes active again; one already active is left as it is. Every member
    added gets an audit-log entry of its own (`holdout.add`, its item id, the method and seed), in the
    members' order. Set-based: one INSERT and one UPDATE whatever the count."""
    con = store.con
    with store.transaction(), store.registered("_new_members", members):
        con.execute(
            "INSERT INTO holdout_sets (set_name, description, method, seed) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [set_name, description, method, seed],
        )
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _added_members AS "
            "SELECT m.item_id, h.item_id IS NOT NULL AS again FROM _new_members m "
            "LEFT JOIN holdout h ON h.set_name = ? AND h.item_id = m.item_id "
            "WHERE h.item_id IS NULL OR h.removed_at IS NOT NULL",
            [set_name],
        )
        try:
            con.execute(
                "INSERT INTO holdout (set_name, item_id, item_kind, match_key, task_key, match_text, "
                "source_text) SELECT ?, m.item_id, m.item_kind, m.match_key, m.task_key, m.match_text, "
                "m.source_text "
                "FROM _new_members m SEMI JOIN (SELECT item_id FROM _added_members WHERE NOT again) a "
                "USING (item_id)",
                [set_name],
            )
            con.execute(
                "UPDATE holdout SET removed_at = NULL, removed_reason = NULL WHERE set_name = ? "
                "AND item_id IN (SELECT item_id FROM _added_members WHERE again)",
                [set_name],
            )
            # one entry per member, in the members' order
            log_each(
                store,
                "SELECT 'holdout.add', ?, json_object('item_id', a.item_id, 'method', ?::VARCHAR, "
                "'seed', ?::BIGINT, 'again', a.again) "
                "FROM _added_members a JOIN (SELECT item_id, row_number() OVER () AS i FROM _new_members) o "
                "USING (item_id) ORDER BY o.i",
                [set_name, method, seed],
            )
            added = store.scalar("SELECT count(*) FROM _added_members")
        finally:
            con.execute("DROP TABLE IF EXISTS _added_members")
    return int(added)


def mark_removed(store: Store, set_name: str, item_id: str, *, reason: str) -> None:
    """Mark an active member removed (the row stays, with the time and the reason), logged."""
    with store.transaction():
        store.con.execute(
            "UPDATE holdout SET removed_at = current_timestamp, removed_reason = ? "
            "WHERE set_name = ? AND item_id = ?",
            [reason, set_name, item_id],
        )
        log_action(store, "holdout.remove", set_name, {"item_id": item_id, "reason": reason})


def add_exemption_row(store: Store, set_name: str, item_id: str, pair_id: str, *, reason: str) -> bool:
    """Exempt `pair_id` from member (`set_name`, `item_id`), logged; False (nothing written) when that
    exemption is already there."""
    with store.transaction():
        known = store.one(
            "SELECT 1 FROM holdout_exemptions WHERE set_name = ? AND item_id = ? AND pair_id = ?",
            [set_name, item_id, pair_id],
        )
        if known is not None:
            return False
        store.con.execute(
            "INSERT INTO holdout_exemptions (set_name, item_id, pair_id, reason) VALUES (?, ?, ?, ?)",
            [set_name, item_id, pair_id, reason],
        )
        log_action(
            store, "holdout.exempt", set_name, {"item_id": item_id, "pair_id": pair_id, "reason": reason}
        )
    return True
