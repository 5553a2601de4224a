"""What a declared field's values are: how one value a record gives is read, and how a whole column is.

    Text().value("hi")                          # -> "hi"; a number raises Problem("expected a string, ...")
    Text().column(pa.chunked_array([["hi", " "]]))   # -> Checked(array, first_bad=1, "empty value")

A kind has two readings of the same thing, and the tests hold them equal (tests/ingest/test_kinds.py, a
property over generated JSON values): `value` reads one value of a parsed record (the record-by-record
way, for any file), `column` reads a whole column, as pyarrow's JSON reader gave it (`direct`: the type
the reader is told, INFER for one it infers, None for a kind it never reads) or as `value`'s results
make it. Only the kind knows its type rules; a format declares which kind each field is
(pairstore.ingest.declare) and never reads a value itself.

`column` returns the checked column and the first row whose value breaks the kind's rule (blank text,
an unknown choice, an integer out of range, a time that is not one), with the message that names why:
the same message whichever way the value came in.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.ingest.records import EARLIEST, INT_BITS, LATEST

# A column as a reader gives it: one array, or the chunks of a table's column.
Column: TypeAlias = "pa.Array | pa.ChunkedArray"

MSG_TYPE = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
INFER = "infer"  # `direct`: the JSON reader infers the type; `column` takes the types it knows
# What str.strip() removes, exactly: Arrow's own notion of whitespace is not Python's. Written out, since
# finding it takes a third of a second at every start (tests/ingest/test_kinds.py checks it against
# str.isspace over every code point).
PY_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class Problem(ValueError):
    """A value the kind does not take; the message names why (the caller adds file, line and field, or
    `field` where the problem is one part of the value: `prompt[0].content[1]`)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotDirect(Exception):
    """A column whose type the direct reading does not take: read the file's records one by one."""


@dataclass(frozen=True)
class Checked:
    array: pa.Array  # the checked column, the kind's `arrow` type
    first_bad: int | None = None  # the first row that breaks the kind's rule
    message: str = ""  # why

    def __post_init__(self) -> None:
        if self.first_bad is None:
            object.__setattr__(self, "message", "")


