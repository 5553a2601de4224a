"""What every table's ingest shares: the result record, staging rows and inserting only new keys,
duplicates within one input found (the `ingests` log is pairstore.tables.ingests).

Every ingest validates the whole file first and writes in one transaction: a bad record raises BadInput
(file, line, field) and nothing is written. A re-ingest of the same file adds nothing; a known id with
different content is an error, never a silent overwrite.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from pairstore.errors import BadInput
from pairstore.ingest.batches import line_of
from pairstore.ingest.records import file_type
from pairstore.progress import NO_PROGRESS, as_progress

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.progress import Progress
    from pairstore.store.store import Store

T = TypeVar("T")

VOTES = ("win", "loss", "tie", "both_bad")
ITEM_KINDS = ("problem", "task", "eval_item", "prompt")
WINNERS = ("a", "b", "tie")


@dataclass
class IngestResult:
    kind: str
    path: str
    read: int = 0
    added: int = 0
    # reason -> count (same content already there, ...)
    skipped: Counter[str] = field(default_factory=Counter)
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


def progress_bar(
    iterable: Iterable[T], progress: Progress | bool | None, desc: str, *, path: StrPath | None = None
) -> Iterable[T]:
    """`iterable` reported to `progress` (a pairstore.progress.Progress, or True for a bar) as stage
    `desc`, with the file's record count as the total when it is cheap to know."""
    progress = as_progress(progress)
    if progress is NO_PROGRESS:
        return iterable
    return progress.track(
        iterable, f"ingest {desc}", total=records_in(path) if path else None, unit="records"
    )


def count_lines(path: StrPath) -> int:
    """Lines in the file, a last line without a newline counted."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def records_in(path: StrPath) -> int | None:
    """Records in an uncompressed JSONL file (its non-blank lines are at most its lines) or a parquet file;
    None else (a total for progress, never a check)."""
    p = Path(path)
    try:
        if not p.is_file():
            return None
        kind, compression = file_type(p)
        if compression is None and kind in ("jsonl", "json"):
            return count_lines(p)
        if kind == "parquet":
            return pq.ParquetFile(p).metadata.num_rows
    except (OSError, pa.ArrowException, BadInput):
        return None
    return None


# Where each staged row came from: its file, its 0-based record there, its line (row, record) where the
# reading knew it (NULL: found again by pairstore.ingest.batches.line_of when a message needs it), and
# its place in the whole ingest (the order rows are inserted in).
PLACE = [("_file", pa.string()), ("_row", pa.int64()), ("_line", pa.int64()), ("_seq", pa.int64())]


def place_columns(
    n: int, file: StrPath, rows: pa.Array, lines: list[int] | None, first_seq: int
) -> dict[str, pa.Array]:
    """The PLACE columns of `n` staged rows of one file."""
    return {
        "_file": pa.array([str(file)] * n, pa.string()),
        "_row": rows,
        "_line": pa.array(lines, pa.int64()) if lines is not None else pa.nulls(n, pa.int64()),
        "_seq": pa.array(range(first_seq, first_seq + n), pa.int64()),
    }


def _line(file: str | None, row: int, line: int | None) -> int:
    if line is not None:
        return line
    if file is not None and Path(file).is_file():
        return line_of(file, row)
    return row + 1


class StagedRows:
    """Rows of one ingest staged in a DuckDB temp table batch by batch (so they never all live in Python),
    then deduplicated and inserted in SQL:

        staged = StagedRows(store, "battles", ["battle_id"], SCHEMA, "record_hash", "battle_id", path)
        for batch in batches:
            staged.add_table(rows_of(batch))      # SCHEMA's columns, PLACE's among them
        added, repeated = staged.insert("i.record_hash <> t.record_hash")

    `hash_col` says whether two rows with one key are the same content. A key twice in the input with
    other content, or known to the store with other content, is a BadInput naming the file and line of
    the row; the same content again is counted (`repeated`). Use inside the ingest's transaction; the
    temp table is dropped on insert or close."""

    def __init__(
        self,
        store: Store,
        table: str,
        key_cols: list[str],
        schema: pa.Schema,
        hash_col: str,
        what: str,
        path: StrPath,
    ) -> None:
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
        """(rows added, rows not added: repeats within the input and keys already stored with the same
        content); BadInput for a key twice with different content or known with different content."""
        if self.rows == 0:
            return 0, 0
        con, key = self.store.con, ", ".join(self.key_cols)
        try:
            repeats = con.execute(f"SELECT count(*) - count(DISTINCT ({key})) FROM {self.name}").fetchall()
            incoming = self.name
            if repeats[0][0]:
                self._refuse_repeats_that_differ()
                incoming = f"{self.name}_first"
                con.execute(
                    f"CREATE OR REPLACE TEMP VIEW {incoming} AS SELECT * FROM {self.name} "
                    f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY _seq) = 1"
                )
            added = self._insert_new(incoming, differs)
        finally:
            self.close()
        return added, self.rows - added

    def _refuse_repeats_that_differ(self) -> None:
        key = ", ".join(self.key_cols)
        first = f"first_value({{}}) OVER (PARTITION BY {key} ORDER BY _seq)"  # the first of each key
        clash = self.store.con.execute(
            f"SELECT {self.key_cols[-1]}, _file, _row, _line, first_file, first_row, first_line FROM ("
            f"SELECT {key}, _file, _row, _line, _seq, {self.hash_col} AS h, {first.format(self.hash_col)} "
            f"AS first_h, {first.format('_file')} AS first_file, {first.format('_row')} AS first_row, "
            f"{first.format('_line')} AS first_line FROM {self.name}) "
            "WHERE h <> first_h ORDER BY _seq LIMIT 1"
        ).fetchall()
        if clash:
            k, file, row, line, first_file, first_row, first_line = clash[0]
            where = f"line {_line(first_file, first_row, first_line)}" + (
                f" of {first_file}" if first_file != file else ""
            )
            raise BadInput(
                f"{self.what} {k!r} appears twice with different content (first at {where})",
                path=str(file or self.path),
                line=_line(file, row, line),
            )

    def _insert_new(self, incoming: str, differs: str) -> int:
        """Insert the incoming rows whose key is new, in input order; a known key whose content differs
        (`differs`: SQL over i = incoming, t = table) names the row's line."""
        con = self.store.con
        on = " AND ".join(f"i.{k} = t.{k}" for k in self.key_cols)
        clashes = con.execute(
            f"SELECT i.{self.key_cols[-1]}, i._file, i._row, i._line FROM {incoming} i JOIN {self.table} t "
            f"ON {on} WHERE {differs} ORDER BY i._seq LIMIT 1"
        ).fetchall()
        if clashes:
            k, file, row, line = clashes[0]
            raise BadInput(
                f"{self.what} {k!r} is already in the store with different content",
                path=str(file or self.path),
                line=_line(file, row, line),
                field=self.key_cols[-1],
            )
        cols = [c for c in self.schema.names if not c.startswith("_")]
        return con.execute(
            f"INSERT INTO {self.table} ({', '.join(cols)}) SELECT {', '.join('i.' + c for c in cols)} "
            f"FROM {incoming} i ANTI JOIN {self.table} t ON {on} ORDER BY i._seq"
        ).fetchall()[0][0]

    def close(self) -> None:
        self.store.con.execute(f"DROP VIEW IF EXISTS {self.name}_first")
        self.store.con.execute(f"DROP TABLE IF EXISTS {self.name}")
