"""Reading record files: JSONL or parquet, one dict per record with its line (or row) number.

    for where, rec in read_records("battles.jsonl"):
        ...   # where = 1-based line (JSONL) or row (parquet)

Every problem raises BadInput naming the file, the line and, where it is
one field's fault, the field. Validation helpers below keep those messages
uniform across ingests and importers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq

from pairstore.errors import BadInput
from pairstore.keys import canonical_messages

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


def file_format(path) -> str:
    p = str(path).lower()
    if p.endswith(".parquet"):
        return "parquet"
    if p.endswith(JSONL_SUFFIXES):
        return "jsonl"
    raise BadInput("unknown file type (expected .jsonl, .json, .ndjson or .parquet)", path=str(path))


def read_records(path) -> Iterator[tuple[int, dict]]:
    """Yield (line_or_row_number, record) from a JSONL or parquet file."""
    path = Path(path)
    if not path.exists():
        raise BadInput("no such file", path=str(path))
    fmt = file_format(path)
    if path.stat().st_size == 0:
        raise BadInput("empty file", path=str(path))
    if fmt == "jsonl":
        yield from _read_jsonl(path)
    else:
        yield from _read_parquet(path)


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    seen = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise BadInput(f"bytes that are not UTF-8 at byte {e.start} of the line", path=str(path),
                               line=lineno) from None
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                truncated = not raw.endswith(b"\n")
                hint = " (truncated last line?)" if truncated else ""
                raise BadInput(f"invalid JSON: {e.msg} at column {e.colno}{hint}", path=str(path),
                               line=lineno) from None
            if not isinstance(rec, dict):
                raise BadInput(f"expected a JSON object, got {type(rec).__name__}", path=str(path), line=lineno)
            seen += 1
            yield lineno, rec
    if seen == 0:
        raise BadInput("no records (only blank lines)", path=str(path))


def _read_parquet(path: Path) -> Iterator[tuple[int, dict]]:

    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a broken file
        raise BadInput(f"not a readable parquet file ({str(e).splitlines()[0]})", path=str(path)) from None
    if pf.metadata.num_rows == 0:
        raise BadInput("no rows", path=str(path))
    row = 0
    for batch in pf.iter_batches(batch_size=4096):
        for rec in batch.to_pylist():
            row += 1
            yield row, rec


class Fields:
    """Typed field access for one record, with errors that name file, line and field."""

    def __init__(self, rec: dict, path, line: int):
        self.rec, self.path, self.line = rec, str(path), line

    def error(self, field: str, message: str) -> BadInput:
        return BadInput(message, path=self.path, line=self.line, field=field)

    def has(self, name: str) -> bool:
        return self.rec.get(name) is not None

    def str(self, name: str, *, required: bool = True, allow_empty: bool = False,
            allow_int: bool = False) -> str | None:
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return None
        if isinstance(v, bool) or not isinstance(v, (str, int) if allow_int else str):
            raise self.error(name, f"expected a string, got {type(v).__name__}")
        v = str(v)
        if not allow_empty and not v.strip():
            raise self.error(name, "empty value")
        return v

    def choice(self, name: str, choices, *, required: bool = True) -> str | None:
        v = self.str(name, required=required)
        if v is not None and v not in choices:
            raise self.error(name, f"unknown value {v!r} (expected one of {', '.join(choices)})")
        return v

    def int(self, name: str, *, required: bool = False, default=None):
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                return int(v)
            raise self.error(name, f"expected an integer, got {type(v).__name__}")
        return v

    def float(self, name: str, *, required: bool = False):
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.error(name, f"expected a number, got {type(v).__name__}")
        return float(v)

    def bool(self, name: str, *, default: bool = False) -> bool:
        v = self.rec.get(name)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.error(name, f"expected true or false, got {type(v).__name__}")
        return v

    def timestamp(self, name: str) -> datetime | None:
        v = self.rec.get(name)
        if v is None:
            return None
        if isinstance(v, datetime):
            return v.replace(tzinfo=None) if v.tzinfo is None else v.astimezone().replace(tzinfo=None)
        if not isinstance(v, str):
            raise self.error(name, f"expected an ISO 8601 time, got {type(v).__name__}")
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise self.error(name, f"not an ISO 8601 time: {v!r}") from None
        # Stored as naive UTC.
        if t.tzinfo is not None:
            t = t.astimezone(timezone.utc).replace(tzinfo=None)
        return t

    def messages(self, name: str, *, required: bool = True) -> list[dict] | None:
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return None
        return canonical_messages(v, where=name, path=self.path, line=self.line)

    def answer_text(self, name: str, *, required: bool = True) -> str | None:
        """An answer given as a string or as a message list (the last assistant message is the answer)."""
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return None
        if isinstance(v, str):
            return v
        msgs = self.messages(name)
        answers = [m["content"] for m in msgs if m["role"] == "assistant"]
        if not answers:
            raise self.error(name, "message list has no assistant message")
        return answers[-1]
