"""A file in a columns format, read into checked Arrow batches: the one reading of every such format.

    for batch in read_columns(fmt, SCHEMA, "outs.jsonl"):
        batch.table          # SCHEMA's columns and `_row` (the record's 0-based place in the file)
        batch.line(i)        # the line (or row, or record) of the batch's row i, for a message

A format (pairstore.ingest.declare) says which field fills which column and what kind each field is
(pairstore.ingest.kinds). Two ways lead to the same checked columns:

- **whole columns**: pyarrow's JSON reader streams a JSONL file (compressed or not) in blocks, or a
  parquet or Arrow file gives its record batches; each declared column is read by its kind's `column`.
  A block the reader refuses (a value of another JSON type, a key twice in one object, a lone surrogate,
  a NaN), a field only a record's reading takes (`reshape`), a column of text no field declares, or a
  column of a type the kind does not take ends this way for the rest of the file;
- **record by record** (any file, and the rest of one the first way left): each record is parsed
  (pairstore.ingest.records), checked for text its format does not read (declare.Unread), each field
  read by its kind's `value` and the format's `reshape`; then the batch's columns are checked by the
  same `column` as above.

So every rule about a value lives in one place, its kind, and both ways give the same columns and the
same errors (tests/ingest/test_kinds.py holds the kinds' two readings equal; tests/ingest/test_batches.py
the two ways). The first bad record of the file is named (file, line or row, field) whichever way found
it; nothing is left unread: a record with text no field declares is refused. Memory is one block of
the file (about STREAM_BLOCK_SIZE bytes) and the batches the caller keeps.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from pairstore.errors import BadInput
from pairstore.ingest.declare import TEXT, Field, Format, Unread
from pairstore.ingest.kinds import (
    MSG_TYPE,
    Checked,
    Kind,
    NotDirect,
    Problem,
    one_element_lists,
    user_messages,
)
from pairstore.ingest.records import (
    MAX_DEPTH,
    Fields,
    file_format,
    open_bytes,
    read_records,
    unit_of,
)
from pairstore.lines import line_blocks

if TYPE_CHECKING:
    from pairstore.files import StrPath

# The streaming reader's blocks: what is in memory at once (a few tens of thousands of records). A
# record longer than a block is an error of the reader, and the file is read record by record.
STREAM_BLOCK_SIZE = 16 << 20
RECORD_BATCH = 8192  # rows of a batch read record by record
# Whether files are read as whole columns where they can be (tests set it off to compare the two ways).
DIRECT = True


@dataclass
class Batch:
    """Checked rows of one file: `table` holds the schema's columns and `_row`."""

    table: pa.Table
    path: Path
    lines: list[int] | None = None  # the line (row, record) of each row, when read record by record

    def line(self, i: int) -> int:
        if self.lines is not None:
            return self.lines[i]
        row = self.table.column("_row")[i].as_py()
        return row + 1 if self._rows_are_lines else line_of(self.path, row)

    def all_lines(self) -> list[int]:
        """The line (row, record) of every row, in order: what `line` gives each, the file read again at
        most once (where blank lines part record numbers from line numbers)."""
        if self.lines is not None:
            return self.lines
        rows = self.table.column("_row").to_pylist()
        if self._rows_are_lines:
            return [row + 1 for row in rows]
        return lines_of(self.path, rows)

    @functools.cached_property
    def _rows_are_lines(self) -> bool:
        # asked once a batch: it looks at the file's name and stat (a per-row cost otherwise)
        return rows_are_lines(self.path)

    def error(self, i: int, message: str, field: str | None = None) -> BadInput:
        """BadInput naming row `i` of the batch (its file and line) and `field`."""
        return BadInput(message, path=str(self.path), line=self.line(i), field=field, unit=unit_of(self.path))


def rows_are_lines(path: StrPath) -> bool:
    """Whether the file's n-th record is on its line n (or row n): a parquet or Arrow file, or a JSONL file
    without a blank line (read once a file and remembered)."""
    kind = file_format(path)
    if kind in ("parquet", "arrow"):
        return True
    if kind != "jsonl":
        return False
    st = Path(path).stat()
    return _no_blank_line(str(path), st.st_size, st.st_mtime)


@functools.lru_cache(maxsize=64)
def _no_blank_line(path: str, size: int, mtime: float) -> bool:
    with open_bytes(path) as f:
        return not any(not line.strip() for line in f)


