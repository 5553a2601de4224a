"""The ingests' one vectorized path: a JSONL file as a stream of Arrow tables, checked with Arrow compute.

    for table in iter_jsonl_batches(path, schema, refuse=("turns", "system")):  # NotVectorized: per record
        hit = first_flagged(flag_text(table.column("battle_id")), flag_choice(table.column("vote"), VOTES))
        if hit is not None:
            raise FlaggedRecord(rows_so_far + hit)
        ...

Generations (pairstore.ingest.generations), native battles (pairstore.ingest.battles), pair files in
the plain layout (pairstore.ingest.pair_files), GSM8K/MATH problem files (pairstore.ingest.problems) and
eval results (pairstore.ingest.evals) stream the file through pyarrow's JSON reader in blocks, into
the columns they expect, flag with the shared checks below every row the per-record parser might refuse or
treat otherwise, and key and join the rest (item ids in DuckDB, the content ids and match keys that no SQL
function computes in Python). A file is taken only when its rows are exactly its lines (no blank lines, so
row i is line i + 1), its strings are UTF-8 and every value has the column's JSON type; anything else - a
number where a string belongs, a key twice in one object, a field that needs per-record handling - raises
NotVectorized and the ingest reads the file record by record. A flagged row raises FlaggedRecord: the ingest
then runs its per-record parser over the records up to that one (first_record_error), which raises the
per-record path's own error naming the file, line and field, or finds the row fine after all and sends the
file down the per-record path. Both paths store the same rows with the same keys (tests/test_ingest_bulk*.py).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from pairstore.ingest.records import INT_BITS, MAX_DEPTH

# The streaming reader's blocks: what is in memory at once (a few tens of thousands of records). A
# record longer than a block is an error, and the file then takes the per-record path.
STREAM_BLOCK_SIZE = 16 << 20


# DuckDB's buffer memory during a vectorized ingest (it spills the staged rows to disk beyond this).
BULK_MEMORY_LIMIT = "512MB"


@contextmanager
def bounded_memory(con):
    """DuckDB's memory limit at BULK_MEMORY_LIMIT for the block, the connection's own restored after."""
    before = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    con.execute(f"SET memory_limit = '{BULK_MEMORY_LIMIT}'")
    try:
        yield
    finally:
        con.execute(f"SET memory_limit = '{before}'")


class NotVectorized(Exception):
    """The vectorized path cannot take this file (or this batch): read it record by record."""


def count_lines(path: Path) -> int:
    """Lines in the file, a last line without a newline counted."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def _type_depth(t: pa.DataType) -> int:
    """How many lists and objects a value of type `t` nests."""
    if pa.types.is_struct(t):
        return 1 + max((_type_depth(t.field(i).type) for i in range(t.num_fields)), default=0)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return 1 + _type_depth(t.value_type)
    return 0


def iter_jsonl_batches(path, schema: pa.Schema, *, refuse: tuple[str, ...] = (), keep: tuple[str, ...] = ()):
    """The JSONL file at `path` as a stream of tables with `schema`'s columns, one per block of about
    STREAM_BLOCK_SIZE bytes, so memory stays bounded whatever the file's size; the fields named in `keep`
    come too, with the type pyarrow infers, where any record of the file has them. Raises NotVectorized
    for a file the reader refuses or one with a field in `refuse`; every field of a record is read
    (the ones no column keeps too), so bytes that are not UTF-8 or nesting deeper than MAX_DEPTH anywhere
    in it raise NotVectorized, as the per-record reader refuses them. The caller checks the row count
    against count_lines at the end (blank lines) and takes the per-record path on NotVectorized."""
    path = Path(path)
    if path.suffix.lower() not in (".jsonl", ".ndjson") or not path.is_file() or path.stat().st_size == 0:
        raise NotVectorized(str(path))
    try:
        reader = pa_json.open_json(
            path,
            read_options=pa_json.ReadOptions(block_size=STREAM_BLOCK_SIZE, use_threads=True),
            parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"),
        )
        for batch in reader:
            table = pa.Table.from_batches([batch])
            for name in refuse:
                if name in table.column_names and table.column(name).null_count != table.num_rows:
                    raise NotVectorized(name)
            # pyarrow's JSON reader does not check that strings are UTF-8; the full validation of every
            # field does, so a file with bytes that are not takes the per-record path, which names their
            # line. The same for values nested deeper than the per-record reader takes.
            table.validate(full=True)
            if any(1 + _type_depth(f.type) >= MAX_DEPTH for f in table.schema):
                raise NotVectorized("nested too deep")
            table = table.select(schema.names + [n for n in keep if n in table.column_names])
            yield table
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OSError, StopIteration) as e:
        raise NotVectorized(str(e)) from None


