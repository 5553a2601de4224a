"""Checkpoints: every bundle or adapter pairstore makes or is told about, with its parents."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pairstore.errors import BadInput
from pairstore.tables.checkpoints import replace_checkpoint

if TYPE_CHECKING:
    from pathlib import Path

    from pairstore.files import StrPath
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
    replace_checkpoint(store, name, kind, parents, alpha=alpha, round=round, path=path, evidence=evidence)


def checkpoint_at(store: Store, path: StrPath) -> str | None:
    """The checkpoint name registered for the bundle or adapter folder at `path` (the latest), if any."""
    from pathlib import Path

    rows = store.rows(
        "SELECT name FROM checkpoints WHERE path = ? ORDER BY created_at DESC LIMIT 1",
        [str(Path(path).resolve())],
    )
    return rows[0]["name"] if rows else None


def checkpoint_name(store: Store | None, path: StrPath, given: str | None = None) -> str:
    """One name per checkpoint: `given` (a --a-name, --base-name ...), else the name the folder at `path`
    is registered under, else the folder's name. Reads only."""
    from pathlib import Path

    registered = checkpoint_at(store, path) if store is not None else None
    return given or registered or Path(path).resolve().name


def register_folder(store: Store | None, path: StrPath, name: str) -> None:
    """Register the folder at `path` under `name` (kind from its training_evidence.json, else base; no
    parents) when neither the folder nor the name is registered yet, so the chain it starts connects in
    lineage. A name already registered for another folder is left as it is."""
    from pathlib import Path

    if store is None or checkpoint_at(store, path) is not None:
        return
    if not store.scalar("SELECT count(*) FROM checkpoints WHERE name = ?", [name]):
        register_checkpoint(store, name, _folder_kind(Path(path)), [], path=str(Path(path).resolve()))


def checkpoint_name_for(store: Store | None, path: StrPath, given: str | None = None) -> str:
    """checkpoint_name, and the folder registered under it (register_folder)."""
    name = checkpoint_name(store, path, given)
    register_folder(store, path, name)
    return name


def _folder_kind(folder: Path) -> str:
    try:
        kind = json.loads((folder / "training_evidence.json").read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        kind = None
    return kind if kind in KINDS else "base"
