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
    with store.registered("_incoming", tbl):
        n = _insert_new_from(store, "_incoming", table, key_cols, schema, differs, what, path)
    return n, len(rows) - n


def _insert_new_from(
    store: Store,
    incoming: str,
    table: str,
    key_cols: list[str],
    schema: pa.Schema,
    differs: str,
    what: str,
    path,
) -> int:
    """insert_new's work on rows already in DuckDB (`incoming`: a table or view with `schema`'s columns,
    one row per key), in file order."""
    con = store.con
    on = " AND ".join(f"i.{k} = t.{k}" for k in key_cols)
    file_col = "i._file" if "_file" in schema.names else "NULL::VARCHAR"
    order = "i._file, i._line" if "_file" in schema.names else "i._line"
    clashes = con.execute(
        f"SELECT i.{key_cols[-1]}, i._line, {file_col} FROM {incoming} i JOIN {table} t ON {on} "
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
    return con.execute(
        f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join('i.' + c for c in cols)} "
        f"FROM {incoming} i ANTI JOIN {table} t ON {on} ORDER BY {order}"
    ).fetchall()[0][0]


class StagedRows:
    """Rows of one file staged in a DuckDB temp table batch by batch (so they never all live in Python),
    then deduplicated and inserted in SQL with what dedup_in_file and insert_new would do to the same
    rows in a list: the same counts, the same errors naming the same line.

        staged = StagedRows(store, "battles", ["battle_id"], SCHEMA, "record_hash", "battle_id", path)
        for batch in batches:
            staged.add(rows_of(batch))
        added, repeated = staged.insert("i.record_hash <> t.record_hash")

    `hash_col` is the column that says whether two rows with one key are the same content. Use inside
    the ingest's transaction; the temp table is dropped on insert or close."""

    def __init__(
        self, store: Store, table: str, key_cols: list[str], schema: pa.Schema, hash_col: str, what: str, path
    ):
        self.store, self.table, self.key_cols, self.schema = store, table, key_cols, schema
        self.hash_col, self.what, self.path = hash_col, what, path
        self.name = f"_staged_{table}"
        self.rows = 0

    def add(self, rows: list[dict]) -> None:
        if rows:
            self.add_table(pa.Table.from_pylist(rows, schema=self.schema))

    def add_table(self, batch: pa.Table) -> None:
        """Stage rows already built as an Arrow table with the schema's columns."""
        if not batch.num_rows:
            return
        with self.store.registered("_staged_batch", batch):
            if self.rows == 0:
                self.store.con.execute(f"CREATE OR REPLACE TEMP TABLE {self.name} AS FROM _staged_batch")
            else:
                self.store.con.execute(f"INSERT INTO {self.name} FROM _staged_batch")
        self.rows += batch.num_rows

    def insert(self, differs: str) -> tuple[int, int]:
        """(rows added, rows not added: repeats within the file and keys already stored with the same
        content). Raises BadInput for a key twice with different content (dedup_in_file's message) or
        known with different content (insert_new's)."""
        if self.rows == 0:
            return 0, 0
        con, key = self.store.con, ", ".join(self.key_cols)
        try:
            repeats = con.execute(f"SELECT count(*) - count(DISTINCT ({key})) FROM {self.name}").fetchall()
            if repeats[0][0] == 0:  # the common case: no key twice, nothing to compare or skip
                added = _insert_new_from(
                    self.store,
                    self.name,
                    self.table,
                    self.key_cols,
                    self.schema,
                    differs,
                    self.what,
                    self.path,
                )
                return added, self.rows - added
            first = f"first_value({{}}) OVER (PARTITION BY {key} ORDER BY _line)"  # the first of each key
            clash = con.execute(
                f"SELECT {self.key_cols[-1]}, _line, first_line FROM (SELECT {key}, _line, "
                f"{self.hash_col} AS h, {first.format(self.hash_col)} AS first_h, "
                f"{first.format('_line')} AS first_line "
                f"FROM {self.name}) WHERE h <> first_h ORDER BY _line LIMIT 1"
            ).fetchall()
            if clash:
                k, line, first_line = clash[0]
                raise BadInput(
                    f"{self.what} {k!r} appears twice with different content (first at line {first_line})",
                    path=str(self.path),
                    line=line,
                )
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {self.name}_first AS SELECT * FROM {self.name} "
                f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY _line) = 1"
            )
            added = _insert_new_from(
                self.store,
                f"{self.name}_first",
                self.table,
                self.key_cols,
                self.schema,
                differs,
                self.what,
                self.path,
            )
        finally:
            self.close()
        return added, self.rows - added

    def close(self) -> None:
        self.store.con.execute(f"DROP VIEW IF EXISTS {self.name}_first")
        self.store.con.execute(f"DROP TABLE IF EXISTS {self.name}")


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
