"""The keys and hashes of staged rows, a batch at a time: what no SQL function computes.

    prompt_match_keys(table.column("prompt"))     # keys.match_key of each prompt
    record_jsons(table, always=(...), optional=(...))  # json.dumps(row, sort_keys=True, default=str,
                                                   #            ensure_ascii=False) of each row

Each gives, for a whole Arrow column, exactly what the one-value definition in pairstore.keys (or
json.dumps) gives for each value: tests/ingest/test_keyed.py holds them equal on generated rows. They
are faster because the normalization runs once over a batch's texts (normalize.word_texts) and a row's
JSON is one format string filled with each column's pieces, written once per column.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import json
import string
from collections.abc import Callable, Sequence
from functools import lru_cache
from json.encoder import encode_basestring as json_str  # what json.dumps writes for a string
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.keys import key_of_text, keys_of_texts
from pairstore.normalize import TURN_SEP, word_texts

if TYPE_CHECKING:
    from pairstore.ingest.kinds import Column


def _array(col: Column) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def prompt_match_keys(prompts: Column) -> list[str | None]:
    """pairstore.keys.match_key of every prompt (a MSG_TYPE column; None for a null prompt): the user
    turns of the whole batch normalized in one call."""
    prompts = _array(prompts)
    n = len(prompts)
    flat = prompts.flatten()
    user = pc.fill_null(pc.equal(flat.field("role"), "user"), False)
    texts = flat.field("content").filter(user).to_pylist()
    words = word_texts(texts)
    parents = pc.list_parent_indices(prompts).filter(user).to_numpy(zero_copy_only=False)
    counts = np.bincount(parents, minlength=n) if len(parents) else np.zeros(n, dtype=np.int64)
    if prompts.null_count == 0 and bool((counts == 1).all()):  # the common batch: one user turn each
        return [*keys_of_texts(words)]
    keys: list[str | None] = []
    at = 0
    valid = prompts.is_valid().to_pylist()
    for i in range(n):
        c = int(counts[i])
        keys.append(key_of_text(TURN_SEP.join(words[at : at + c])) if valid[i] else None)
        at += c
    return keys


def _pieces(col: Column) -> list[str | None]:
    """The JSON text of every value of a column (None for a null), as json.dumps(..., default=str,
    ensure_ascii=False, sort_keys=True) writes it inside a row. Lists and structs are written from their
    child columns (each child once, as a column), then joined along the offsets: no Python dict per value."""
    arr = _array(col)
    t = arr.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        items = _pieces(arr.flatten())
        lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
        offsets = [0, *np.cumsum(lengths).tolist()]  # each list's values in arr.flatten()
        valid = arr.is_valid().to_pylist()
        return [
            "[" + ", ".join(["null" if p is None else p for p in items[a:b]]) + "]" if ok else None
            for ok, a, b in zip(valid, offsets, offsets[1:])
        ]
    if pa.types.is_struct(t):
        names = sorted(t.field(i).name for i in range(t.num_fields))
        fill = _filler(_object_format([(k, "{}") for k in names]))
        children = [_written(arr.field(k)) for k in names]
        valid = arr.is_valid().to_pylist()
        return (
            [fill(*row) if ok else None for ok, *row in zip(valid, *children)]
            if names
            else ["{}" if ok else None for ok in valid]
        )
    if pa.types.is_null(t):  # a column the reader found no value for
        return [None] * len(arr)
    if pa.types.is_timestamp(t):  # few distinct times, each a costly datetime: each written once
        encoded = arr.dictionary_encode()
        written = [json_str(str(v)) for v in encoded.dictionary.to_pylist()]
        return [None if i is None else written[i] for i in encoded.indices.to_pylist()]
    values = arr.to_pylist()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if not arr.null_count:
            return list(map(json_str, values))
        return [None if v is None else json_str(v) for v in values]
    if pa.types.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in values]
    if pa.types.is_integer(t):
        return (
            list(map(str, values)) if not arr.null_count else [None if v is None else str(v) for v in values]
        )
    if pa.types.is_floating(t):
        return [None if v is None else json.dumps(v) for v in values]
    raise TypeError(f"no JSON writer for a {t} column")


@lru_cache(maxsize=64)
def _filler(fmt: str) -> Callable[..., str]:
    """A function that fills the `{}` fields of `fmt` in order: fmt.format(*pieces), made as a lambda
    around one f-string. str.format parses its format string at every call; a row's JSON format has a
    dozen fields and is filled once per row, and the f-string is about four times faster (dataclasses
    make their methods the same way). The literal text goes in as default values, so nothing of it is
    read as code; only field counts are."""
    literals, text = [], ""
    for literal, field, spec, conversion in string.Formatter().parse(fmt):
        text += literal
        if field is not None:
            if field or spec or conversion:
                raise ValueError(f"only bare {{}} fields are filled: {fmt!r}")
            literals.append(text)
            text = ""
    literals.append(text)
    n = len(literals) - 1
    params = [f"a{i}" for i in range(n)] + [f"_l{i}=_l{i}" for i in range(n + 1)]
    body = "".join(f"{{_l{i}}}{{a{i}}}" for i in range(n)) + f"{{_l{n}}}"
    return eval(f"lambda {', '.join(params)}: f'{body}'", {f"_l{i}": t for i, t in enumerate(literals)})


def _written(col: Column) -> list[str]:
    """_pieces of a column with JSON's null for each null. (Whether there is one is the column's null
    count: `None in pieces` compares every string with None.)"""
    arr = _array(col)
    pieces = _pieces(arr)
    if not arr.null_count:
        return pieces  # type: ignore[return-value]
    return ["null" if p is None else p for p in pieces]


def _object_format(fields: Sequence[tuple[str, str]]) -> str:
    """The format string of a JSON object: each (key, the format string of its value), keys' braces
    doubled."""
    return (
        "{{"
        + ", ".join(json_str(k).replace("{", "{{").replace("}", "}}") + ": " + v for k, v in fields)
        + "}}"
    )


def _template(names: Sequence[str]) -> tuple[str, list[str]]:
    chosen = sorted(names)
    return _object_format([(k, "{}") for k in chosen]), chosen


def _row_format(table: pa.Table, names: Sequence[str]) -> tuple[str, list[list[str]]]:
    """The format string of rows holding the columns `names` (keys sorted) and the pieces that fill it."""
    fields, columns = [], []
    for k in sorted(names):
        inner, more = _parts(table.column(k))
        fields.append((k, inner))
        columns += more
    return _object_format(fields), columns


def _parts(col: Column) -> tuple[str, list[list[str]]]:
    """A format string that writes a value of the column and the columns of pieces that fill it, value by
    value. A struct with no null, or a list with no null holding one value in every row (a battle's
    one-turn prompt, its one answer a side), is written inside the row's own format string: one format
    call per row writes the whole row, no string per inner value."""
    arr = _array(col)
    t = arr.type
    if not arr.null_count and len(arr):
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            if bool((pc.list_value_length(arr).to_numpy(zero_copy_only=False) == 1).all()):
                inner, columns = _parts(arr.flatten())
                return "[" + inner + "]", columns
        elif pa.types.is_struct(t) and t.num_fields:
            children = pa.Table.from_arrays([arr.field(i) for i in range(t.num_fields)], names=t.names)
            return _row_format(children, t.names)
    return "{}", [_written(arr)]


def record_jsons(table: pa.Table, *, always: Sequence[str], optional: Sequence[str] = ()) -> list[str]:
    """The JSON object of each row (keys sorted): the `always` columns whatever their value (null
    included), each `optional` column only where it is not null; json.dumps(row, sort_keys=True,
    default=str, ensure_ascii=False) of the same dict."""
    n = table.num_rows
    given = [name for name in optional if table.column(name).null_count < n]  # given in some row
    if not given:  # the common batch: one format string for every row
        fmt, columns = _row_format(table, always)
        return list(map(_filler(fmt), *columns)) if columns else [fmt.format()] * n
    pieces = {name: _pieces(table.column(name)) for name in (*always, *given)}
    templates: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    out: list[str] = []
    for i in range(n):
        pattern = tuple(name for name in given if pieces[name][i] is not None)
        got = templates.get(pattern)
        if got is None:
            got = templates[pattern] = _template((*always, *pattern))
        fmt, names = got
        out.append(_filler(fmt)(*(pieces[k][i] or "null" for k in names)))
    return out
