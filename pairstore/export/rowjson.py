"""The canonical row JSON of a whole fetched chunk in one compiled pass (numba): for each row, the bytes
pairstore.export.writer.row_json gives, that is Python's json.dumps of {"chosen", "prompt", "rejected"}
with sorted keys, no spaces and ensure_ascii=False.

    data, offsets = rows_json(prompt, chosen, rejected)     # Arrow arrays of one chunk
    data[offsets[i]:offsets[i + 1]] == row_json(...).encode() for row i

It replaced DuckDB's to_json in the export's fetch, which was the largest single cost of writing a
mixture (to_json is a general serializer: it builds a JSON value tree per row, and writes the \\u00XX
escapes of control characters in upper case, so those rows needed Python anyway). The escapes here are
json's own: `"` and `\\` behind a backslash, \\b \\t \\n \\f \\r, every other byte below 0x20 as \\u00xx
(lower case), every other byte as it is (the text is UTF-8 already; json leaves non-ASCII, DEL and
U+2028 alone when ensure_ascii is off).

A row with a null where the kernel expects text (a null message, role or content; the store's schema
allows none, but `sql --write` can make one) is flagged, and its digest is taken from Python's
row_json instead (the writer does this).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pairstore.compiled import njit
from pairstore.holdout.ngrams import utf8_buffers

_CHOSEN = np.frombuffer(b'{"chosen":', dtype=np.uint8)
_PROMPT = np.frombuffer(b',"prompt":[', dtype=np.uint8)
_CONTENT = np.frombuffer(b'{"content":', dtype=np.uint8)
_ROLE = np.frombuffer(b',"role":', dtype=np.uint8)
_REJECTED = np.frombuffer(b'],"rejected":', dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# the short escapes json writes for these control bytes (0 = written as \u00xx)
_SHORT = np.zeros(32, dtype=np.uint8)
for _byte, _letter in ((8, "b"), (9, "t"), (10, "n"), (12, "f"), (13, "r")):
    _SHORT[_byte] = ord(_letter)


@njit(nogil=True, inline="always")
def _put_bytes(out: np.ndarray, pos: int, word: np.ndarray) -> int:
    for k in range(len(word)):
        out[pos + k] = word[k]
    return pos + len(word)


@njit(nogil=True, inline="always")
def _put_text(out: np.ndarray, pos: int, data: np.ndarray, a: int, b: int) -> int:
    out[pos] = 34
    pos += 1
    for i in range(a, b):
        c = data[i]
        # comparisons on the byte, not a table lookup: a looked-up branch took three times as long
        if c >= 32 and c != 34 and c != 92:
            out[pos] = c
            pos += 1
        elif c == 34 or c == 92:
            out[pos] = 92
            out[pos + 1] = c
            pos += 2
        else:
            out[pos] = 92
            if _SHORT[c]:
                out[pos + 1] = _SHORT[c]
                pos += 2
            else:
                out[pos + 1] = 117  # u
                out[pos + 2] = 48
                out[pos + 3] = 48
                out[pos + 4] = _HEX[c >> 4]
                out[pos + 5] = _HEX[c & 15]
                pos += 6
    out[pos] = 34
    return pos + 1


_FIXED = len(_CHOSEN) + len(_PROMPT) + len(_REJECTED) + 1 + len(_NULL)
_PER_MESSAGE = len(_CONTENT) + len(_ROLE) + 1 + 1  # and the comma before it


@njit(nogil=True, inline="always")
def _row_bound(
    r: int,
    c_off: np.ndarray,
    r_off: np.ndarray,
    r_ok: np.ndarray,
    l_off: np.ndarray,
    ro_off: np.ndarray,
    co_off: np.ndarray,
) -> int:
    # the most bytes row r's JSON can take: every byte escaped as \u00xx
    raw = c_off[r + 1] - c_off[r]
    if r_ok[r]:
        raw += r_off[r + 1] - r_off[r]
    for m in range(l_off[r], l_off[r + 1]):
        raw += co_off[m + 1] - co_off[m] + ro_off[m + 1] - ro_off[m]
    return _FIXED + 6 * raw + 6 * (l_off[r + 1] - l_off[r]) * (2 + _PER_MESSAGE) + 2


@njit(nogil=True)
def _fill_rows(
    c_off: np.ndarray,
    c_data: np.ndarray,
    r_off: np.ndarray,
    r_data: np.ndarray,
    r_ok: np.ndarray,
    l_off: np.ndarray,
    ro_off: np.ndarray,
    ro_data: np.ndarray,
    co_off: np.ndarray,
    co_data: np.ndarray,
    out: np.ndarray,
    offsets: np.ndarray,
    r: int,
) -> int:
    # Writes rows r, r+1, ... into `out` from offsets[r] on, each one's end into offsets; stops before a
    # row that might not fit and returns its index (the caller grows `out`), or the row count when done.
    # One pass: the exact size is known only once written, so the buffer is sized from the raw bytes.
    rows = len(c_off) - 1
    while r < rows:
        pos = offsets[r]
        if pos + _row_bound(r, c_off, r_off, r_ok, l_off, ro_off, co_off) > len(out):
            return r
        pos = _put_bytes(out, pos, _CHOSEN)
        pos = _put_text(out, pos, c_data, c_off[r], c_off[r + 1])
        pos = _put_bytes(out, pos, _PROMPT)
        for m in range(l_off[r], l_off[r + 1]):
            if m > l_off[r]:
                out[pos] = 44  # ,
                pos += 1
            pos = _put_bytes(out, pos, _CONTENT)
            pos = _put_text(out, pos, co_data, co_off[m], co_off[m + 1])
            pos = _put_bytes(out, pos, _ROLE)
            pos = _put_text(out, pos, ro_data, ro_off[m], ro_off[m + 1])
            out[pos] = 125  # }
            pos += 1
        pos = _put_bytes(out, pos, _REJECTED)
        if r_ok[r]:
            pos = _put_text(out, pos, r_data, r_off[r], r_off[r + 1])
        else:
            pos = _put_bytes(out, pos, _NULL)
        out[pos] = 125
        offsets[r + 1] = pos + 1
        r += 1
    return r


def _rows_json(
    c_off: np.ndarray,
    c_data: np.ndarray,
    r_off: np.ndarray,
    r_data: np.ndarray,
    r_ok: np.ndarray,
    l_off: np.ndarray,
    ro_off: np.ndarray,
    ro_data: np.ndarray,
    co_off: np.ndarray,
    co_data: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    rows = len(c_off) - 1
    offsets = np.zeros(rows + 1, dtype=np.int64)
    raw = int(c_off[-1] - c_off[0]) + int(r_off[-1] - r_off[0]) + int(co_off[-1] - co_off[0])
    raw += int(ro_off[-1] - ro_off[0])
    # room for the text, a quarter more for escapes, the keys, and the worst case of one long row
    size = raw + raw // 4 + rows * _FIXED + int(l_off[-1] - l_off[0]) * _PER_MESSAGE + (1 << 16)
    out = np.empty(size, dtype=np.uint8)
    r = 0
    while True:
        r = _fill_rows(
            c_off, c_data, r_off, r_data, r_ok, l_off, ro_off, ro_data, co_off, co_data, out, offsets, r
        )
        if r == rows:
            return out[: offsets[rows]], offsets
        bound = _row_bound(r, c_off, r_off, r_ok, l_off, ro_off, co_off)
        grown = np.empty(max(2 * len(out), int(offsets[r]) + bound), dtype=np.uint8)
        grown[: offsets[r]] = out[: offsets[r]]
        out = grown


def _text_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets, UTF-8 bytes) of a string array (a null row's bytes are never read)."""
    data, offsets = utf8_buffers(arr.cast(pa.large_string()))
    return offsets, data


