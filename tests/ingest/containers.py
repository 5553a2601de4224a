"""Record files in every container ingest reads: JSONL, a JSON array, and both compressed (gzip, zstd)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa

# The names a test writes records under: the suffixes say the container.
CONTAINERS = ("jsonl", "json", "jsonl.gz", "json.gz", "jsonl.zst", "json.zst")


def write_records(path: Path, records: list) -> str:
    """`records` in the container `path`'s suffixes name (a `.json` file is a JSON array); the path."""
    name = str(path)
    array = ".json" in name and ".jsonl" not in name
    rows = (
        json.dumps(records, ensure_ascii=False)
        if array
        else "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    )
    data = rows.encode("utf-8")
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(data, mtime=0))
    elif name.endswith(".zst"):
        with pa.output_stream(name, compression="zstd") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return name
