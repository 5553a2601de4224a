"""Reading record files: JSONL, parquet, CSV or Arrow, one dict per record with its line (or row) number.

    for where, rec in read_records("battles.jsonl"):
        ...   # where = 1-based line (JSONL, CSV: the line the record starts on) or row (parquet, Arrow)

Every problem raises BadInput naming the file, the line and, where it is
one field's fault, the field: bytes that are not UTF-8, JSON that does not
parse or nests deeper than MAX_DEPTH, a lone surrogate escape (`"\\ud800"`:
JSON accepts it, UTF-8 and the store cannot hold it). Validation helpers below
keep those messages uniform across ingests and importers. A folder (a Hub
dataset or a `save_to_disk` copy) is read by pairstore.ingest.dataset_files, which
reads each of its files here.
"""

from __future__ import annotations

import builtins
import csv
import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, overload

import pyarrow as pa
import pyarrow.parquet as pq

from pairstore.errors import BadInput
from pairstore.keys import canonical_messages

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
FORMATS = {".parquet": "parquet", ".csv": "csv", ".arrow": "arrow", **{s: "jsonl" for s in JSONL_SUFFIXES}}
# Records nest a few levels (messages, moderation objects); anything deeper is not a record.
MAX_DEPTH = 64
INT_BITS = {32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}  # INTEGER and BIGINT columns
# The times a record may carry (voted_at, created_at, ...): anything outside is a broken clock or a typo.
EARLIEST = datetime(1970, 1, 1)
LATEST = datetime(2200, 1, 1)
# A JSON escape of a UTF-16 surrogate: the only way a str from json.loads can hold one.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def file_format(path) -> str:
    fmt = FORMATS.get(Path(str(path).lower()).suffix)
    if fmt is None:
        raise BadInput(
            "unknown file type (expected .jsonl, .json, .ndjson, .parquet, .csv or .arrow)", path=str(path)
        )
    return fmt


def read_records(path) -> Iterator[tuple[int, dict]]:
    """Yield (line_or_row_number, record) from a JSONL, parquet, CSV or Arrow file."""
    path = Path(path)
    if not path.exists():
        raise BadInput("no such file", path=str(path))
    if path.is_dir():
        raise BadInput("a folder, not a file", path=str(path))
    fmt = file_format(path)
    if path.stat().st_size == 0:
        raise BadInput("empty file", path=str(path))
    yield from {"jsonl": _read_jsonl, "parquet": _read_parquet, "csv": _read_csv, "arrow": _read_arrow}[fmt](
        path
    )


