"""Every string of every record of a file, read with no pair-file layout in mind: what the leak audit reads.

    for batch in read_file_texts("mixture.parquet"):
        batch.first_row, batch.records        # 0-based file row of its first record, how many records
        batch.user_row, batch.user_text       # the user turns of each record's prompt, in order
        for group in batch.others: ...        # every other string: group.rows, group.texts
        batch.id_row, batch.ids               # its origin ids (id columns, an origin_ids list)
        batch.pair_id, batch.task_key         # per record, null where absent

Files: parquet, Arrow IPC (`.arrow`, `.feather`), JSON lines or one JSON array (`.jsonl`, `.ndjson`,
`.json`), CSV with a header line (every cell a string), the text ones also compressed (`.gz`, `.zst`).
Rows come in Arrow batches: parquet and Arrow as pyarrow reads them (parquet a column at a time), JSON
in blocks of about BLOCK_BYTES parsed by pyarrow.json, the types inferred per block. A block Arrow
cannot type (a field that is a string in one record and an object in another, a key twice in one object)
and a JSON array are read record by record with Python's json, walked the same way (`walk_record`); both
walks give the same strings (tests/holdout/test_file_texts.py, a property).

What is read: every string at any depth, whatever the column is called: every column, struct fields,
list items, map keys and values, binary values (refused unless UTF-8), and the keys of JSON objects (a
key is a string of the record too). A string that is itself JSON (tool-call and function-call
arguments) adds the strings inside it, to JSON_DEPTH encodings deep. Numbers, booleans and times are not
text; the numbers of an id column are ids.

What a user turn is (the matcher's exact key compares them; every string is read either way): the
record's prompt, the first of these present: an Alpaca `instruction` string (the first item of each
`history` pair, the instruction, then `input` and `context`); the first of PROMPT_FIELDS, a string or
the user messages of a message list; the Human turns of an HH-RLHF `chosen` dialogue; the user messages
of the first message list of CONVERSATION_FIELDS. A message is an object with a `role` (or ShareGPT's
`from`); a user message's turn is its `content` (or `value`): a string, a list of strings or the `text`
of content parts. Everything else is another text: system and assistant turns, the turns of other
message lists, tool calls, a `system` or `response` column, metadata.

Errors name the file, the line (JSON) or row (parquet, Arrow) and the field where known (BadInput).
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.parquet as pq

from pairstore.errors import BadInput
from pairstore.heap import return_large_blocks
from pairstore.holdout.record_fields import CONVERSATION_FIELDS, ID_FIELDS, INSTRUCTION_PARTS, PROMPT_FIELDS
from pairstore.lines import line_blocks
from pairstore.prefetch import prefetch

ROLE_KEYS = ("role", "from")
TURN_KEYS = ("content", "value")
USER_ROLES = ("user", "human")
HH_MARK = "\n\nHuman:"
_HH_TURN = re.compile(r"(?:^|\n\n)(Human|Assistant):[ ]?")
JSON_DEPTH = 3  # a JSON string inside a JSON string inside a JSON string
# Text that can be a JSON object or array: "{" then a key or "}", "[" then a value or "]" ("[INST]" is not)
_JSONISH = r'^\s*(?:\{\s*["}]|\[\s*(?:[\[{"\-0-9\]]|true|false|null))'
BATCH_ROWS = 32_768
BLOCK_BYTES = 16 << 20
COMPRESSION = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
KINDS = {
    ".parquet": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".jsonl": "json",
    ".ndjson": "json",
    ".json": "json",
    ".csv": "csv",
}
_SOURCES = tuple(dict.fromkeys((*INSTRUCTION_PARTS, *PROMPT_FIELDS, *CONVERSATION_FIELDS)))
# Columns read before the others: the fields a prompt can be in, the ids and keys of a record.
_EAGER = frozenset((*_SOURCES, "pair_id", "task_key", "origin_ids", *ID_FIELDS))

# Where a string sits relative to the nearest message (an object with a role), per element:
_OUT, _MESSAGE, _TURN, _TURN_ITEM, _PART_TEXT, _OFF = range(6)
_TURN_STATES = (_TURN, _TURN_ITEM, _PART_TEXT)


def _field_state(state: int, name: str) -> int:
    """The state of an object's field `name` in an object at `state`."""
    if state == _OUT:
        return _OUT
    if state == _MESSAGE:
        return _TURN if name in TURN_KEYS else _OFF
    if state == _TURN_ITEM:
        return _PART_TEXT if name == "text" else _OFF
    return _OFF


def _item_state(state: int) -> int:
    """The state of a list item in a list at `state`."""
    return _TURN_ITEM if state == _TURN else _OUT if state == _OUT else _OFF


_FIELD_STATES = {
    name: np.array([_field_state(s, name) for s in range(6)], dtype=np.int8) for name in (*TURN_KEYS, "text")
}
_OTHER_FIELD_STATES = np.array([_field_state(s, "") for s in range(6)], dtype=np.int8)
_ITEM_STATES = np.array([_item_state(s) for s in range(6)], dtype=np.int8)


@dataclass
class StringGroup:
    """Strings of a batch found together: the record of each, and the strings, or one string that each of
    those records holds (an object's key)."""

    rows: np.ndarray  # int64, record within the batch
    texts: pa.Array | str

    def strings(self) -> pa.LargeStringArray:
        """The strings as an array (one per record)."""
        if isinstance(self.texts, str):
            return pa.array([self.texts] * len(self.rows), pa.large_string())
        return self.texts.cast(pa.large_string())

    @property
    def nbytes(self) -> int:
        if isinstance(self.texts, str):
            return len(self.texts.encode("utf-8")) * len(self.rows)
        return _nbytes(self.texts)