# -- the vectorized checks every table's ingest shares -------------------------------------------------
#
# Each returns a boolean mask of the rows the per-record checks might refuse or treat otherwise (True:
# this row takes the per-record path). A row no mask flags is one the per-record path accepts and turns
# into the same stored row; that is what lets a flagged row's error come from the per-record parser
# itself (first_record_error), so both paths name the same file, line and field.


# What str.strip() removes, exactly: Arrow's own notion of whitespace is not Python's. Written out, since
# finding it takes a third of a second at every start (tests/ingest/test_ingest_bulk.py checks it against
# str.isspace over every code point).
PY_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _or(*masks) -> pa.Array:
    out = masks[0]
    for m in masks[1:]:
        out = pc.or_kleene(out, m)
    return pc.fill_null(out, True)


def _none(table_or_col) -> pa.Array:
    return pa.nulls(len(table_or_col), pa.bool_()).fill_null(False)


def flag_text(col, *, required: bool = True, allow_empty: bool = False) -> pa.Array:
    """Rows whose string is missing (when required) or blank as str.strip() sees it (unless allow_empty):
    what Fields.str refuses."""
    flagged = pc.is_null(col) if required else _none(col)
    if not allow_empty:
        blank = pc.equal(pc.utf8_length(pc.utf8_trim(col, characters=PY_WHITESPACE)), 0)
        flagged = pc.or_(flagged, pc.fill_null(blank, False))
    return flagged


def flag_choice(col, choices: tuple[str, ...], *, required: bool = True) -> pa.Array:
    """Rows whose value is missing (when required) or not one of `choices`: what Fields.choice refuses."""
    unknown = pc.and_(pc.invert(pc.is_null(col)), pc.invert(pc.is_in(col, pa.array(list(choices)))))
    return pc.or_(unknown, pc.is_null(col)) if required else unknown


def flag_int(col, bits: int) -> pa.Array:
    """Rows whose integer does not fit a signed `bits`-bit column: what Fields.int refuses."""
    low, high = INT_BITS[bits]
    return pc.fill_null(pc.or_(pc.less(col, low), pc.greater(col, high)), False)


def flag_present(table: pa.Table, names: tuple[str, ...]) -> pa.Array:
    """Rows that carry any of `names` (fields only the per-record path handles)."""
    masks = [pc.invert(pc.is_null(table.column(n))) for n in names if n in table.column_names]
    return _or(*masks) if masks else _none(table)


def first_flagged(*masks: pa.Array) -> int | None:
    """Index of the first row any mask flags, or None."""
    if not masks:
        return None
    hit = pc.index(_or(*masks), True).as_py()
    return None if hit < 0 else hit


def one_element_lists(values: pa.Array) -> pa.Array:
    """Each value as a one-element list (a single-turn prompt's messages, a battle's one answer)."""
    return pa.ListArray.from_arrays(pa.array(range(len(values) + 1), pa.int32()), values)


def user_messages(texts: pa.Array) -> pa.Array:
    """Each text as a prompt of one user message (pairstore.tables.generations.MSG_TYPE)."""
    roles = pa.array(["user"] * len(texts), pa.string())
    return one_element_lists(pa.StructArray.from_arrays([roles, texts], names=["role", "content"]))


class FlaggedRecord(NotVectorized):
    """Record number `index` (0-based, in file order) is one the vectorized checks leave to the parser."""

    def __init__(self, index: int):
        super().__init__(f"record {index + 1} takes the per-record path")
        self.index = index


def first_record_error(records, index: int, parse) -> None:
    """Run the per-record parser over records 0..index (the flagged one last). Rows before the flagged
    one passed every vectorized check, but the parser reads them again so that anything only it sees
    (a duplicate key, a bad escape) is still found first. Raises the parser's BadInput, naming the file,
    line and field, as the per-record path would; returns when the flagged record was fine after all."""
    for i, rec in enumerate(records):
        parse(rec)
        if i >= index:
            return