def line_of(path: StrPath, row: int) -> int:
    """The line (row, record) number of the file's record at 0-based position `row`: read again, since
    the whole-columns way does not count lines (blank lines are skipped)."""
    for number, _ in read_records(path, start=row):
        return number
    raise ValueError(f"{path} has no record {row}")


def lines_of(path: StrPath, rows: list[int]) -> list[int]:
    """line_of every 0-based record position in `rows`, the file read once from the first of them."""
    if not rows:
        return []
    first, last = min(rows), max(rows)
    found: dict[int, int] = {}
    for row, (number, _) in enumerate(read_records(path, start=first), start=first):
        found[row] = number
        if row >= last:
            break
    missing = [row for row in rows if row not in found]
    if missing:
        raise ValueError(f"{path} has no record {missing[0]}")
    return [found[row] for row in rows]


def _has_text(t: pa.DataType) -> bool:
    """Whether values of type `t` can hold a string (a time the JSON reader inferred was one too)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        return True
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_text(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_text(t.value_type)
    if pa.types.is_map(t):
        return _has_text(t.key_type) or _has_text(t.item_type)
    return False


def _depth(t: pa.DataType) -> int:
    if pa.types.is_struct(t):
        return 1 + max((_depth(t.field(i).type) for i in range(t.num_fields)), default=0)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return 1 + _depth(t.value_type)
    return 0


def _lift(arr: pa.Array, to: pa.DataType, name: str) -> pa.Array:
    """A kind's column into the schema's column type (a text as a one-message prompt or a one-element list,
    a 64-bit integer into a 32-bit column whose range the kind checked)."""
    if arr.type == to:
        return arr
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), to)
    if to == MSG_TYPE and pa.types.is_string(arr.type):
        return user_messages(arr)
    if pa.types.is_list(to) and pa.types.is_string(arr.type) and to.value_type == pa.string():
        lists = one_element_lists(arr)
        return pc.if_else(pc.is_null(arr), pa.scalar(None, to), lists) if arr.null_count else lists
    if pa.types.is_integer(to) and pa.types.is_integer(arr.type):
        return pc.cast(arr, to)
    raise TypeError(f"column {name!r}: a {arr.type} field cannot fill a {to} column")


def _lift_value(v: Any, to: pa.DataType) -> Any:
    """_lift for one value."""
    if v is None or not isinstance(v, str):
        return v
    if to == MSG_TYPE:
        return [{"role": "user", "content": v}]
    if pa.types.is_list(to) and to.value_type == pa.string():
        return [v]
    return v


class Reading:
    """What reading one format into one schema needs, worked out once."""

    def __init__(self, fmt: Format, schema: pa.Schema):
        if not fmt.reads_columns:
            raise ValueError(f"format {fmt.name!r} reads records, not columns")
        self.fmt, self.schema = fmt, schema
        self.typed = [f for f in fmt.fields if f.kind is not None and "[" not in f.name and "." not in f.name]
        self.kinds: dict[str, Kind] = {f.name: f.kind for f in self.typed if f.kind is not None}
        for f in self.typed:
            if f.column not in schema.names:
                raise ValueError(f"format {fmt.name!r}: field {f.name!r} fills no column of the schema")
        # fields only the record-by-record reading takes: read by `reshape`, or of a kind never read whole
        self.record_only = {
            f.top
            for f in fmt.fields
            if (f.kind is None and (f.what == TEXT or fmt.reshape is not None))
            or (f.kind is not None and f.kind.direct is None)
        }
        self.declared = fmt.top_keys()
        self.explicit = pa.schema(
            [
                (name, kind.direct)
                for name, kind in self.kinds.items()
                if isinstance(kind.direct, pa.DataType) and name not in self.record_only
            ]
        )
        self.unread = Unread(fmt)
        self.columns = [n for n in schema.names if n != "_row"]

    # -- whole columns --

    def check(
        self, columns: dict[str, Checked], n: int, *, required: bool = True
    ) -> tuple[int, Field, str] | None:
        """The first (row, field, message) any field's rule or a missing required field breaks (the
        record-by-record reading checked those per record), a row's fields in declaration order."""
        worst: tuple[int, int, Field, str] | None = None
        for order, f in enumerate(self.typed):
            got = columns[f.name]
            hits = []
            if got.first_bad is not None:
                hits.append((got.first_bad, got.message))
            if required and f.required and got.array.null_count:
                hits.append((pc.index(pc.is_null(got.array), True).as_py(), f.missing))
            for row, message in hits:
                if worst is None or (row, order) < worst[:2]:
                    worst = (row, order, f, message)
        return None if worst is None else (worst[0], worst[2], worst[3])

    def assemble(self, columns: dict[str, Checked], rows: pa.Array, n: int) -> pa.Table:
        arrays = {}
        for f in self.typed:
            arrays[f.column] = _lift(columns[f.name].array, self.schema.field(f.column).type, f.column)
        out = [
            arrays.get(name, pa.nulls(n, self.schema.field(name).type)) if name != "_row" else rows
            for name in self.schema.names
        ]
        return pa.table(out, schema=self.schema)

    def direct_table(self, table: pa.Table, first_row: int) -> tuple[pa.Table, tuple[int, Field, str] | None]:
        """A block as the reader gave it -> the checked table; NotDirect where this way cannot take it."""
        n = table.num_rows
        for name in table.column_names:
            col = table.column(name)
            if col.null_count == n:
                continue
            if name in self.record_only:
                raise NotDirect(name)
            if name not in self.declared and _has_text(col.type):
                raise NotDirect(f"{name}: text no field declares")
        table.validate(full=True)  # UTF-8 of every string (pyarrow's JSON reader does not check it)
        if any(1 + _depth(f.type) >= MAX_DEPTH for f in table.schema):
            raise NotDirect("nested too deep")
        columns = {}
        for f in self.typed:
            col = table.column(f.name) if f.name in table.column_names else pa.nulls(n, pa.null())
            if f.reshaped and f.required and col.null_count:
                raise NotDirect(f"{f.name}: whether a record needs it is its reshape's to say")
            columns[f.name] = f.kind.read_whole(col)  # type: ignore[union-attr]  # typed fields have a kind
        rows = pa.array(range(first_row, first_row + n), pa.int64())
        return self.assemble(columns, rows, n), self.check(columns, n)

    # -- record by record --

    def values(self, rec: dict, f: Fields) -> list[dict]:
        """One record's values: each typed field's kind value under the field's name, and the columns the
        format's reshape fills itself (several rows where it makes several)."""
        out: dict[str, Any] = {}
        for field in self.typed:
            v = rec.get(field.name)
            if v is None:
                if field.required and not field.reshaped:  # else the format's reshape says what is missing
                    raise f.error(field.name, field.missing)
                continue
            try:
                out[field.name] = field.kind.value(v)  # type: ignore[union-attr]  # typed fields have one
            except Problem as e:
                raise f.error(e.field or field.name, str(e)) from None
        self.unread.check(rec, f.path, f.line, unit_of(f.path))
        if self.fmt.reshape is not None:
            shaped = self.fmt.reshape(out, f)
            return shaped if isinstance(shaped, list) else [shaped]
        return [out]

    def record_table(
        self, rows: list[dict], row_ids: list[int]
    ) -> tuple[pa.Table, tuple[int, Field, str] | None]:
        n = len(rows)
        columns = {}
        for f in self.typed:
            arr = pa.array([r.get(f.name) for r in rows], f.kind.given)  # type: ignore[union-attr]
            columns[f.name] = f.kind.column(arr)  # type: ignore[union-attr]
        table = self.assemble(columns, pa.array(row_ids, pa.int64()), n)
        # the columns a reshape filled itself (a multi-turn battle's answers) replace what the fields gave
        names = {f.name for f in self.typed}
        for name in self.columns:
            if name in names or not any(name in r for r in rows):
                continue
            i = table.schema.get_field_index(name)
            given = table.column(i).to_pylist()
            merged = [r[name] if name in r else g for r, g in zip(rows, given)]
            table = table.set_column(i, name, pa.array(merged, self.schema.field(name).type))
        return table, self.check(columns, n, required=False)