@dataclass
class RecordTexts:
    """The strings of a batch of records (see the module docstring). `others` is read once, as it is
    iterated: a parquet column is read when its strings are reached and let go after them, so one column of
    the batch is in memory at a time, not every column."""

    first_row: int
    records: int
    user_row: np.ndarray  # int64, record of each user turn (within the batch), ascending
    user_text: pa.LargeStringArray
    others: Iterator[StringGroup]  # every other string, in groups
    id_row: np.ndarray
    ids: pa.LargeStringArray
    pair_id: pa.LargeStringArray  # one per record
    task_key: pa.LargeStringArray


def other_strings(texts: RecordTexts) -> tuple[np.ndarray, pa.LargeStringArray]:
    """(record, string) of every other string of a batch, read whole (its `others` used up)."""
    groups = list(texts.others)
    if not groups:
        return np.zeros(0, np.int64), _EMPTY
    return np.concatenate([g.rows for g in groups]), pa.concat_arrays([g.strings() for g in groups])


def _nbytes(arr: pa.Array) -> int:
    return int(pc.sum(pc.binary_length(arr)).as_py() or 0) if len(arr) else 0


# -- the leaves of a batch -------------------------------------------------------


@dataclass
class _Group:
    """Strings found together, with what says which are user turns: the top-level field (its code), the
    string is that field's value itself, the first item of a list in a list (Alpaca history), the turn of
    a user message. Each flag is one value for the group or one per string."""

    rows: np.ndarray
    texts: pa.Array | str
    top: int | np.ndarray
    top_string: bool | np.ndarray = False
    pair_first: bool | np.ndarray = False
    user_turn: bool | np.ndarray = False


class _Leaves:
    """The strings of a batch found so far, in groups."""

    def __init__(self) -> None:
        self.groups: list[_Group] = []
        self.top_codes: dict[str, int] = {}
        self._py: list[tuple] = []  # the Python walk: one string at a time

    def code(self, top: str) -> int:
        return self.top_codes.setdefault(top, len(self.top_codes))

    def add(
        self,
        top: str,
        rows: np.ndarray,
        texts: pa.Array | str,
        top_string: bool | np.ndarray = False,
        pair_first: bool | np.ndarray = False,
        user_turn: bool | np.ndarray = False,
    ) -> None:
        if len(rows):
            self.groups.append(
                _Group(
                    np.asarray(rows, dtype=np.int64), texts, self.code(top), top_string, pair_first, user_turn
                )
            )

    def add_one(self, row: int, top: str, text: str, top_string: bool, pair_first: bool, user: bool) -> None:
        self._py.append((row, self.code(top), text, top_string, pair_first, user))

    def finish(self, where: tuple[str, int | None]) -> list[_Group]:
        """Every group found (the Python walk's strings as one more)."""
        if self._py:
            rows, tops, texts, ts, pf, ut = zip(*self._py)
            self._py = []
            self.groups.append(
                _Group(
                    np.array(rows, dtype=np.int64),
                    _strings(list(texts), where),
                    np.array(tops, dtype=np.int32),
                    np.array(ts, dtype=bool),
                    np.array(pf, dtype=bool),
                    np.array(ut, dtype=bool),
                )
            )
        return self.groups


_EMPTY = pa.nulls(0, pa.large_string())  # no pa.array here: its first call imports pandas (0.25 s)


def _strings(texts: list[str], where: tuple[str, int | None]) -> pa.LargeStringArray:
    try:
        return pa.array(texts, pa.large_string())
    except (UnicodeEncodeError, pa.ArrowInvalid):  # a lone surrogate from a JSON escape
        raise BadInput(
            "a lone surrogate escape (not a Unicode character; UTF-8 cannot hold it)",
            path=where[0],
            line=where[1],
        ) from None


def _path_text(path: tuple[str, ...]) -> str:
    return "".join(p if p == "[]" else f".{p}" for p in path).lstrip(".")


def _is_stringlike(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binarylike(t: pa.DataType) -> bool:
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    )


def _is_listlike(t: pa.DataType) -> bool:
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
        or pa.types.is_map(t)
    )


def _positions(parents: np.ndarray) -> np.ndarray:
    """Each item's position in its list, from the (ascending) parent of each item."""
    n = len(parents)
    if not n:
        return np.zeros(0, dtype=np.int64)
    idx = np.arange(n, dtype=np.int64)
    starts = np.where(np.r_[True, parents[1:] != parents[:-1]], idx, 0)
    return idx - np.maximum.accumulate(starts)


