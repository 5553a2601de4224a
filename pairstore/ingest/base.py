"""What every table's ingest shares: the result record, the `ingests` log (this module writes it),
inserting only new keys, and duplicates within one file.

Every ingest validates the whole file first and writes in one transaction: a bad record raises BadInput
(file, line, field) and nothing is written. A re-ingest of the same file adds nothing; a known id with
different content is an error, never a silent overwrite.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from pairstore.errors import BadInput
from pairstore.ingest.bulk import count_lines
from pairstore.keys import sha256_file
from pairstore.progress import NO_PROGRESS, as_progress

if TYPE_CHECKING:
    from pairstore.store.store import Store

VOTES = ("win", "loss", "tie", "both_bad")
ITEM_KINDS = ("problem", "task", "eval_item", "prompt")
WINNERS = ("a", "b", "tie")


@dataclass
class IngestResult:
    kind: str
    path: str
    read: int = 0
    added: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> count (same content already there, ...)
    pairs: int = 0  # pairs written beside the rows (Arena battles between other models, --others pairs)

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "read": self.read,
            "added": self.added,
            "pairs": self.pairs,
            "skipped": dict(self.skipped),
        }


def progress_bar(iterable, progress, desc: str, *, path=None):
    """`iterable` reported to `progress` (a pairstore.progress.Progress, or True for a bar) as stage
    `desc`, with the file's record count as the total when it is cheap to know."""
    progress = as_progress(progress)
    if progress is NO_PROGRESS:
        return iterable
    return progress.track(
        iterable, f"ingest {desc}", total=records_in(path) if path else None, unit="records"
    )


def records_in(path) -> int | None:
    """Records in a JSONL file (its non-blank lines are at most its lines) or a parquet file; None else."""
    p = Path(path)
    try:
        if not p.is_file():
            return None
        suffix = p.suffix.lower()
        if suffix in (".jsonl", ".ndjson", ".json"):
            return count_lines(p)
        if suffix == ".parquet":
            return pq.ParquetFile(p).metadata.num_rows
    except (OSError, pa.ArrowException):
        return None
    return None


def log_ingest(
    store: Store, path, kind: str, rows_read: int, rows_added: int, *, sha256: str | None = None
) -> None:
    """One row in `ingests` per file (or dataset folder: give its `sha256`, pairstore.ingest.dataset_files)
    read. This module writes that table; call inside the ingest's transaction."""
    store.con.execute(
        "INSERT INTO ingests (file_sha256, kind, path, rows_read, rows_added) VALUES (?, ?, ?, ?, ?)",
        [sha256 or sha256_file(path), kind, str(path), rows_read, rows_added],
    )


def insert_new(
    store: Store,
    table: str,
    key_cols: list[str],
    rows: list[dict],
    schema: pa.Schema,
    differs: str,
    what: str,
    path,
) -> tuple[int, int]:
    """Insert rows whose key is new. A known key whose content differs (`differs`: SQL over i = incoming,
    t = table) is an error naming the line; a known key with the same content is skipped."""
    if not rows:
        return 0, 0
    tbl = pa.Table.from_pylist(rows, schema=schema)
    con = store.con
    con.register("_incoming", tbl)
    try:
        on = " AND ".join(f"i.{k} = t.{k}" for k in key_cols)
        file_col = "i._file" if "_file" in schema.names else "NULL::VARCHAR"
        order = "i._file, i._line" if "_file" in schema.names else "i._line"
        clashes = con.execute(
            f"SELECT i.{key_cols[-1]}, i._line, {file_col} FROM _incoming i JOIN {table} t ON {on} "
            f"WHERE {differs} ORDER BY {order} LIMIT 1"
        ).fetchall()
        if clashes:
            clash = clashes[0]
            raise BadInput(
                f"{what} {clash[0]!r} is already in the store with different content",
                path=str(clash[2] or path),
                line=clash[1],
                field=key_cols[-1],
            )
        cols = [c for c in schema.names if not c.startswith("_")]
        n = con.execute(
            f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join('i.' + c for c in cols)} "
            f"FROM _incoming i ANTI JOIN {table} t ON {on}"
        ).fetchall()[0][0]
    finally:
        con.unregister("_incoming")
    return n, len(rows) - n


def dedup_in_file(rows: list[dict], key, hash_col: str, what: str, path) -> tuple[list[dict], int]:
    seen: dict = {}
    out = []
    dup = 0
    for r in rows:
        k = key(r)
        if k in seen:
            if seen[k][hash_col] != r[hash_col]:
                first = seen[k]
                where = f"line {first['_line']}" + (
                    f" of {first['_file']}" if first.get("_file", path) != r.get("_file", path) else ""
                )
                raise BadInput(
                    f"{what} {k!r} appears twice with different content (first at {where})",
                    path=str(r.get("_file") or path),
                    line=r["_line"],
                )
            dup += 1
            continue
        seen[k] = r
        out.append(r)
    return out, dup
