"""The `rounds` table: every registered round recipe, parsed (as JSON), as TOML text and with the SHA-256
of its bytes. This module is the one that writes it; pairstore.rounds.recipes parses and checks a
recipe and calls it. Registered rounds never change, so there is no update.

    insert_round(store, "m11a", "dpo", ["m10"], alpha=None, job_id=None, recipe_json="{...}",
                 recipe_toml="name = ...", recipe_sha256="9c1f...", path="recipes/m11a.toml")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pairstore.tables.audit_log import log_action

if TYPE_CHECKING:
    from pairstore.store.store import Store


def insert_round(
    store: Store,
    name: str,
    kind: str,
    parents: list[str],
    *,
    alpha: float | None,
    job_id: str | None,
    recipe_json: str,
    recipe_toml: str,
    recipe_sha256: str,
    path: str,
) -> None:
    """Add round `name` (its recipe read from the file at `path`), logged as `round.add`; one
    transaction, joining the caller's (a batch of recipes is added together or not at all)."""
    with store.transaction():
        store.con.execute(
            "INSERT INTO rounds (name, kind, parents, alpha, job_id, recipe, recipe_toml, recipe_sha256) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [name, kind, parents, alpha, job_id, recipe_json, recipe_toml, recipe_sha256],
        )
        log_action(
            store,
            "round.add",
            name,
            {"kind": kind, "parents": parents, "sha256": recipe_sha256, "path": path},
        )