class _ArrowWalk:
    """Every string of an Arrow batch, column by column, with numpy arrays of per-element state."""

    def __init__(self, leaves: _Leaves, path: str, first_row: int) -> None:
        self.leaves = leaves
        self.file = path
        self.first_row = first_row

    def column(self, top: str, arr: pa.Array) -> None:
        n = len(arr)
        zeros = np.zeros(n, dtype=np.int8)
        self._walk(top, (), arr, np.arange(n, dtype=np.int64), zeros, zeros.astype(bool), None)

    def _bad(self, path: tuple, message: str, rows: np.ndarray | None = None) -> BadInput:
        row = None if rows is None or not len(rows) else self.first_row + int(rows[0]) + 1
        return BadInput(message, path=self.file, line=row, field=_path_text(path), unit="row")

    def _walk(
        self,
        top: str,
        path: tuple,
        arr: pa.Array,
        rows: np.ndarray,
        state: np.ndarray,
        user: np.ndarray,
        pos: np.ndarray | None,
    ) -> None:
        t = arr.type
        if isinstance(t, pa.ExtensionType):
            arr, t = arr.storage, t.storage_type
        if pa.types.is_dictionary(t):
            arr = arr.dictionary_decode()
            t = arr.type
        if _is_binarylike(t):
            try:
                arr = arr.cast(pa.large_string())
            except pa.ArrowInvalid:
                raise self._bad(path, "bytes that are not UTF-8 text: cannot be read") from None
            t = arr.type
        if _is_stringlike(t):
            valid = np.asarray(arr.is_valid())
            texts = arr.cast(pa.large_string())
            if not valid.all():
                texts = texts.filter(pa.array(valid))
            turn = np.isin(state[valid], _TURN_STATES) & user[valid]
            pair_first = False
            if len(path) == 2 and path == ("[]", "[]") and pos is not None:
                pair_first = pos[valid] == 0
            self.leaves.add(top, rows[valid], texts, not path, pair_first, turn)
        elif _is_listlike(t):
            self._list(top, path, arr, rows, state, user)
        elif pa.types.is_struct(t):
            self._struct(top, path, arr, rows, state, user)
        elif pa.types.is_union(t):
            raise self._bad(path, "a union column cannot be read: store it as one type per column")

    def _list(
        self, top: str, path: tuple, arr: pa.Array, rows: np.ndarray, state: np.ndarray, user: np.ndarray
    ) -> None:
        t = arr.type
        if pa.types.is_map(t):
            entry = pa.struct([pa.field("key", t.key_type, nullable=False), pa.field("value", t.item_type)])
            arr = arr.cast(pa.list_(entry))
        elif pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
            arr = arr.cast(pa.large_list(t.value_type))
        values = pc.list_flatten(arr)
        if len(values):
            parents = np.asarray(pc.list_parent_indices(arr)).astype(np.int64)
            self._walk_items(top, path, values, rows, parents, state, user, pa.types.is_map(t))

    def _walk_items(
        self,
        top: str,
        path: tuple,
        values: pa.Array,
        rows: np.ndarray,
        parents: np.ndarray,
        state: np.ndarray,
        user: np.ndarray,
        map_entries: bool,
    ) -> None:
        rows, state, user = rows[parents], _ITEM_STATES[state[parents]], user[parents]
        if map_entries:  # key and value of each entry, both read; the entry struct's names are not the file's
            key, value = values.flatten()
            self._walk(top, (*path, "[]"), key, rows, state, user, None)
            self._walk(top, (*path, "[]"), value, rows, state, user, None)
            return
        self._walk(top, (*path, "[]"), values, rows, state, user, _positions(parents))

    def _struct(
        self, top: str, path: tuple, arr: pa.Array, rows: np.ndarray, state: np.ndarray, user: np.ndarray
    ) -> None:
        t = arr.type
        names = [t.field(i).name for i in range(t.num_fields)]
        children = arr.flatten()  # the struct's nulls merged into each field
        role = None
        for key in ROLE_KEYS:
            if key in names and _is_stringlike(t.field(names.index(key)).type):
                child = children[names.index(key)]
                role = child if role is None else pc.coalesce(role, child)
        if role is not None:
            has = np.asarray(role.is_valid())
            if has.any():
                lowered = pc.utf8_lower(pc.utf8_trim_whitespace(role.cast(pa.large_string())))
                is_user = np.asarray(pc.fill_null(pc.is_in(lowered, pa.array(USER_ROLES)), False))
                state = np.where(has, np.int8(_MESSAGE), state)
                user = np.where(has, is_user, user)
        for name, child in zip(names, children):
            valid = np.asarray(child.is_valid())
            if valid.any():  # the key itself is a string of the record
                self.leaves.add(top, rows[valid] if not valid.all() else rows, name)
            child_state = _FIELD_STATES.get(name, _OTHER_FIELD_STATES)[state]
            self._walk(top, (*path, name), child, rows, child_state, user, None)


def walk_record(leaves: _Leaves, row: int, rec: dict | Pairs) -> None:
    """Every string of one record from Python's json (a dict, or a list of (key, value) pairs where a key
    is given twice), as _ArrowWalk reads the same record from Arrow."""
    for key, value in _items(rec):
        if value is None:
            continue
        leaves.add_one(row, key, key, False, False, False)
        _walk_value(leaves, row, key, (), value, _OUT, False, -1)


class Pairs(list):
    """A JSON object whose keys repeat: its (key, value) pairs in order, every value read."""


def _pairs_hook(pairs: list) -> dict | Pairs:
    d = dict(pairs)
    return d if len(d) == len(pairs) else Pairs(pairs)


def _items(obj: dict | Pairs) -> list:
    return list(obj) if isinstance(obj, Pairs) else list(obj.items())


def _is_object(v: object) -> bool:
    return isinstance(v, dict | Pairs)


def _walk_value(
    leaves: _Leaves, row: int, top: str, path: tuple, v: object, state: int, user: bool, pos: int
) -> None:
    if isinstance(v, str):
        leaves.add_one(
            row,
            top,
            v,
            not path,
            path == ("[]", "[]") and pos == 0,
            user and state in _TURN_STATES,
        )
    elif isinstance(v, list) and not isinstance(v, Pairs):
        item = _item_state(state)
        for i, x in enumerate(v):
            if x is not None:
                _walk_value(leaves, row, top, (*path, "[]"), x, item, user, i)
    elif isinstance(v, dict | Pairs):
        items = _items(v)
        role = next(
            (x for key in ROLE_KEYS for k, x in items if k == key and isinstance(x, str)),
            None,
        )
        if role is not None:
            state, user = _MESSAGE, role.strip().lower() in USER_ROLES
        for k, x in items:
            if x is None:
                continue
            leaves.add_one(row, top, k, False, False, False)
            _walk_value(leaves, row, top, (*path, k), x, _field_state(state, k), user, -1)


