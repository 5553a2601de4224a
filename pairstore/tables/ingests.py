"""The `ingests` table: one row per file (or dataset folder) an ingest read, with its SHA-256 and counts.
This module is the one that writes it; every ingest (pairstore.ingest) calls it inside its transaction.

    log_ingest(store, "battles.jsonl", "battles", rows_read=1200, rows_added=1187)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pairstore.keys import sha256_file

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.store.store import Store


def log_ingest(
    store: Store, path: StrPath, kind: str, rows_read: int, rows_added: int, *, sha256: str | None = None
) -> None:
    """One row in `ingests` per file (or dataset folder: give its `sha256`, pairstore.ingest.dataset_files)
    read; the file's SHA-256 is computed when `sha256` is not given. Call inside the ingest's
    transaction."""
    store.con.execute(
        "INSERT INTO ingests (file_sha256, kind, path, rows_read, rows_added) VALUES (?, ?, ?, ?, ?)",
        [sha256 or sha256_file(path), kind, str(path), rows_read, rows_added],
    )