def _holds(t: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    """Whether type `t` or a type nested in it passes `test`."""
    if test(t):
        return True
    if pa.types.is_struct(t):
        return any(_holds(t.field(i).type, test) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _holds(t.value_type, test)
    return False


def type_name(v: Any) -> str:
    return type(v).__name__


def as_array(col: Column) -> pa.Array:
    if not isinstance(col, pa.ChunkedArray):
        return col
    try:
        return col.combine_chunks()
    except pa.ArrowException as e:  # pyarrow cannot join some nested null columns its reader makes
        raise NotDirect(str(e)) from None


def _first(mask: Column) -> int | None:
    """Index of the first true value of a boolean mask (nulls false), or None."""
    hit = pc.index(pc.fill_null(mask, False), True).as_py()
    return None if hit < 0 else hit


def _nulls(n: int, t: pa.DataType) -> pa.Array:
    return pa.nulls(n, t)


class Kind(ABC):
    """One kind of field value (module docstring); each kind defines `value` and `column`."""

    arrow: pa.DataType = pa.string()
    direct: pa.DataType | str | None = pa.string()
    doc: str = ""

    @property
    def given(self) -> pa.DataType:
        """The type of `value`'s results (what `column` takes from the record-by-record reading)."""
        return self.arrow

    @abstractmethod
    def value(self, v: Any) -> Any:
        """One value a record gives (never None): what it becomes in the column, or Problem."""

    @abstractmethod
    def column(self, col: Column) -> Checked:
        """A whole column: as the JSON reader read it, or as `value` made it."""

    def takes(self, t: pa.DataType) -> bool:
        """Whether a column of type `t` as the JSON reader gives it is one `column` reads (one of
        `value`'s results' type may mean something else there: a doc given as a string)."""
        return True

    def read_whole(self, col: Column) -> Checked:
        """`column` of a column the JSON reader gave; NotDirect for a type it does not take, and for one
        holding a time the reader inferred from a string (it reads "2026-01-02T03:04:05Z" as a timestamp:
        the string is what the record holds)."""
        if not self.takes(col.type) or _holds(col.type, pa.types.is_timestamp):
            raise NotDirect(f"{type(self).__name__}: {col.type}")
        return self.column(col)

    def describe(self) -> str:
        return self.doc


def _strings(col: Column, kind: str) -> pa.Array:
    """A column that must be strings (or all null), else NotDirect."""
    arr = as_array(col)
    if pa.types.is_null(arr.type):
        return _nulls(len(arr), pa.string())
    if not pa.types.is_string(arr.type):
        raise NotDirect(f"{kind}: {arr.type}")
    return arr


# A string with nothing but PY_WHITESPACE in it (empty too): one regular expression pass, no copy.
_BLANK = "^[" + "".join(f"\\x{{{ord(c):04x}}}" for c in PY_WHITESPACE) + "]*$"


@cache
def _blank_starts() -> pa.Array:
    # (made at first use, not at import: pyarrow imports pandas at its first conversion from Python)
    return pa.array(["", *PY_WHITESPACE])


def blank(col: Column) -> pa.Array:
    """Per value: whether it is empty or whitespace only as str.strip() sees it (a null is not). Only
    a value that is empty or opens with whitespace can be, and the regular expression reads the column
    only where one does: a regular expression match per value costs several times a first-character
    lookup, and most columns hold no such value."""
    arr = as_array(col)
    may = pc.fill_null(pc.is_in(pc.utf8_slice_codeunits(arr, 0, 1), value_set=_blank_starts()), False)
    if not pc.any(may).as_py():
        return may
    return pc.fill_null(pc.and_(may, pc.match_substring_regex(arr, pattern=_BLANK)), False)


class Text(Kind):
    """A string; blank ones refused unless `allow_empty`."""

    def __init__(self, *, allow_empty: bool = False) -> None:
        self.allow_empty = allow_empty
        self.doc = "a string" if allow_empty else "a non-blank string"

    def value(self, v: Any) -> str:
        if not isinstance(v, str):
            raise Problem(f"expected a string, got {type_name(v)}")
        return v

    def column(self, col: Column) -> Checked:
        arr = _strings(col, "text")
        if self.allow_empty:
            return Checked(arr)
        bad = _first(blank(arr))
        return Checked(arr, bad, "empty value")


class Id(Text):
    """An id: a string or an integer (written as its decimal digits), not blank unless `allow_empty`."""

    direct = INFER
    doc = "a string or an integer"

    def __init__(self, *, allow_empty: bool = False) -> None:
        super().__init__(allow_empty=allow_empty)
        self.doc = Id.doc

    def value(self, v: Any) -> str:
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise Problem(f"expected a string, got {type_name(v)}")
        return str(v)

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_integer(arr.type):
            arr = pc.cast(arr, pa.string())
        return super().column(arr)


class Choice(Text):
    """One of a few strings."""

    def __init__(self, choices: Sequence[str]) -> None:
        super().__init__()
        self.choices = tuple(choices)
        self.doc = "one of " + ", ".join(f"`{c}`" for c in self.choices)

    def column(self, col: Column) -> Checked:
        checked = super().column(col)
        arr = checked.array
        unknown = _first(
            pc.and_(pc.is_valid(arr), pc.invert(pc.is_in(arr, pa.array(self.choices, pa.string()))))
        )
        if unknown is not None and (checked.first_bad is None or unknown < checked.first_bad):
            got = arr[unknown].as_py()
            return Checked(arr, unknown, f"unknown value {got!r} (expected one of {', '.join(self.choices)})")
        return checked


class Int(Kind):
    """An integer that fits a signed `bits`-bit column (32: INTEGER, 64: BIGINT); 3.0 reads as 3."""

    arrow = pa.int64()
    direct = pa.int64()

    def __init__(self, bits: int = 64) -> None:
        self.bits = bits
        self.doc = f"an integer ({bits}-bit)"

    def value(self, v: Any) -> int:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise Problem(f"expected an integer, got {type_name(v)}")
        low, high = INT_BITS[self.bits]
        if not low <= v <= high:
            raise Problem(f"integer {v} is out of range ({low} to {high})")
        return v

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type):
            return Checked(_nulls(len(arr), pa.int64()))
        if not pa.types.is_int64(arr.type):
            raise NotDirect(f"integer: {arr.type}")
        low, high = INT_BITS[self.bits]
        bad = _first(pc.or_(pc.less(arr, low), pc.greater(arr, high)))
        if bad is not None:
            return Checked(arr, bad, f"integer {arr[bad].as_py()} is out of range ({low} to {high})")
        return Checked(arr)


class Float(Kind):
    """A finite number."""

    arrow = pa.float64()
    direct = pa.float64()
    doc = "a number"

    def value(self, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise Problem(f"expected a number, got {type_name(v)}")
        try:
            f = float(v)
        except OverflowError:
            f = math.inf
        if not math.isfinite(f):
            raise Problem(f"expected a finite number, got {v!r}")
        return f

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type):
            return Checked(_nulls(len(arr), pa.float64()))
        if not (pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type)):
            raise NotDirect(f"number: {arr.type}")
        arr = pc.cast(arr, pa.float64())
        bad = _first(pc.invert(pc.is_finite(arr)))
        if bad is not None:
            return Checked(arr, bad, f"expected a finite number, got {arr[bad].as_py()!r}")
        return Checked(arr)