# -- which strings are the prompt's user turns ---------------------------------------------------


class _Columns:
    """The top-level columns of a batch of records, each read when first asked for and kept only while
    needed (`drop`)."""

    def __init__(self, names: list[str], num_rows: int, read: Callable[[str], pa.Array]) -> None:
        self.names = names
        self.num_rows = num_rows
        self._read = read
        self._kept: dict[str, pa.Array] = {}

    @classmethod
    def of_batch(cls, batch: pa.RecordBatch) -> _Columns:
        return cls(batch.schema.names, batch.num_rows, batch.column)

    def column(self, name: str) -> pa.Array:
        if name not in self._kept:
            self._kept[name] = self._read(name)
        return self._kept[name]

    def drop(self, name: str) -> None:
        self._kept.pop(name, None)


@dataclass
class _Presence:
    """Per record and top-level field: present (not null), a string, a list."""

    present: dict[str, np.ndarray]
    string: dict[str, np.ndarray]
    listed: dict[str, np.ndarray]
    hh: np.ndarray  # records whose prompt is the HH-RLHF dialogue in `chosen`


def _arrow_presence(batch: _Columns) -> _Presence:
    n = batch.num_rows
    present, string, listed = {}, {}, {}
    no = np.zeros(n, dtype=bool)
    for name in _SOURCES:
        if name in batch.names:
            col = batch.column(name)
            valid = np.asarray(col.is_valid())
            t = col.type
            present[name] = valid
            string[name] = valid if _is_stringlike(t) else no
            listed[name] = valid if _is_listlike(t) else no
    hh = no
    if "chosen" in string and string["chosen"].any():
        found = pc.match_substring(batch.column("chosen").cast(pa.large_string()), HH_MARK)
        hh = string["chosen"] & np.asarray(pc.fill_null(found, False))
    return _Presence(present, string, listed, hh)


def _python_presence(records: list) -> _Presence:
    n = len(records)
    present = {k: np.zeros(n, dtype=bool) for k in _SOURCES}
    string = {k: np.zeros(n, dtype=bool) for k in _SOURCES}
    listed = {k: np.zeros(n, dtype=bool) for k in _SOURCES}
    hh = np.zeros(n, dtype=bool)
    for i, rec in enumerate(records):
        for k, v in _items(rec):
            if k in present and v is not None and not present[k][i]:
                present[k][i] = True
                string[k][i] = isinstance(v, str)
                listed[k][i] = isinstance(v, list) and not isinstance(v, Pairs)
                if k == "chosen" and isinstance(v, str) and HH_MARK in v:
                    hh[i] = True
    return _Presence(present, string, listed, hh)


def _hh_user_turns(text: str) -> list[str]:
    """The Human turns of an HH-RLHF dialogue string ("\n\nHuman: ...\n\nAssistant: ...")."""
    parts = _HH_TURN.split(text)
    if len(parts) < 3 or parts[0].strip():
        return []
    return [c.strip() for r, c in zip(parts[1::2], parts[2::2]) if r == "Human"]


@dataclass
class _Prompt:
    """Per record: the code of the top-level field its prompt is in (-1: none there), whether it is an
    Alpaca prompt, whether it is the HH-RLHF dialogue in `chosen`."""

    source: np.ndarray
    alpaca: np.ndarray
    hh: np.ndarray


def _prompt_of(presence: _Presence, n: int, codes: dict[str, int]) -> _Prompt:
    source = np.full(n, -1, dtype=np.int64)
    alpaca = presence.string.get("instruction", np.zeros(n, dtype=bool)).copy()
    free = ~alpaca
    for name in PROMPT_FIELDS:
        if name in presence.present:
            take = free & presence.present[name]
            source[take] = codes.get(name, -2)
            free &= ~take
    hh = free & presence.hh
    free &= ~hh
    for name in CONVERSATION_FIELDS:
        if name in presence.listed:
            take = free & presence.listed[name]
            source[take] = codes.get(name, -2)
            free &= ~take
    return _Prompt(source, alpaca, hh)


def _user_mask(prompt: _Prompt, codes: dict[str, int], g: _Group) -> tuple[np.ndarray, np.ndarray]:
    """(which strings of the group are user turns of their record's prompt, the rank of each in it)."""
    n = len(g.rows)
    mask = (prompt.source[g.rows] == g.top) & (np.asarray(g.top_string) | np.asarray(g.user_turn))
    mask = np.broadcast_to(mask, n).copy()
    rank = np.zeros(n, dtype=np.int8)
    if prompt.alpaca.any():
        in_alpaca = prompt.alpaca[g.rows]
        for r, name in enumerate(INSTRUCTION_PARTS):
            if name in codes:
                mine = in_alpaca & (np.asarray(g.top) == codes[name])
                mine &= np.asarray(g.pair_first if name == "history" else g.top_string)
                mask |= mine
                rank[mine] = r
    return mask, rank


# -- reading files -----------------------------------------------------------------


