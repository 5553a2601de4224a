"""Reading pair files in every common layout: the one reader behind `ingest pairs`, `round attach` and
`audit leaks`.

    for row in iter_pair_rows("s2_pairs_lf1.parquet"):      # streamed, a batch at a time
        row.prompt, row.chosen, row.rejected, row.origin_ids
    rows = read_pair_file("pairs.jsonl.gz")                   # all of them

A pair file is any data file pairstore.ingest.records reads (JSONL, a JSON array, parquet, CSV, Arrow;
JSONL, JSON and CSV also compressed), made by this project or not, each record in one of the pair
shapes (pairstore.ingest.formats, `table="pairs"`; their fields in docs/schema.md): TRL's layouts,
HH-RLHF, ShareGPT and its preference variant, Alpaca / LLaMA-Factory / Dolly, UltraFeedback binarized,
OpenAI's chat and preference fine-tuning rows. A record's shape is told by its keys (each shape's
`detect`, tried in the shapes' order; `trl` when none says so).

Read whole or refused: every text of a record lands in the prompt or an answer, or is one of its
shape's declared non-text fields (ids, labels, scores); anything else is a BadInput naming the file, the
record and the field (pairstore.ingest.pair_rows says which layouts lose text and how they are refused).
A file in TRL's plain layout (strings) is read as whole Arrow columns (pairstore.ingest.batches), any
other record by record; both give the same rows. Memory is a batch of rows, whatever the file's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ingest.batches import Batch, Reading, read_columns, record_batches
from pairstore.ingest.declare import Format, Unread
from pairstore.ingest.formats import formats_of, get_format
from pairstore.ingest.pair_rows import ID_FIELDS, PAIR
from pairstore.ingest.records import Fields, read_records, unit_of

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.store.store import Store


@dataclass
class PairRow:
    """One row of a pair file."""

    row_index: int  # 0-based position in the file
    line: int  # 1-based line (JSONL), row (parquet) or record (a JSON array), for messages
    prompt: list[dict]  # canonical messages (a system prompt kept; matching drops it)
    chosen: str | None  # None only where the file was read without require_chosen
    rejected: str | None  # None: an NLL-only row, or a file with no rejected side
    pair_id: str | None = None
    origin_ids: list[str] = field(default_factory=list)
    source: str | None = None
    family: str | None = None
    task_key: str | None = None

    @property
    def required_chosen(self) -> str:
        """The chosen answer of a row read with require_chosen (which refused rows without one)."""
        assert self.chosen is not None, "read the file with require_chosen"
        return self.chosen


def shapes() -> list[Format]:
    """The pair shapes, in the order their `detect` is tried (`trl` last: what the others do not claim)."""
    return [f for f in formats_of("pairs") if f.name != "trl"]


def shape_of(record: dict, tried: list[Format]) -> Format | None:
    """The first shape whose keys the record has; None for trl."""
    return next((f for f in tried if f.extra["detect"](record)), None)


def _shaped_records(reading: Reading, path: Path, start: int) -> Iterator[Batch]:
    """The records of a pair file, each read in its shape, as checked PAIR batches."""
    tried = shapes()
    unread = {f.name: Unread(f) for f in tried}

    def values(rec: dict, f: Fields) -> list[dict]:
        shape = shape_of(rec, tried)
        if shape is None:
            return reading.values(rec, f)
        unread[shape.name].check(rec, f.path, f.line, unit_of(f.path))
        return [shape.parse(f)]  # type: ignore[misc]  # pair shapes other than trl read records

    yield from record_batches(reading, path, read_records(path, start=start), start, values)


def pair_batches(
    path: StrPath, *, require_chosen: bool = False, direct: bool | None = None
) -> Iterator[Batch]:
    """The file's rows as checked PAIR batches (module docstring). With `require_chosen` (a file that becomes
    pairs) a row without a chosen answer is an error naming its line."""
    p = Path(path)
    if not p.exists():
        raise BadInput("no such file", path=str(path))
    if p.is_dir():
        raise BadInput("a folder, not a file", path=str(path))
    for batch in read_columns(get_format("pairs", "trl"), PAIR, p, direct=direct, records=_shaped_records):
        if require_chosen and batch.table.column("chosen").null_count:
            i = batch.table.column("chosen").is_null().to_pylist().index(True)
            raise batch.error(i, "missing field (chosen, or completion for an NLL row)", "chosen")
        yield batch


def pair_rows_of(batch: Batch) -> Iterator[PairRow]:
    """The PairRows of one batch."""
    t = batch.table
    cols: dict[str, list[Any]] = {name: t.column(name).to_pylist() for name in t.column_names}
    ids = [cols[name] for name in ID_FIELDS]
    for i in range(t.num_rows):
        more = cols["origin_ids"][i] or []
        yield PairRow(
            row_index=cols["_row"][i],
            line=batch.line(i),
            prompt=cols["prompt"][i],
            chosen=cols["chosen"][i],
            rejected=cols["rejected"][i],
            pair_id=cols["pair_id"][i] or None,
            origin_ids=[col[i] for col in ids if col[i] is not None] + list(more),
            source=cols["source"][i],
            family=cols["family"][i],
            task_key=cols["task_key"][i] or None,
        )


def iter_pair_rows(path: StrPath, *, require_chosen: bool = False) -> Iterator[PairRow]:
    """Every row of a pair file, streamed (module docstring)."""
    for batch in pair_batches(path, require_chosen=require_chosen):
        yield from pair_rows_of(batch)


def read_pair_file(path: StrPath, *, require_chosen: bool = False) -> list[PairRow]:
    """Every row of a pair file (module docstring)."""
    return list(iter_pair_rows(path, require_chosen=require_chosen))


def add_store_origins(store: Store, rows: list[PairRow]) -> None:
    """Rows whose `pair_id` is a stored pair gain the origin ids the store records for it."""
    ids = sorted({r.pair_id for r in rows if r.pair_id})
    if not ids:
        return
    with store.registered("_pf_ids", pa.table({"pair_id": pa.array(ids, type=pa.string())})):
        found = store.con.execute("""
            SELECT o.pair_id, list(DISTINCT o.origin_id ORDER BY o.origin_id)
            FROM pair_origins o SEMI JOIN _pf_ids USING (pair_id) GROUP BY o.pair_id""").fetchall()
    origins = dict(found)
    for r in rows:
        if r.pair_id in origins:
            r.origin_ids = sorted(set(r.origin_ids) | set(origins[r.pair_id]))
