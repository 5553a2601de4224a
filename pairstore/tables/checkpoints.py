"""The `checkpoints` table: every bundle and adapter pairstore makes or is told about, with its parents.
This module is the one that writes it; pairstore.rounds.checkpoints checks the kind and calls it.

    replace_checkpoint(store, "m11a-soup", "soup", ["m10", "m11a"], alpha=0.5, round="m11a-soup",
                       path="/runs/m11a-soup", evidence={"sha256": "..."})
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pairstore.tables.audit_log import log_action

if TYPE_CHECKING:
    from pairstore.store.store import Store


def replace_checkpoint(
    store: Store,
    name: str,
    kind: str,
    parents: list[str],
    *,
    alpha: float | None,
    round: str | None,
    path: str | None,
    evidence: dict | None,
) -> None:
    """Insert or replace checkpoint `name` (a re-run of the same merge updates its path and evidence) in
    one transaction, logged as `checkpoint`."""
    with store.transaction():
        store.con.execute("DELETE FROM checkpoints WHERE name = ?", [name])
        store.con.execute(
            "INSERT INTO checkpoints (name, kind, parents, alpha, round, path, evidence) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                name,
                kind,
                list(parents),
                alpha,
                round,
                path,
                None if evidence is None else json.dumps(evidence, sort_keys=True, default=str),
            ],
        )
        log_action(
            store, "checkpoint", name, {"kind": kind, "parents": list(parents), "alpha": alpha, "path": path}
        )