def file_kind(path: str | Path) -> tuple[str, str | None]:
    """(parquet | arrow | json | csv, compression or None) from the file's name; BadInput for anything
    else."""
    p = Path(str(path).lower())
    compression = COMPRESSION.get(p.suffix)
    if compression is not None:
        p = p.with_suffix("")
    kind = KINDS.get(p.suffix)
    if kind is None or (compression is not None and kind not in ("json", "csv")):
        raise BadInput(
            "unknown file type (expected .parquet, .arrow, .feather, .jsonl, .ndjson, .json or .csv; the "
            "text ones may be compressed: .gz, .zst)",
            path=str(path),
        )
    return kind, compression


def read_file_texts(path: str | Path, *, batch_rows: int = BATCH_ROWS) -> Iterator[RecordTexts]:
    """Every string of every record of the file at `path`, in batches (see the module docstring)."""
    path = Path(path)
    if not path.exists():
        raise BadInput("no such file", path=str(path))
    if path.is_dir():
        raise BadInput("a folder, not a file", path=str(path))
    kind, compression = file_kind(path)
    if path.stat().st_size == 0:
        raise BadInput("empty file", path=str(path))
    return_large_blocks()  # a batch's buffers freed go back to the system, not to a heap kept whole
    row = 0
    source: Iterator[_Columns | _PythonRecords]
    if kind == "json":
        source = _json_batches(path, compression, batch_rows)
    elif kind == "csv":
        source = _csv_batches(path, compression, batch_rows)
    else:
        source = _arrow_batches(path, kind, batch_rows)
    for item in source:
        texts = _batch_texts(item, str(path), row)
        row += texts.records
        yield texts
    if row == 0:
        raise BadInput("no records", path=str(path))


def _arrow_batches(path: Path, kind: str, batch_rows: int) -> Iterator[_Columns]:
    what = "parquet" if kind == "parquet" else "Arrow"
    try:
        if kind == "parquet":
            yield from _parquet_batches(path, pq.ParquetFile(path), batch_rows)
            return
        source = pa.memory_map(str(path))
        try:
            reader = pa.ipc.open_stream(source)
            batches = iter(reader)
        except pa.ArrowInvalid:
            ipc = pa.ipc.open_file(source)
            batches = (ipc.get_batch(i) for i in range(ipc.num_record_batches))
    except BadInput:
        raise
    except Exception as e:  # pyarrow raises several types for a broken file
        raise BadInput(f"not a readable {what} file ({str(e).splitlines()[0]})", path=str(path)) from None
    row = 0
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as e:  # a damaged page: OSError, ArrowInvalid, ...
            raise _damaged(path, row, e) from None
        for start in range(0, batch.num_rows, batch_rows):
            part = batch.slice(start, batch_rows)
            row += part.num_rows
            yield _Columns.of_batch(part)


def _csv_batches(path: Path, compression: str | None, batch_rows: int) -> Iterator[_Columns]:
    """A CSV file with a header line, every cell read as a string (a cell is text, whatever it looks like)."""
    import pyarrow.csv as pacsv

    def open_csv(types: dict | None = None) -> pacsv.CSVStreamingReader:
        stream = pa.input_stream(str(path), compression=compression)
        return pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES),
            convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False),
        )

    row = 0
    try:
        names = open_csv().schema.names
        reader = open_csv({name: pa.string() for name in names})
        for batch in reader:
            for start in range(0, batch.num_rows, batch_rows):
                part = batch.slice(start, batch_rows)
                row += part.num_rows
                yield _Columns.of_batch(part)
    except (pa.ArrowInvalid, OSError) as e:  # a ragged line, bytes that are not UTF-8, a broken stream
        raise BadInput(
            f"cannot read as CSV after row {row} ({(str(e).splitlines() or [type(e).__name__])[0]})",
            path=str(path),
        ) from None


def _damaged(path: Path, row: int, e: Exception) -> BadInput:
    return BadInput(
        f"damaged data after row {row} ({(str(e).splitlines() or [type(e).__name__])[0]})", path=str(path)
    )


def column_order(names: list[str]) -> list[str]:
    """The order a batch's columns are read in: the fields a prompt can be in and the id fields first (the
    user turns and the ids depend on them), then the others as the file has them."""
    return [n for n in names if n in _EAGER] + [n for n in names if n not in _EAGER]


def _parquet_batches(path: Path, pf: pq.ParquetFile, batch_rows: int) -> Iterator[_Columns]:
    """Consecutive row groups of at least batch_rows rows (or one larger group) at a time, each column read
    when asked for: parquet decodes a nested column a row group at a time, so reading a column at a time
    holds one column of the batch in memory instead of all of them. A thread decodes the next column
    (column_order, batch after batch) while this one's strings are read."""
    names = pf.schema_arrow.names
    meta = pf.metadata
    batches: list[tuple[list[int], int, int]] = []  # (row groups, first row, rows)
    groups: list[int] = []
    rows = first = 0
    for g in range(meta.num_row_groups):
        groups.append(g)
        rows += meta.row_group(g).num_rows
        if rows >= batch_rows or g == meta.num_row_groups - 1:
            if rows:
                batches.append((groups, first, rows))
            first += rows
            groups, rows = [], 0
    plan = column_order(names)

    def read(groups: list[int], first: int, name: str, source: pq.ParquetFile = pf) -> pa.Array:
        try:
            col = source.read_row_groups(groups, columns=[name], use_threads=False).column(0)
        except Exception as e:  # a damaged page: OSError, ArrowInvalid, ...
            raise _damaged(path, first, e) from None
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()

    def columns() -> Iterator[tuple[int, str, pa.Array]]:
        for b, (groups, first, _) in enumerate(batches):
            for name in plan:
                yield b, name, read(groups, first, name)

    ahead = prefetch(columns(), depth=1, name="pairstore-read-columns")
    try:
        for b, (groups, first, rows) in enumerate(batches):

            def read_next(name: str, b: int = b, groups: list[int] = groups, first: int = first) -> pa.Array:
                for got_b, got_name, arr in ahead:  # columns a reader skipped are passed over
                    if (got_b, got_name) == (b, name):
                        return arr
                    if got_b > b:
                        break
                # asked out of order: read here, through a file object of its own (the thread reads on)
                return read(groups, first, name, pq.ParquetFile(path))

            yield _Columns(names, rows, read_next)
    finally:
        ahead.close()