def rows_json(
    prompt: pa.Array, chosen: pa.Array, rejected: pa.Array | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(JSON bytes, int64 row offsets into them, rows the kernel could not write) for one chunk.

    `prompt`: list<struct<role, content>>; `chosen`, `rejected`: strings (rejected None or null: the JSON
    says null). Each argument is one contiguous Arrow array (combine_chunks). A row flagged in the third
    array (a null in its prompt, or a null chosen) has placeholder bytes: take its JSON from row_json."""
    rows = len(chosen)
    rejected_texts: pa.Array = pa.nulls(rows, pa.string()) if rejected is None else rejected
    if len(prompt) != rows or len(rejected_texts) != rows:
        raise ValueError("rows_json: the columns differ in length")
    # prompt.offsets index the child as stored; flatten() gives its fields from the child's own offset
    # on, with a null message's fields null
    roles, contents = (
        prompt.values.flatten()[prompt.type.value_type.get_field_index(f)] for f in ("role", "content")
    )
    l_off = prompt.offsets.to_numpy().astype(np.int64)
    bad = np.zeros(rows, dtype=np.bool_)
    if prompt.null_count:
        bad |= ~prompt.is_valid().to_numpy(zero_copy_only=False)
    if chosen.null_count:
        bad |= ~chosen.is_valid().to_numpy(zero_copy_only=False)
    if roles.null_count or contents.null_count:
        null_message = ~(
            roles.is_valid().to_numpy(zero_copy_only=False)
            & contents.is_valid().to_numpy(zero_copy_only=False)
        )
        before = np.concatenate([[0], np.cumsum(null_message, dtype=np.int64)])
        bad |= before[l_off[1:]] > before[l_off[:-1]]
    r_ok = (
        rejected_texts.is_valid().to_numpy(zero_copy_only=False)
        if rejected_texts.null_count
        else np.ones(rows, dtype=np.bool_)
    )
    c_off, c_data = _text_buffers(chosen)
    r_off, r_data = _text_buffers(rejected_texts)
    ro_off, ro_data = _text_buffers(roles)
    co_off, co_data = _text_buffers(contents)
    data, offsets = _rows_json(c_off, c_data, r_off, r_data, r_ok, l_off, ro_off, ro_data, co_off, co_data)
    return data, offsets, bad