def _direct_blocks(path: Path, reading: Reading) -> Iterator[pa.Table]:
    kind = file_format(path)
    if kind == "jsonl":
        parse = pa_json.ParseOptions(explicit_schema=reading.explicit, unexpected_field_behavior="infer")
        with open_bytes(path) as stream:
            yield from _jsonl_blocks(stream, parse)
    elif kind == "parquet":
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65536):
            yield pa.Table.from_batches([batch])
    else:
        raise NotDirect(kind)


def _jsonl_blocks(stream: IO[bytes], parse: pa_json.ParseOptions) -> Iterator[pa.Table]:
    """The JSONL stream parsed about STREAM_BLOCK_SIZE bytes of whole lines at a time (pairstore.lines: not
    pyarrow's streaming reader, which read a whole file ahead, so an ingest's memory grew with its file).
    A line longer than a block makes pyarrow refuse the block (an ArrowException: the caller reads the
    rest record by record)."""
    options = pa_json.ReadOptions(block_size=STREAM_BLOCK_SIZE, use_threads=True)
    for block in line_blocks(stream, STREAM_BLOCK_SIZE):
        if block.strip():
            yield pa_json.read_json(pa.BufferReader(block), read_options=options, parse_options=parse)


Records = Callable[["Reading", Path, int], Iterator[Batch]]


