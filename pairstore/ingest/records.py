"""Reading record files: one dict per record with its line (or row, or record) number, streamed.

    for where, rec in read_records("battles.jsonl.gz"):
        ...   # where = 1-based line (JSONL, CSV: the line the record starts on), row (parquet, Arrow)
              # or record (a JSON array's element)

Read: JSONL (`.jsonl`, `.ndjson`, and `.json` whose first character is not `[`), a JSON array of objects
(`.json` starting with `[`, read element by element, never whole), parquet, CSV and Arrow; JSONL, JSON
and CSV may be compressed (`.gz`, `.zst`: pyarrow decompresses them as they are read). Memory stays flat
in the file's size whatever its form.

Every problem raises BadInput naming the file, the line and, where it is
one field's fault, the field: bytes that are not UTF-8, JSON that does not
parse or nests deeper than MAX_DEPTH, a key twice in one object, a number that is not finite, a lone
surrogate escape (`"\\ud800"`: JSON accepts it, UTF-8 and the store cannot hold it). Validation helpers
below keep those messages uniform across ingests and importers. A folder (a Hub dataset or a
`save_to_disk` copy) is read by pairstore.ingest.dataset_files, which reads each of its files here.
"""

from __future__ import annotations

import builtins
import csv
import functools
import io
import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, NoReturn, overload

import pyarrow as pa
import pyarrow.parquet as pq

from pairstore.errors import BadInput
from pairstore.keys import canonical_messages

if TYPE_CHECKING:
    from pairstore.files import StrPath

# The file types by their last suffix (before a compression suffix); `.json` is JSONL or a JSON array.
TYPES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
TYPES[".arrow"] = "arrow"
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
# Compressed text files only: parquet and Arrow compress inside the file.
COMPRESSIBLE = ("jsonl", "json", "csv")
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
FORMATS = {s: t for s, t in TYPES.items()}  # every data-file suffix (dataset folders look for these)
# Records nest a few levels (messages, moderation objects); anything deeper is not a record.
MAX_DEPTH = 64
INT_BITS = {32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}  # INTEGER and BIGINT columns
# The times a record may carry (voted_at, created_at, ...): anything outside is a broken clock or a typo.
EARLIEST = datetime(1970, 1, 1)
LATEST = datetime(2200, 1, 1)
# A JSON escape of a UTF-16 surrogate: the only way a str from json.loads can hold one.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_EXPECTED = ".jsonl, .json, .ndjson, .parquet, .csv or .arrow (.jsonl, .json and .csv also as .gz or .zst)"