class Score(Float):
    """A score: a finite number, or true/false as 1 or 0."""

    direct = INFER
    doc = "a number (true and false count 1 and 0)"

    def value(self, v: Any) -> float:
        if isinstance(v, bool):
            return 1.0 if v else 0.0
        return super().value(v)

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_boolean(arr.type):
            return Checked(pc.cast(arr, pa.float64()))
        if pa.types.is_string(arr.type) and arr.null_count == len(arr):
            return Checked(_nulls(len(arr), pa.float64()))
        return super().column(arr)


class Bool(Kind):
    """true or false."""

    arrow = pa.bool_()
    direct = pa.bool_()
    doc = "true or false"

    def value(self, v: Any) -> bool:
        if not isinstance(v, bool):
            raise Problem(f"expected true or false, got {type_name(v)}")
        return v

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type) or pa.types.is_string(arr.type) and arr.null_count == len(arr):
            return Checked(_nulls(len(arr), pa.bool_()))
        if not pa.types.is_boolean(arr.type):
            raise NotDirect(f"bool: {arr.type}")
        return Checked(arr)


def parse_time(text: str | datetime) -> datetime:
    """An ISO 8601 time (`Z` or an offset read as UTC; stored naive UTC) in the range a record may carry;
    Problem otherwise."""
    if isinstance(text, datetime):
        given, shown = text, str(text)
    else:
        try:
            given, shown = datetime.fromisoformat(text.replace("Z", "+00:00")), text
        except ValueError:
            raise Problem(f"not an ISO 8601 time: {text!r}") from None
    t: datetime | None = given
    try:
        if given.tzinfo is not None:
            t = given.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:
        t = None
    if t is None or not EARLIEST <= t < LATEST:
        raise Problem(f"time {shown!r} is out of range ({EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d}, UTC)")
    return t


class Time(Kind):
    """An ISO 8601 time, stored as naive UTC."""

    arrow = pa.timestamp("us")
    direct = pa.string()
    doc = "an ISO 8601 time"

    @property
    def given(self) -> pa.DataType:
        return pa.string()

    def value(self, v: Any) -> str:
        if isinstance(v, datetime):
            return v.isoformat()
        if not isinstance(v, str):
            raise Problem(f"expected an ISO 8601 time, got {type_name(v)}")
        return v

    def column(self, col: Column) -> Checked:
        arr = _strings(col, "time")
        n = len(arr)
        if arr.null_count == n:
            return Checked(_nulls(n, self.arrow))
        # each distinct text parsed once, and each row taken from its text's time by index: a column of
        # a few distinct times costs a few parses, not a Python object per row
        encoded = arr.dictionary_encode()
        times: list[datetime | None] = []
        problems: dict[int, str] = {}
        for code, text in enumerate(encoded.dictionary.to_pylist()):
            try:
                times.append(parse_time(text))
            except Problem as e:
                times.append(None)
                problems[code] = str(e)
        if problems:
            bad_codes = pa.array([code in problems for code in range(len(times))])
            first = pc.index(pc.fill_null(pc.take(bad_codes, encoded.indices), False), True).as_py()
            return Checked(_nulls(n, self.arrow), first, problems[encoded.indices[first].as_py()])
        return Checked(pa.array(times, self.arrow).take(encoded.indices))


