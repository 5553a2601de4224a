"""The audit log: one append-only row per change a person may later ask about (every holdout change,
exemption, registration, export, attach, refusal). This module is the one that writes `audit_log`.

    log_action(store, "holdout.remove", "judge34", {"item_id": "b0042", "reason": "published"})
    log_each(store, "SELECT 'holdout.add', set_name, json_object('item_id', item_id) FROM _added")

Call inside the transaction that makes the change, so the change and its entry commit or roll back
together. (Re-keying a store logs `store.rekey` itself: it runs in the store room, below this one.)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pairstore.store.store import Params, Store


def log_action(store: Store, action: str, subject: str, detail: dict | None = None) -> None:
    """One audit_log entry: what was done (`action`), to what (`subject`), and its details as JSON."""
    store.con.execute(
        "INSERT INTO audit_log (action, subject, detail) VALUES (?, ?, ?)",
        [action, subject, json.dumps(detail or {}, sort_keys=True, default=str)],
    )


def log_each(store: Store, select_sql: str, params: Params = None) -> None:
    """One audit_log entry per row of `select_sql` (a SELECT of action, subject and detail as JSON text,
    in the order it gives): a bulk change logs each item it touches in one statement."""
    store.con.execute("INSERT INTO audit_log (action, subject, detail) " + select_sql, params or [])