@dataclass
class _PythonRecords:
    """Records Python's json read, with the line (or array position) of each."""

    records: list
    lines: list[int]
    unit: str = "line"


def _json_batches(path: Path, compression: str | None, batch_rows: int) -> Iterator:
    stream = pa.input_stream(str(path), compression=compression)
    try:
        head = stream.read(BLOCK_BYTES)
        start = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
        if start.lstrip()[:1] == b"[":
            yield from _json_array(path, start, stream, batch_rows)
            return
        yield from _json_lines(path, start, stream, batch_rows)
    except OSError as e:  # a broken gzip or zstd stream
        raise BadInput(f"cannot decompress ({str(e).splitlines()[0]})", path=str(path)) from None
    finally:
        stream.close()


def _json_lines(path: Path, head: bytes, stream: pa.NativeFile, batch_rows: int) -> Iterator:
    line = 1  # the line the next block starts on
    for block in line_blocks(stream, BLOCK_BYTES, head):
        if block.strip():
            yield from _json_block(path, block, line, batch_rows)
        line += block.count(b"\n")


def _json_block(path: Path, block: bytes, line: int, batch_rows: int) -> Iterator:
    try:
        block.decode("utf-8")
        table = pajson.read_json(pa.BufferReader(block))
    except (UnicodeDecodeError, pa.ArrowInvalid):
        # Arrow could not read it as one table: record by record, with the line of any mistake
        yield from _json_block_records(path, block, line, batch_rows)
        return
    for batch in table.to_batches(max_chunksize=batch_rows):
        yield _Columns.of_batch(batch)


def _loads(text: str, path: Path, line: int, unit: str = "line") -> dict | Pairs:
    try:
        rec = json.loads(text, object_pairs_hook=_pairs_hook)
    except json.JSONDecodeError as e:
        raise BadInput(
            f"invalid JSON: {e.msg} at column {e.colno}", path=str(path), line=line, unit=unit
        ) from None
    except RecursionError:
        raise BadInput("JSON nested too deep", path=str(path), line=line, unit=unit) from None
    if not _is_object(rec):
        raise BadInput(
            f"expected a JSON object, got {type(rec).__name__}", path=str(path), line=line, unit=unit
        )
    return rec


