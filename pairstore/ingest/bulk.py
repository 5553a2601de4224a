"""Reading a JSONL file as a stream of Arrow tables at C speed, for the ingests' vectorized path.

    for table in iter_jsonl_batches(path, schema, refuse=("prompt", "decoding")):  # NotVectorized: per record
        ...

The vectorized path of an ingest (pairstore.ingest.generations) streams the file through pyarrow's JSON reader
in blocks, into the columns it expects, checks every column with Arrow compute and joins item ids in DuckDB.
It takes a file only when its rows are exactly its lines (no blank lines, so row i is line i + 1) and every
value has the column's JSON type; anything else - a number where a string belongs, a lone surrogate, a field
that needs per-record handling - raises NotVectorized and the ingest reads the file record by record, whose
checks name the file, line and field of the first bad record. Both paths store the same rows with the same
keys (tests/test_ingest_bulk.py).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.json as pa_json

# The streaming reader's blocks: what is in memory at once (a few tens of thousands of records). A
# record longer than a block is an error, and the file then takes the per-record path.
STREAM_BLOCK_SIZE = 16 << 20


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


def iter_jsonl_batches(path, schema: pa.Schema, *, refuse: tuple[str, ...] = ()):
    """The JSONL file at `path` as a stream of tables with `schema`'s columns, one per block of about
    STREAM_BLOCK_SIZE bytes, so memory stays bounded whatever the file's size. Raises NotVectorized
    where read_jsonl_arrow returns None; the caller checks the row count against count_lines at the
    end (blank lines) and takes the per-record path on NotVectorized."""
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
            yield table.select(schema.names)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError, OSError, StopIteration) as e:
        raise NotVectorized(str(e)) from None