def read_columns(
    fmt: Format,
    schema: pa.Schema,
    path: StrPath,
    *,
    direct: bool | None = None,
    records: Records | None = None,
) -> Iterator[Batch]:
    """The file's records in `fmt`, as checked batches of `schema`'s columns (module docstring). Raises
    BadInput naming the first bad record; `direct=False` reads record by record only (the tests compare).
    `records` reads the file's records from the one given on, where not `fmt` alone reads them (the pair
    shapes: each record in the shape its keys say)."""
    file = Path(path)
    reading = Reading(fmt, schema)
    done = 0
    if (DIRECT if direct is None else direct) and file.is_file() and file.stat().st_size:
        try:
            for table in _direct_blocks(file, reading):
                if not table.num_rows:
                    continue
                checked, bad = reading.direct_table(table, done)
                if bad is not None:
                    row, field, message = bad
                    raise Batch(checked, file).error(row, message, field.name)
                done += table.num_rows
                yield Batch(checked, file)
            if done:
                return
        except (pa.ArrowException, NotDirect, OSError, UnicodeDecodeError):
            pass  # the rest of the file, record by record
    if records is not None:
        yield from records(reading, file, done)
    else:
        yield from record_batches(reading, file, read_records(file, start=done), done)


def record_columns(
    fmt: Format, schema: pa.Schema, records: Iterable[tuple[int, object]], path: StrPath
) -> Iterator[Batch]:
    """Checked batches of records that are not a file of ours ((number, record) pairs: rows a library
    loaded, votes from the web page), read the way a file's records are."""
    yield from record_batches(Reading(fmt, schema), Path(str(path)), records, 0)


def record_batch(fmt: Format, schema: pa.Schema, records: list[dict], source: str) -> Batch:
    """Records made in this process (a vote from the web page) as one checked batch; a record's line is
    its place in the list."""
    batches = list(record_columns(fmt, schema, enumerate(records, start=1), source))
    if not batches:
        return Batch(
            pa.table({n: pa.array([], schema.field(n).type) for n in schema.names}), Path(source), []
        )
    table = pa.concat_tables([b.table for b in batches])
    return Batch(table, Path(source), [line for b in batches for line in b.lines or []])


def record_batches(
    reading: Reading,
    path: Path,
    records: Iterable[tuple[int, object]],
    start: int,
    values: Callable[[dict, Fields], list[dict]] | None = None,
) -> Iterator[Batch]:
    """Checked batches of (number, record) pairs; `values(record, Fields)` reads one record where not the
    format's own reading does."""
    read = values or reading.values
    rows: list[dict] = []
    row_ids: list[int] = []
    lines: list[int] = []
    index = start

    def flush() -> Batch:
        table, bad = reading.record_table(rows, row_ids)
        batch = Batch(table, path, list(lines))
        if bad is not None:
            row, field, message = bad
            raise batch.error(row, message, field.name)
        return batch

    try:
        for number, rec in records:
            if not isinstance(rec, dict):
                raise BadInput(f"expected an object, got {type(rec).__name__}", path=str(path), line=number)
            got = read(rec, Fields(rec, path, number))
            rows.extend(got)
            row_ids.extend([index] * len(got))
            lines.extend([number] * len(got))
            index += 1
            if len(rows) >= RECORD_BATCH:
                yield flush()
                rows, row_ids, lines = [], [], []
    except BadInput:
        if rows:
            flush()  # a bad value before the record that stopped the reading is named first
        raise
    if rows:
        yield flush()
