"""The `tasks` table: generated loop-fix tasks (training tasks, or the items of a held-out eval suite).
This module is the one that writes it; generators.tasks makes the tasks, checks them against the stored
ones and calls it.

    insert_tasks(store, [("t-9f..", "arith", "arith:3+4", "What is 3+4?", "7", "7", "{}", 0, 11, None,
                          "what is 3 4")])
    mark_suite(store, "lf-eval", ["t-9f.."])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pairstore.store.store import Store

# The columns insert_tasks fills, in the order each row gives them (its INSERT names them in this order).
TASK_COLUMNS = (
    "task_id",
    "family",
    "task_key",
    "prompt",
    "gold",
    "chosen",
    "params",
    "phrasing",
    "seed",
    "suite",
    "match_key",
)


def insert_tasks(store: Store, rows: Sequence[Sequence[object]]) -> int:
    """Insert new tasks, each row the values of TASK_COLUMNS in order (one transaction, joining the
    caller's); returns how many."""
    if rows:
        with store.transaction():
            store.con.executemany(
                "INSERT INTO tasks (task_id, family, task_key, prompt, gold, chosen, params, phrasing, seed, "
                "suite, match_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [list(r) for r in rows],
            )
    return len(rows)


def mark_suite(store: Store, suite: str, task_ids: Sequence[str]) -> None:
    """Mark stored tasks as items of eval suite `suite` (a training task written into a suite)."""
    if task_ids:
        with store.transaction():
            store.con.execute(
                "UPDATE tasks SET suite = ? WHERE task_id IN (SELECT unnest(?::VARCHAR[]))",
                [suite, list(task_ids)],
            )