def _json_block_records(path: Path, block: bytes, line: int, batch_rows: int) -> Iterator[_PythonRecords]:
    records: list = []
    lines: list[int] = []
    for k, raw in enumerate(block.split(b"\n")):
        try:
            text = raw.decode("utf-8-sig" if line + k == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise BadInput(
                f"bytes that are not UTF-8 at byte {e.start} of the line", path=str(path), line=line + k
            ) from None
        if not text.strip():
            continue
        records.append(_loads(text, path, line + k))
        lines.append(line + k)
        if len(records) == batch_rows:
            yield _PythonRecords(records, lines)
            records, lines = [], []
    if records:
        yield _PythonRecords(records, lines)


def _json_array(path: Path, head: bytes, stream: pa.NativeFile, batch_rows: int) -> Iterator[_PythonRecords]:
    """The records of a file holding one JSON array, read element by element (the file never whole)."""
    decoder = json.JSONDecoder(object_pairs_hook=_pairs_hook)
    pending = bytearray(head)
    text = ""
    pos = 0
    index = 0
    started = False
    eof = False
    records: list = []
    lines: list[int] = []

    def fill() -> bool:
        nonlocal text, pos, pending, eof
        more = stream.read(BLOCK_BYTES)
        if not more:
            eof = True
        pending += more
        # decode what is complete; a character cut at the block's end waits for the next block
        try:
            chunk = pending.decode("utf-8")
            pending = bytearray()
        except UnicodeDecodeError as e:
            if e.start < len(pending) - 3 or eof:
                raise BadInput(
                    "bytes that are not UTF-8", path=str(path), line=index + 1, unit="record"
                ) from None
            chunk = pending[: e.start].decode("utf-8")
            pending = pending[e.start :]
        text = text[pos:] + chunk
        pos = 0
        return bool(more)

    fill()
    while True:
        while pos < len(text) and (text[pos].isspace() or (started and text[pos] == ",")):
            pos += 1
        if pos >= len(text):
            if eof or not fill():
                if not eof:
                    continue
                raise BadInput("the JSON array is not closed (truncated file?)", path=str(path))
            continue
        if not started:
            started = True
            pos += 1  # the "["
            continue
        if text[pos] == "]":
            break
        try:
            rec, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            if not eof and fill():
                continue
            hint = " (truncated file?)" if not text[e.pos :].strip() else ""
            raise BadInput(
                f"invalid JSON: {e.msg}{hint}", path=str(path), line=index + 1, unit="record"
            ) from None
        if end == len(text) and not eof and fill():
            continue  # a number cut at the block's end: read it whole
        if not _is_object(rec):
            raise BadInput(
                f"expected a JSON object, got {type(rec).__name__}",
                path=str(path),
                line=index + 1,
                unit="record",
            )
        index += 1
        records.append(rec)
        lines.append(index)
        pos = end
        if len(records) == batch_rows:
            yield _PythonRecords(records, lines, "record")
            records, lines = [], []
    if records:
        yield _PythonRecords(records, lines, "record")


# -- a batch's strings --------------------------------------------------------------


def _batch_texts(item: _Columns | _PythonRecords, path: str, first_row: int) -> RecordTexts:
    where = (path, None)
    if isinstance(item, _PythonRecords):
        return _python_texts(item, where, first_row)
    cols = item
    n = cols.num_rows
    leaves = _Leaves()
    walk = _ArrowWalk(leaves, path, first_row)
    # The fields a prompt can be in are read first (which strings are user turns depends on them all), and
    # the ids; every other column is read when `others` reaches it.
    order = column_order(cols.names)
    sources = [name for name in order if name in _SOURCES]
    for name in order:
        if name in _EAGER:
            col = cols.column(name)
            if name in _SOURCES:
                _walk_column(leaves, walk, name, col)
    presence = _arrow_presence(cols)
    pair_id = _arrow_top_strings(cols, "pair_id")
    task_key = _arrow_top_strings(cols, "task_key")
    id_row, ids = _arrow_ids(cols)
    hh_texts = None
    if presence.hh.any():
        chosen = cols.column("chosen").cast(pa.large_string())
        hh_rows = np.flatnonzero(presence.hh)
        hh_texts = dict(zip(hh_rows.tolist(), chosen.take(pa.array(hh_rows)).to_pylist()))
    for name in sources:
        cols.drop(name)
    user_row, user_text, others = _split_user_turns(leaves, presence, n, hh_texts, where)

    def rest() -> Iterator[StringGroup]:
        for g in others:
            yield from _with_json_inside(g, where)
        yield from _json_inside_of(user_row, user_text, where)
        for name in order:
            if name in sources:
                continue
            column = _Leaves()
            _walk_column(column, _ArrowWalk(column, path, first_row), name, cols.column(name))
            cols.drop(name)
            for found in column.finish(where):
                yield from _with_json_inside(StringGroup(found.rows, found.texts), where)

    return RecordTexts(first_row, n, user_row, user_text, rest(), id_row, ids, pair_id, task_key)


def _walk_column(leaves: _Leaves, walk: _ArrowWalk, name: str, col: pa.Array) -> None:
    valid = np.asarray(col.is_valid())
    if valid.any():  # the column's name is a string of each record that holds it
        leaves.add(name, np.flatnonzero(valid), name)
    walk.column(name, col)


def _python_texts(item: _PythonRecords, where: tuple[str, int | None], first_row: int) -> RecordTexts:
    leaves = _Leaves()
    for i, rec in enumerate(item.records):
        walk_record(leaves, i, rec)
    presence = _python_presence(item.records)
    hh_texts = {
        int(r): next((v for k, v in _items(item.records[r]) if k == "chosen" and isinstance(v, str)), "")
        for r in np.flatnonzero(presence.hh)
    }
    n = len(item.records)
    user_row, user_text, others = _split_user_turns(leaves, presence, n, hh_texts, where)
    groups = [x for g in others for x in _with_json_inside(g, where)]
    groups += list(_json_inside_of(user_row, user_text, where))
    id_row, ids = _python_ids(item.records)
    return RecordTexts(
        first_row,
        n,
        user_row,
        user_text,
        iter(groups),
        id_row,
        ids,
        _python_top_strings(item.records, "pair_id"),
        _python_top_strings(item.records, "task_key"),
    )


def _split_user_turns(
    leaves: _Leaves,
    presence: _Presence,
    n: int,
    hh_texts: dict[int, str] | None,
    where: tuple[str, int | None],
) -> tuple[np.ndarray, pa.LargeStringArray, list[StringGroup]]:
    """(record of each user turn, the turns in order, every other string found so far)."""
    groups = leaves.finish(where)
    prompt = _prompt_of(presence, n, leaves.top_codes)
    user_parts: list[tuple[np.ndarray, pa.Array, np.ndarray]] = []
    others: list[StringGroup] = []
    for g in groups:
        if isinstance(g.texts, str):  # an object key: never a turn
            others.append(StringGroup(g.rows, g.texts))
            continue
        mask, rank = _user_mask(prompt, leaves.top_codes, g)
        if not mask.any():
            others.append(StringGroup(g.rows, g.texts))
            continue
        keep = pa.array(mask)
        user_parts.append((g.rows[mask], g.texts.filter(keep), rank[mask]))
        if not mask.all():
            others.append(StringGroup(g.rows[~mask], g.texts.filter(pc.invert(keep))))
    user_row, user_text = _user_turns(user_parts)
    if prompt.hh.any() and hh_texts:
        extra_rows, extra = [], []
        for r in np.flatnonzero(prompt.hh).tolist():
            turns = _hh_user_turns(hh_texts.get(r) or "")
            extra_rows += [r] * len(turns)
            extra += turns
        if extra:
            user_row = np.concatenate([user_row, np.array(extra_rows, dtype=np.int64)])
            user_text = pa.concat_arrays([user_text, pa.array(extra, pa.large_string())])
            order = np.argsort(user_row, kind="stable")
            user_row, user_text = user_row[order], user_text.take(pa.array(order))
    return user_row, user_text, others


def _with_json_inside(g: StringGroup, where: tuple[str, int | None]) -> Iterator[StringGroup]:
    yield g
    inner = _json_inside([(g.rows, g.texts)], where)
    if inner is not None:
        yield inner


def _json_inside_of(
    rows: np.ndarray, texts: pa.Array, where: tuple[str, int | None]
) -> Iterator[StringGroup]:
    inner = _json_inside([(rows, texts)], where)
    if inner is not None:
        yield inner


def _user_turns(
    parts: list[tuple[np.ndarray, pa.Array, np.ndarray]],
) -> tuple[np.ndarray, pa.LargeStringArray]:
    """The user turns record by record, each record's in its prompt's order (a stable sort keeps list
    order)."""
    if not parts:
        return np.zeros(0, np.int64), _EMPTY
    rows = np.concatenate([p[0] for p in parts])
    texts = pa.concat_arrays([p[1].cast(pa.large_string()) for p in parts])
    rank = np.concatenate([p[2] for p in parts])
    order = np.lexsort((rank, rows))
    if (order == np.arange(len(order))).all():
        return rows, texts
    return rows[order], texts.take(pa.array(order))


def _json_inside(
    parts: list[tuple[np.ndarray, pa.Array | str]], where: tuple[str, int | None]
) -> StringGroup | None:
    """The strings inside strings that are JSON themselves (tool-call arguments), to JSON_DEPTH deep."""
    found_rows: list[np.ndarray] = []
    found: list[pa.Array] = []
    for _ in range(JSON_DEPTH):
        leaves = _Leaves()
        for rows, texts in parts:
            if isinstance(texts, str) or not len(texts):
                continue  # an object key (a JSON string key is never walked again)
            maybe = np.flatnonzero(np.asarray(pc.fill_null(pc.match_substring_regex(texts, _JSONISH), False)))
            for r, text in zip(rows[maybe].tolist(), texts.take(pa.array(maybe)).to_pylist()):
                try:
                    value = json.loads(text, object_pairs_hook=_pairs_hook)
                except (json.JSONDecodeError, RecursionError):
                    continue
                if isinstance(value, str):
                    leaves.add_one(r, "", value, False, False, False)
                else:
                    _walk_value(leaves, r, "", (), value, _OUT, False, -1)
        groups = leaves.finish(where)
        if not groups:
            break
        parts = [(g.rows, g.texts) for g in groups]
        found_rows += [g.rows for g in groups]
        found += [
            g.texts if not isinstance(g.texts, str) else pa.array([g.texts] * len(g.rows)) for g in groups
        ]
    if not found:
        return None
    return StringGroup(
        np.concatenate(found_rows), pa.concat_arrays([f.cast(pa.large_string()) for f in found])
    )


def _arrow_top_strings(batch: _Columns, name: str) -> pa.LargeStringArray:
    if name in batch.names and _is_stringlike(batch.column(name).type):
        col = batch.column(name).cast(pa.large_string())
        return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.large_string()), col)
    return pa.nulls(batch.num_rows, pa.large_string())


