"""Reading a whole JSONL file as Arrow at C speed, for the ingests' vectorized path.

    table = read_jsonl_arrow(path, schema, known=("prompt", "decoding"))   # None: take the per-record path

The vectorized path of an ingest (pairstore.ingest.generations) reads the file with pyarrow's JSON reader
into the columns it expects, checks every column with Arrow compute and joins item ids in DuckDB. It
takes a file only when its rows are exactly its lines (no blank lines, so row i is line i + 1) and every
value has the column's JSON type; anything else - a number where a string belongs, a lone surrogate, a
field that needs per-record handling - returns None and the ingest reads the file record by record,
whose checks name the file, line and field of the first bad record. Both paths store the same rows
with the same keys (tests/test_ingest_bulk.py).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.json as pa_json

# pyarrow's reader parses blocks of this size in parallel; a record longer than a block is an error
# (we then take the per-record path), so it is generous.
BLOCK_SIZE = 64 << 20


def count_lines(path: Path) -> int:
    """Lines in the file, a last line without a newline counted."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def read_jsonl_arrow(path, schema: pa.Schema, *, refuse: tuple[str, ...] = ()) -> pa.Table | None:
    """The JSONL file at `path` as a table with `schema`'s columns (absent fields NULL), or None when the
    vectorized path cannot take it: a value of another JSON type, a malformed line, blank lines, or a
    non-null field named in `refuse` (fields the per-record path handles)."""
    path = Path(path)
    if path.suffix.lower() not in (".jsonl", ".ndjson") or path.stat().st_size == 0:
        return None
    try:
        table = pa_json.read_json(
            path,
            read_options=pa_json.ReadOptions(block_size=BLOCK_SIZE, use_threads=True),
            parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OSError):
        return None
    if table.num_rows == 0 or table.num_rows != count_lines(path):
        return None
    for name in refuse:
        if name in table.column_names and table.column(name).null_count != table.num_rows:
            return None
    return table.select(schema.names)