def file_type(path: StrPath) -> tuple[str, str | None]:
    """(type, compression) of a data file by its name: `a.jsonl.gz` -> ('jsonl', 'gzip'). A `.json` file is
    'json' here; whether it holds an array or JSONL is read from its first character (json_layout)."""
    suffixes = [s.lower() for s in Path(str(path)).suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    base = suffixes[-2] if compression and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    kind = TYPES.get(base)
    if kind is None or (compression and kind not in COMPRESSIBLE):
        raise BadInput(f"unknown file type (expected {_EXPECTED})", path=str(path))
    return kind, compression


def is_data_file(path: StrPath) -> bool:
    """Whether the name is one read_records reads (dataset folders look for these)."""
    try:
        file_type(path)
    except BadInput:
        return False
    return True


def file_format(path: StrPath) -> str:
    """'jsonl', 'array', 'parquet', 'csv' or 'arrow': how the file's records are read."""
    kind, _ = file_type(path)
    if kind == "json":
        return json_layout(path)
    return kind


def open_bytes(path: StrPath) -> IO[bytes]:
    """The file's bytes, decompressed as they are read when the name says so."""
    _, compression = file_type(path)
    if compression is None:
        return open(path, "rb")
    try:
        stream = pa.input_stream(str(path), compression=compression)
    except (OSError, pa.ArrowException) as e:
        raise BadInput(f"cannot read the {compression} file ({_first_line(e)})", path=str(path)) from None
    return io.BufferedReader(stream, buffer_size=1 << 20)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


@functools.lru_cache(maxsize=256)
def _layout(path: str, size: int, mtime: float) -> str:
    with open_bytes(path) as f:
        try:
            head = f.read(1 << 16)
        except (OSError, pa.ArrowException, EOFError) as e:
            raise BadInput(f"damaged compressed data ({_first_line(e)})", path=path) from None
        while head and head.lstrip(b"\xef\xbb\xbf \t\r\n") == b"" and len(head) < 1 << 24:
            more = f.read(1 << 16)
            if not more:
                break
            head += more
    return "array" if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") else "jsonl"


def json_layout(path: StrPath) -> str:
    """'array' for a `.json` file holding one JSON array, 'jsonl' for one object a line."""
    st = Path(path).stat()
    return _layout(str(path), st.st_size, st.st_mtime)


def unit_of(path: StrPath) -> str:
    """What a record's number counts in this file: 'row' (parquet, Arrow), 'record' (a JSON array's
    elements, which may share a line) or 'line'."""
    try:
        kind = file_format(path)
    except (BadInput, OSError):
        return "line"
    return {"parquet": "row", "arrow": "row", "array": "record"}.get(kind, "line")


def read_records(path: StrPath, *, start: int = 0) -> Iterator[tuple[int, dict]]:
    """Yield (line_or_row_number, record) from a data file (module docstring), streamed. With `start`,
    the first `start` records are skipped (read, not checked again)."""
    file = Path(path)
    if not file.exists():
        raise BadInput("no such file", path=str(file))
    if file.is_dir():
        raise BadInput("a folder, not a file", path=str(path))
    kind = file_format(file)
    if file.stat().st_size == 0:
        raise BadInput("empty file", path=str(file))
    reader = {
        "jsonl": _read_jsonl,
        "array": _read_array,
        "parquet": _read_parquet,
        "csv": _read_csv,
        "arrow": _read_arrow,
    }[kind]
    yield from reader(file, start)


def lone_surrogate(value: object, where: str = "") -> tuple[str, str] | None:
    """(field path, the escape) of the first string in `value` holding a lone UTF-16 surrogate, else None."""
    stack: list[tuple[str, object]] = [(where, value)]
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


def _too_deep(value: object) -> bool:
    stack: list[tuple[object, int]] = [(value, 1)]
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


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
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


def _not_a_number(token: str) -> NoReturn:
    raise _NotFinite(token)


def loads_record(text: str) -> Any:
    """json.loads, refusing a key twice in one object (readers disagree on which wins) and numbers that are
    not finite (NaN, Infinity, 1e400). Raises json.JSONDecodeError, _DuplicateKey or _NotFinite."""
    return json.loads(
        text, object_pairs_hook=_object, parse_float=_finite_float, parse_constant=_not_a_number
    )


def _parse_json(
    raw: bytes, text: str, path: Path, number: int, unit: str = "line", hint: str = ""
) -> dict[str, Any]:
    def bad(message: str, field: str | None = None) -> BadInput:
        return BadInput(message, path=str(path), line=number, unit=unit, field=field)

    try:
        rec = loads_record(text)
    except _DuplicateKey as e:
        raise bad("a key appears twice in one JSON object", str(e)) from None
    except _NotFinite as e:
        raise bad(f"{e} is not a finite number") from None
    except json.JSONDecodeError as e:
        raise bad(f"invalid JSON: {e.msg} at column {e.colno}{hint}") from None
    except RecursionError:
        raise bad(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    # Cheap byte tests first: only a line with that many brackets can nest that deep, only one with a
    # surrogate escape can hold a lone surrogate.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _too_deep(rec):
        raise bad(f"JSON nested deeper than {MAX_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(raw):
        found = lone_surrogate(rec)
        if found:
            raise bad(
                f"lone surrogate escape {found[1]} (not a Unicode character; UTF-8 cannot hold it)",
                found[0] or None,
            )
    if not isinstance(rec, dict):
        raise bad(f"expected a JSON object, got {type(rec).__name__}")
    return rec


def _decoded(raw: bytes, path: Path, number: int, first: bool, unit: str = "line") -> str:
    try:
        # One BOM rule for every format: a BOM at the very start of the file is dropped.
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as e:
        where = "of the line" if unit == "line" else f"of the {unit}"
        raise BadInput(
            f"bytes that are not UTF-8 at byte {e.start} {where}", path=str(path), line=number, unit=unit
        ) from None


def _damaged(path: Path, e: BaseException) -> BadInput:
    return BadInput(f"damaged compressed data ({_first_line(e)})", path=str(path))


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) of a text file, decompressed as it is read."""
    with open_bytes(path) as f:
        lineno = 0
        while True:
            try:
                raw = f.readline()
            except (OSError, pa.ArrowException, EOFError) as e:
                raise _damaged(path, e) from None
            if not raw:
                return
            lineno += 1
            yield lineno, raw


def _read_jsonl(path: Path, start: int = 0) -> Iterator[tuple[int, dict]]:
    seen = 0
    for lineno, raw in _lines(path):
        if seen < start:  # records already read: skipped, as their blank lines are
            if raw.strip():
                seen += 1
            continue
        line = _decoded(raw, path, lineno, lineno == 1)
        if not line.strip():
            continue
        hint = " (truncated last line?)" if not raw.endswith(b"\n") else ""
        rec = _parse_json(raw, line, path, lineno, hint=hint)
        seen += 1
        yield lineno, rec
    if seen == 0:
        raise BadInput("no records (only blank lines)", path=str(path))


# JSON strings (whole, or cut off by the end of the buffer) and brackets: all an array reader needs to
# find where each element ends, at the speed of the regular expression engine.
_ARRAY_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*(")?|[\[\]{}]')
_BLANK = b" \t\r\n"


def _read_array(path: Path, start: int = 0) -> Iterator[tuple[int, dict]]:
    """The elements of a JSON array of objects, one at a time: a chunk is read, each element's end found
    by bracket depth (strings skipped whole), the element parsed alone. Memory: one element and a chunk."""
    with open_bytes(path) as f:
        buf = b""
        eof = False

        def more() -> bool:
            nonlocal buf, eof
            if eof:
                return False
            try:
                chunk = f.read(1 << 20)
            except (OSError, pa.ArrowException, EOFError) as e:
                raise _damaged(path, e) from None
            if not chunk:
                eof = True
                return False
            buf += chunk
            return True

        def current() -> bytes:
            return buf

        def skip_blank(at: int) -> int:
            while True:
                while at < len(buf) and buf[at] in _BLANK:
                    at += 1
                if at < len(buf) or not more():
                    return at

        more()
        at = 3 if buf.startswith(b"\xef\xbb\xbf") else 0
        at = skip_blank(at)
        if at >= len(buf) or buf[at : at + 1] != b"[":
            raise BadInput("expected a JSON array of objects", path=str(path), line=1, unit="record")
        at += 1
        number = 0
        while True:
            at = skip_blank(at)
            if buf[at : at + 1] == b"]":
                break
            if at >= len(buf):
                raise BadInput("the array is cut off by the end of the file", path=str(path))
            if number:
                if buf[at : at + 1] != b",":
                    raise BadInput(
                        "expected ',' or ']' after the record", path=str(path), line=number, unit="record"
                    )
                at = skip_blank(at + 1)
            number += 1
            if buf[at : at + 1] != b"{":
                got = buf[at : at + 1].decode("latin-1") or "the end of the file"
                raise BadInput(
                    f"expected a JSON object, got {got!r}", path=str(path), line=number, unit="record"
                )
            end = _element_end(at, more, current)
            if end is None:
                raise BadInput(
                    "the record is cut off by the end of the file", path=str(path), line=number, unit="record"
                )
            raw = buf[at:end]
            if number > start:
                text = _decoded(raw, path, number, False, unit="record")
                yield number, _parse_json(raw, text, path, number, unit="record")
            buf, at = buf[end:], 0
        if skip_blank(at + 1) < len(buf):
            raise BadInput("text after the array's end", path=str(path))
    if number == 0:
        raise BadInput("no records (an empty array)", path=str(path))


def _element_end(at: int, more: Callable[[], bool], current: Callable[[], bytes]) -> int | None:
    """The index just past the object that starts at `at` (buffer grown by `more()` as needed), or None
    when the file ends first."""
    depth, pos = 0, at
    while True:
        buf = current()
        for m in _ARRAY_TOKEN.finditer(buf, pos):
            token = m.group()
            if token[:1] == b'"':
                if m.group(1) is None:  # the string runs past the buffer: read more, scan it again
                    pos = m.start()
                    break
                continue
            depth += 1 if token in (b"{", b"[") else -1
            if depth == 0:
                return m.end()
        else:
            pos = len(buf)
        if not more():
            return None


def _batches_to_rows(
    path: Path, batches: Iterable[pa.RecordBatch], start: int = 0
) -> Iterator[tuple[int, dict]]:
    row = 0
    batches = iter(batches)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except Exception as e:  # a damaged data page: pyarrow raises OSError, ArrowInvalid, ...
            raise BadInput(
                f"damaged data after row {row} ({_first_line(e)})",
                path=str(path),
            ) from None
        if row + batch.num_rows <= start:
            row += batch.num_rows
            continue
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
            if row > start:
                yield row, rec


def _read_parquet(path: Path, start: int = 0) -> Iterator[tuple[int, dict]]:
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a broken file
        raise BadInput(f"not a readable parquet file ({_first_line(e)})", path=str(path)) from None
    if pf.metadata.num_rows == 0:
        raise BadInput("no rows", path=str(path))
    yield from _batches_to_rows(path, pf.iter_batches(batch_size=4096), start)


def _read_arrow(path: Path, start: int = 0) -> Iterator[tuple[int, dict]]:
    """An Arrow IPC file, as `datasets.Dataset.save_to_disk` writes them (stream
    format), or the file format."""
    try:
        source = pa.memory_map(str(path))
        try:
            reader = pa.ipc.open_stream(source)
        except pa.ArrowInvalid:
            reader = pa.ipc.open_file(source)
            reader = (reader.get_batch(i) for i in range(reader.num_record_batches))
    except Exception as e:  # pyarrow raises several types for a broken file
        raise BadInput(f"not a readable Arrow file ({_first_line(e)})", path=str(path)) from None
    yield from _batches_to_rows(path, reader, start)


def _utf8_lines(path: Path) -> Iterator[str]:
    for lineno, raw in _lines(path):
        yield _decoded(raw, path, lineno, lineno == 1)


def _read_csv(path: Path, start: int = 0) -> Iterator[tuple[int, dict]]:
    """CSV with a header row; every value is a string (an empty cell is ""). A quoted value may span lines:
    the record's number is the line it starts on."""
    # Chat answers run past the csv module's 128 KiB default for one field.
    csv.field_size_limit(2**31 - 1)
    seen = 0
    reader = csv.reader(_utf8_lines(path))
    try:
        header = next(reader, None)
        if not header:
            raise BadInput("no header row", path=str(path), line=1)
        if len(set(header)) != len(header):
            twice = next(h for h in header if header.count(h) > 1)
            raise BadInput("a column name appears twice in the header", path=str(path), line=1, field=twice)
        begin = reader.line_num + 1
        for row in reader:
            if row:
                if len(row) != len(header):
                    raise BadInput(
                        f"{len(row)} values for the {len(header)} columns of the header",
                        path=str(path),
                        line=begin,
                    )
                seen += 1
                if seen > start:
                    yield begin, dict(zip(header, row))
            begin = reader.line_num + 1
    except csv.Error as e:
        raise BadInput(f"not valid CSV: {e}", path=str(path), line=reader.line_num) from None
    if seen == 0:
        raise BadInput("no records (only a header)", path=str(path))


class Fields:
    """Typed field access for one record, with errors that name file, line and field."""

    def __init__(self, rec: dict, path: StrPath, line: int) -> None:
        self.rec, self.path, self.line = rec, str(path), line

    def error(self, field: builtins.str, message: builtins.str) -> BadInput:
        return BadInput(message, path=self.path, line=self.line, field=field, unit=unit_of(self.path))

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
    def choice(
        self, name: builtins.str, choices: Collection[builtins.str], *, required: Literal[True] = ...
    ) -> builtins.str: ...
    @overload
    def choice(
        self, name: builtins.str, choices: Collection[builtins.str], *, required: builtins.bool
    ) -> builtins.str | None: ...
    def choice(
        self, name: builtins.str, choices: Collection[builtins.str], *, required: builtins.bool = True
    ) -> builtins.str | None:
        v = self.str(name, required=required)
        if v is not None and v not in choices:
            raise self.error(name, f"unknown value {v!r} (expected one of {', '.join(choices)})")
        return v

    @overload
    def int(
        self,
        name: builtins.str,
        *,
        required: Literal[True],
        default: builtins.int | None = ...,
        bits: builtins.int = ...,
    ) -> builtins.int: ...
    @overload
    def int(
        self,
        name: builtins.str,
        *,
        required: builtins.bool = ...,
        default: builtins.int,
        bits: builtins.int = ...,
    ) -> builtins.int: ...
    @overload
    def int(
        self,
        name: builtins.str,
        *,
        required: builtins.bool = ...,
        default: None = ...,
        bits: builtins.int = ...,
    ) -> builtins.int | None: ...
    def int(
        self,
        name: builtins.str,
        *,
        required: builtins.bool = False,
        default: builtins.int | None = None,
        bits: builtins.int = 64,
    ) -> builtins.int | None:
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
