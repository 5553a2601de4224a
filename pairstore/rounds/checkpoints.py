"""Checkpoints: every bundle or adapter pairstore makes or is told about, with its parents."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pairstore.errors import BadInput

if TYPE_CHECKING:
    from pairstore.store.store import Store

KINDS = ("base", "adapter", "merge", "soup")


def register_checkpoint(
    store: Store,
    name: str,
    kind: str,
    parents: list[str],
    *,
    alpha: float | None = None,
    round: str | None = None,
    path: str | None = None,
    evidence: dict | None = None,
) -> None:
    """Insert or replace a checkpoint row (a re-run of the same merge updates its path and evidence)."""
    if kind not in KINDS:
        raise BadInput(f"unknown checkpoint kind {kind!r} (expected one of {', '.join(KINDS)})", field="kind")
    with store.transaction():
        store.con.execute("DELETE FROM checkpoints WHERE name = ?", [name])
        store.con.execute(
            "INSERT INTO checkpoints (name, kind, parents, alpha, round, path, evidence) VALUES (?, ?, ?, ?, ?, ?, ?)",
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
        store.audit(
            "checkpoint", name, {"kind": kind, "parents": list(parents), "alpha": alpha, "path": path}
        )