def lone_surrogate(value, where: str = "") -> tuple[str, str] | None:
    """(field path, the escape) of the first string in `value` holding a lone UTF-16 surrogate, else None."""
    stack = [(where, value)]
    while stack:
        name, v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                return name, f"\\u{ord(v[e.start]):04x} at character {e.start}"
        elif isinstance(v, dict):
            stack.extend((f"{name}.{k}" if name else str(k), x) for k, x in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend((f"{name}[{i}]", x) for i, x in reversed(list(enumerate(v))))
    return None


def _too_deep(value) -> bool:
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > MAX_DEPTH:
                return True
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


class _DuplicateKey(ValueError):
    pass


class _NotFinite(ValueError):
    pass


def _object(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):  # cheap: only an object with a repeated key pays for finding it
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return d


def _finite_float(text: str) -> float:
    v = float(text)
    if v in (math.inf, -math.inf):
        raise _NotFinite(text)
    return v


def _not_a_number(token: str):
    raise _NotFinite(token)


def loads_record(text: str):
    """json.loads, refusing a key twice in one object (readers disagree on which wins) and numbers that are
    not finite (NaN, Infinity, 1e400). Raises json.JSONDecodeError, _DuplicateKey or _NotFinite."""
    return json.loads(
        text, object_pairs_hook=_object, parse_float=_finite_float, parse_constant=_not_a_number
    )


def _parse_json_line(raw: bytes, line: str, path: Path, lineno: int):
    try:
        rec = loads_record(line)
    except _DuplicateKey as e:
        raise BadInput(
            "a key appears twice in one JSON object", path=str(path), line=lineno, field=str(e)
        ) from None
    except _NotFinite as e:
        raise BadInput(f"{e} is not a finite number", path=str(path), line=lineno) from None
    except json.JSONDecodeError as e:
        hint = " (truncated last line?)" if not raw.endswith(b"\n") else ""
        raise BadInput(
            f"invalid JSON: {e.msg} at column {e.colno}{hint}", path=str(path), line=lineno
        ) from None
    except RecursionError:
        raise BadInput(f"JSON nested deeper than {MAX_DEPTH} levels", path=str(path), line=lineno) from None
    # Cheap byte tests first: only a line with that many brackets can nest that deep, only one with a
    # surrogate escape can hold a lone surrogate.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _too_deep(rec):
        raise BadInput(f"JSON nested deeper than {MAX_DEPTH} levels", path=str(path), line=lineno)
    if _SURROGATE_ESCAPE.search(raw):
        found = lone_surrogate(rec)
        if found:
            raise BadInput(
                f"lone surrogate escape {found[1]} (not a Unicode character; UTF-8 cannot hold it)",
                path=str(path),
                line=lineno,
                field=found[0] or None,
            )
    return rec


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    seen = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                # One BOM rule for every format: a BOM at the very start of the file is dropped.
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise BadInput(
                    f"bytes that are not UTF-8 at byte {e.start} of the line", path=str(path), line=lineno
                ) from None
            if not line.strip():
                continue
            rec = _parse_json_line(raw, line, path, lineno)
            if not isinstance(rec, dict):
                raise BadInput(
                    f"expected a JSON object, got {type(rec).__name__}", path=str(path), line=lineno
                )
            seen += 1
            yield lineno, rec
    if seen == 0:
        raise BadInput("no records (only blank lines)", path=str(path))


def _batches_to_rows(path: Path, batches) -> Iterator[tuple[int, dict]]:
    row = 0
    batches = iter(batches)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except Exception as e:  # a damaged data page: pyarrow raises OSError, ArrowInvalid, ...
            raise BadInput(
                f"damaged data after row {row} ({(str(e).splitlines() or [type(e).__name__])[0]})",
                path=str(path),
            ) from None
        try:
            rows = batch.to_pylist()
        except UnicodeDecodeError as e:
            raise BadInput(
                f"a string column holds bytes that are not UTF-8 ({e.reason})",
                path=str(path),
                unit="row",
                line=row + 1,
            ) from None
        for rec in rows:
            row += 1
            yield row, rec


def _read_parquet(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a broken file
        raise BadInput(f"not a readable parquet file ({str(e).splitlines()[0]})", path=str(path)) from None
    if pf.metadata.num_rows == 0:
        raise BadInput("no rows", path=str(path))
    yield from _batches_to_rows(path, pf.iter_batches(batch_size=4096))


def _read_arrow(path: Path) -> Iterator[tuple[int, dict]]:
    """An Arrow IPC file, as `datasets.Dataset.save_to_disk` writes them (stream format), or the file format."""
    try:
        source = pa.memory_map(str(path))
        try:
            reader = pa.ipc.open_stream(source)
        except pa.ArrowInvalid:
            reader = pa.ipc.open_file(source)
            reader = (reader.get_batch(i) for i in range(reader.num_record_batches))
    except Exception as e:  # pyarrow raises several types for a broken file
        raise BadInput(f"not a readable Arrow file ({str(e).splitlines()[0]})", path=str(path)) from None
    yield from _batches_to_rows(path, reader)


def _utf8_lines(f, path: Path) -> Iterator[str]:
    for lineno, raw in enumerate(f, start=1):
        try:
            yield raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise BadInput(
                f"bytes that are not UTF-8 at byte {e.start} of the line", path=str(path), line=lineno
            ) from None


def _read_csv(path: Path) -> Iterator[tuple[int, dict]]:
    """CSV with a header row; every value is a string (an empty cell is ""). A quoted value may span lines:
    the record's number is the line it starts on."""
    # Chat answers run past the csv module's 128 KiB default for one field.
    csv.field_size_limit(2**31 - 1)
    seen = 0
    with open(path, "rb") as f:
        reader = csv.reader(_utf8_lines(f, path))
        try:
            header = next(reader, None)
            if not header:
                raise BadInput("no header row", path=str(path), line=1)
            start = reader.line_num + 1
            for row in reader:
                if row:
                    if len(row) != len(header):
                        raise BadInput(
                            f"{len(row)} values for the {len(header)} columns of the header",
                            path=str(path),
                            line=start,
                        )
                    seen += 1
                    yield start, dict(zip(header, row))
                start = reader.line_num + 1
        except csv.Error as e:
            raise BadInput(f"not valid CSV: {e}", path=str(path), line=reader.line_num) from None
    if seen == 0:
        raise BadInput("no records (only a header)", path=str(path))


class Fields:
    """Typed field access for one record, with errors that name file, line and field."""

    def __init__(self, rec: dict, path, line: int):
        self.rec, self.path, self.line = rec, str(path), line

    def error(self, field: builtins.str, message: builtins.str) -> BadInput:
        return BadInput(message, path=self.path, line=self.line, field=field)

    def has(self, name: builtins.str) -> builtins.bool:
        return self.rec.get(name) is not None

    # The methods below are named after the types they return, so inside the class `str`, `int`, `float`
    # and `bool` name methods: annotations use `builtins.` (and the overloads let a required field be str).
    @overload
    def str(
        self,
        name: builtins.str,
        *,
        required: Literal[True] = ...,
        allow_empty: builtins.bool = ...,
        allow_int: builtins.bool = ...,
    ) -> builtins.str: ...
    @overload
    def str(
        self,
        name: builtins.str,
        *,
        required: builtins.bool,
        allow_empty: builtins.bool = ...,
        allow_int: builtins.bool = ...,
    ) -> builtins.str | None: ...
    def str(
        self,
        name: builtins.str,
        *,
        required: builtins.bool = True,
        allow_empty: builtins.bool = False,
        allow_int: builtins.bool = False,
    ) -> builtins.str | None:
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

    @overload
    def choice(self, name: builtins.str, choices, *, required: Literal[True] = ...) -> builtins.str: ...
    @overload
    def choice(self, name: builtins.str, choices, *, required: builtins.bool) -> builtins.str | None: ...
    def choice(self, name: builtins.str, choices, *, required: builtins.bool = True) -> builtins.str | None:
        v = self.str(name, required=required)
        if v is not None and v not in choices:
            raise self.error(name, f"unknown value {v!r} (expected one of {', '.join(choices)})")
        return v

    def int(
        self,
        name: builtins.str,
        *,
        required: builtins.bool = False,
        default: Any = None,
        bits: builtins.int = 64,
    ) -> Any:
        """An integer that fits a signed `bits`-bit column (32: INTEGER, 64: BIGINT)."""
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return default
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.error(name, f"expected an integer, got {type(v).__name__}")
        low, high = INT_BITS[bits]
        if not low <= v <= high:
            raise self.error(name, f"integer {v} is out of range ({low} to {high})")
        return v

    def float(self, name: builtins.str, *, required: builtins.bool = False) -> builtins.float | None:
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.error(name, f"expected a number, got {type(v).__name__}")
        try:
            f = float(v)
        except OverflowError:
            f = math.inf
        if not math.isfinite(f):
            raise self.error(name, f"expected a finite number, got {v!r}")
        return f

    @overload
    def bool(self, name: builtins.str, *, default: builtins.bool = ...) -> builtins.bool: ...
    @overload
    def bool(self, name: builtins.str, *, default: None) -> builtins.bool | None: ...
    def bool(self, name: builtins.str, *, default: builtins.bool | None = False) -> builtins.bool | None:
        v = self.rec.get(name)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.error(name, f"expected true or false, got {type(v).__name__}")
        return v

    def timestamp(self, name: builtins.str) -> datetime | None:
        v = self.rec.get(name)
        if v is None:
            return None
        if isinstance(v, datetime):
            return self._in_range(name, v, str(v))
        if not isinstance(v, str):
            raise self.error(name, f"expected an ISO 8601 time, got {type(v).__name__}")
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise self.error(name, f"not an ISO 8601 time: {v!r}") from None
        return self._in_range(name, t, v)

    def _in_range(self, name: builtins.str, given: datetime, shown: object) -> datetime:
        # Stored as naive UTC; a time near year 1 or 9999 with an offset has no UTC datetime at all.
        t: datetime | None = given
        try:
            if given.tzinfo is not None:
                t = given.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:
            t = None
        if t is None or not EARLIEST <= t < LATEST:
            raise self.error(
                name, f"time {shown!r} is out of range ({EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d}, UTC)"
            )
        return t

    @overload
    def messages(self, name: builtins.str, *, required: Literal[True] = ...) -> list[dict]: ...
    @overload
    def messages(self, name: builtins.str, *, required: builtins.bool) -> list[dict] | None: ...
    def messages(self, name: builtins.str, *, required: builtins.bool = True) -> list[dict] | None:
        v = self.rec.get(name)
        if v is None:
            if required:
                raise self.error(name, "missing field")
            return None
        return canonical_messages(v, where=name, path=self.path, line=self.line)

    @overload
    def answer_text(self, name: builtins.str, *, required: Literal[True] = ...) -> builtins.str: ...
    @overload
    def answer_text(self, name: builtins.str, *, required: builtins.bool) -> builtins.str | None: ...
    def answer_text(self, name: builtins.str, *, required: builtins.bool = True) -> builtins.str | None:
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