def _python_top_strings(records: list, name: str) -> pa.LargeStringArray:
    vals = []
    for rec in records:
        v = next((x for k, x in _items(rec) if k == name), None)
        vals.append(v if isinstance(v, str) and v else None)
    return pa.array(vals, pa.large_string())


def _id_value(v: object) -> str | None:
    if isinstance(v, bool) or v is None or v == "":
        return None
    if isinstance(v, str | int):
        return str(v)
    return None


def _arrow_ids(batch: _Columns) -> tuple[np.ndarray, pa.LargeStringArray]:
    rows: list[np.ndarray] = []
    ids: list[pa.Array] = []
    for name in ID_FIELDS:
        if name not in batch.names:
            continue
        col = batch.column(name)
        if _is_stringlike(col.type) or pa.types.is_integer(col.type):
            text = col.cast(pa.large_string())
            valid = np.asarray(pc.fill_null(pc.greater(pc.binary_length(text), 0), False))
            rows.append(np.flatnonzero(valid))
            ids.append(text.filter(pa.array(valid)))
    if "origin_ids" in batch.names and pa.types.is_list(batch.column("origin_ids").type):
        col = batch.column("origin_ids")
        values = pc.list_flatten(col)
        if _is_stringlike(values.type) or pa.types.is_integer(values.type):
            parents = np.asarray(pc.list_parent_indices(col)).astype(np.int64)
            text = values.cast(pa.large_string())
            valid = np.asarray(pc.fill_null(pc.greater(pc.binary_length(text), 0), False))
            rows.append(parents[valid])
            ids.append(text.filter(pa.array(valid)))
    if not rows:
        return np.zeros(0, np.int64), _EMPTY
    return np.concatenate(rows), pa.concat_arrays(ids)


def _python_ids(records: list) -> tuple[np.ndarray, pa.LargeStringArray]:
    rows: list[int] = []
    ids: list[str] = []
    for i, rec in enumerate(records):
        items = _items(rec)
        for name in ID_FIELDS:
            for k, v in items:
                if k == name and _id_value(v) is not None:
                    rows.append(i)
                    ids.append(str(_id_value(v)))
                    break
        for k, v in items:
            if k == "origin_ids" and isinstance(v, list) and not isinstance(v, Pairs):
                for x in v:
                    if _id_value(x) is not None:
                        rows.append(i)
                        ids.append(str(_id_value(x)))
                break
    return np.array(rows, dtype=np.int64), pa.array(ids, pa.large_string())