class Json(Kind):
    """An object, kept as its JSON text (keys sorted)."""

    direct = None
    doc = "an object"

    def __init__(self, problem: str = "expected an object") -> None:
        self.problem = problem

    def value(self, v: Any) -> str:
        if not isinstance(v, dict):
            raise Problem(self.problem)
        return json.dumps(v, sort_keys=True, ensure_ascii=False)

    def column(self, col: Column) -> Checked:
        return Checked(_strings(col, "object"))


class AnyText(Kind):
    """Any JSON value as text: a string as it is, anything else as its JSON (keys sorted)."""

    direct = INFER
    doc = "any value (kept as text: a string as it is, anything else as JSON)"

    def value(self, v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type):
            return Checked(_nulls(len(arr), pa.string()))
        if pa.types.is_string(arr.type):
            return Checked(arr)
        if pa.types.is_int64(arr.type) or pa.types.is_boolean(arr.type):
            return Checked(pc.cast(arr, pa.string()))  # as json.dumps writes them
        raise NotDirect(f"any value: {arr.type}")


class IntOrText(Kind):
    """A string, or an integer written by `template` ("Level {}"); a blank string refused unless
    `allow_empty`."""

    direct = INFER

    def __init__(self, template: str = "{}", *, allow_empty: bool = False) -> None:
        self.template, self.allow_empty = template, allow_empty
        self.doc = "a string or an integer"

    def value(self, v: Any) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            return self.template.format(v)
        if not isinstance(v, str):
            raise Problem(f"expected a string, got {type_name(v)}")
        return v

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_int64(arr.type):
            before, _, after = self.template.partition("{}")
            return Checked(pc.binary_join_element_wise(before, pc.cast(arr, pa.string()), after, ""))
        arr = _strings(arr, "string or integer")
        if self.allow_empty:
            return Checked(arr)
        return Checked(arr, _first(blank(arr)), "empty value")


class Answer(Text):
    """An answer: a string, or (read by its format's reshape, which makes it one) a message or a
    conversation ending in the answer."""

    doc = "a string, a message or a conversation ending in the answer"

    def __init__(self) -> None:
        super().__init__(allow_empty=True)
        self.doc = Answer.doc

    def value(self, v: Any) -> Any:
        if isinstance(v, (str, list, dict)):
            return v
        raise Problem(f"expected a string or messages, got {type_name(v)}")


class Values(Kind):
    """A value read by a function of one value (`read`), a column one value at a time: for the nested
    shapes (message lists, lm-eval docs) whose reading is Python's anyway."""

    def __init__(
        self,
        read: Callable[[Any], Any],
        arrow: pa.DataType,
        doc: str,
        *,
        direct: pa.DataType | str | None = INFER,
    ) -> None:
        self.read, self.arrow, self.doc, self.direct = read, arrow, doc, direct

    def value(self, v: Any) -> Any:
        return self.read(v)

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if arr.type == self.arrow:
            return Checked(arr)
        values = [None if v is None else self.read(v) for v in arr.to_pylist()]
        return Checked(pa.array(values, self.arrow))


def one_element_lists(values: Column) -> pa.Array:
    """Each value as a one-element list (a single-turn prompt's messages, a battle's one answer)."""
    # offsets 0..n made by numpy: pa.array(range(n + 1)) converted a Python int per row
    offsets = pa.array(np.arange(len(values) + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, as_array(values))


def user_messages(texts: Column) -> pa.Array:
    """Each text as a prompt of one user message (MSG_TYPE)."""
    arr = as_array(texts)
    roles = pa.array(["user"] * len(arr), pa.string())
    messages = one_element_lists(pa.StructArray.from_arrays([roles, arr], names=["role", "content"]))
    if arr.null_count:  # a missing text is a missing prompt, not one empty message
        messages = pc.if_else(pc.is_null(arr), pa.scalar(None, MSG_TYPE), messages)
    return messages
