"""Which held-out members a file holds: every string of every record through the gate's one matcher.

    found = members_in_file(store, "mixture.parquet", set_name="judge34")
    found.rows          # records read
    found.hits          # pairstore.holdout.matching.Hit per (member, file row), the strongest kind
    found.strings, found.distinct   # strings read (copies counted) and texts matched

The file is read in Arrow batches (pairstore.holdout.file_texts: every string of every record, the user
turns of its prompt apart). Each record gives the matcher three kinds of candidate row, in the shape
members_in_rows reads (matching.ROW_SCHEMA):

- its prompt: the user turns in order, with the record's task key (an exact match key or task key is a
  `match_key` / `task_key` hit, as in the gate);
- each other string alone, as an answer: a system or assistant turn, a tool call's arguments, an extra
  column, metadata. The matcher finds a member in it whole, as a sentence, embedded or as a near copy;
- each origin id (id columns, an `origin_ids` list, and the origins the store records for a `pair_id`).

Each distinct candidate is matched once: its copies are found by fingerprint (pairstore.holdout.text_set,
bounded: past its size a copy is matched again, never missed). Candidates are matched in chunks of about
MATCH_BYTES; a hit on a candidate is a hit on every record that holds it, and a record's hits keep one
per member, the strongest kind. Memory stays flat in the file's size: a column of one batch, one chunk of
candidates, the links from the chunk's records to it, and the fingerprints.

The matcher reads the members' needles again at each call: with a very large holdout a larger
MATCH_BYTES spends fewer calls.

One thing differs from the gate reading a stored pair: a member split over two strings of a record
(half in the prompt, half in an answer) is not one text here. The strings of a record are read one by
one; the prompt's user turns are read together.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.holdout.file_texts import BATCH_ROWS, RecordTexts, StringGroup, read_file_texts
from pairstore.holdout.matching import HOW_ORDER, ROW_SCHEMA, Hit, members_in_rows
from pairstore.holdout.ngrams import arrow_query
from pairstore.holdout.text_set import DEFAULT_MAX_ENTRIES, TextSet, combined, fingerprints
from pairstore.keys import key_of_text
from pairstore.normalize import TURN_SEP, word_texts
from pairstore.progress import current as current_progress

if TYPE_CHECKING:
    from pairstore.store.store import Store

MATCH_BYTES = 64 << 20  # candidate text per matcher call
MATCH_ROWS = 250_000  # candidates per matcher call
MAX_PENDING = 4_000_000  # (record, candidate) links held before a chunk is matched anyway
# Fingerprint seeds: a prompt, a text and an id of one string are three candidates.
_PROMPT, _TEXT, _ID, _TASK_KEY = 1, 2, 3, 4


@dataclass
class FileMatch:
    path: str
    rows: int = 0
    hits: list[Hit] = field(default_factory=list)
    strings: int = 0  # strings read, copies counted (prompts as one)
    distinct: int = 0  # candidates matched
    text_bytes: int = 0  # UTF-8 bytes of every string read, copies counted
    matched_bytes: int = 0  # UTF-8 bytes of the candidates matched
    calls: int = 0  # matcher calls


@dataclass
class _Batch:
    """A batch's links from records to candidates: per link, the record and the candidate's fingerprint."""

    first_row: int
    pair_id: pa.Array
    rows: list[np.ndarray] = field(default_factory=list)
    lo: list[np.ndarray] = field(default_factory=list)
    hi: list[np.ndarray] = field(default_factory=list)


@dataclass
class _Chunk:
    """Candidates waiting for the matcher."""

    prompts: list[pa.Array] = field(default_factory=list)  # list<large_string> of user turns
    task_keys: list[pa.Array] = field(default_factory=list)
    prompt_fp: list[np.ndarray] = field(default_factory=list)
    texts: list[pa.Array] = field(default_factory=list)
    text_fp: list[np.ndarray] = field(default_factory=list)
    ids: list[pa.Array] = field(default_factory=list)
    id_fp: list[np.ndarray] = field(default_factory=list)
    count: int = 0
    nbytes: int = 0
    links: int = 0
    batches: list[_Batch] = field(default_factory=list)


def _fp_pairs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.stack([lo, hi], axis=1) if len(lo) else np.zeros((0, 2), dtype=np.uint64)


def _nbytes(arr: pa.Array) -> int:
    return int(pc.sum(pc.binary_length(arr)).as_py() or 0) if len(arr) else 0


def _group_fingerprints(groups: list[StringGroup], seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(record, fingerprint halves) of every string of the groups, in order."""
    los, his = [], []
    for g in groups:
        if isinstance(g.texts, str):
            lo, hi = fingerprints(pa.array([g.texts], pa.large_string()), seed)
            los.append(np.full(len(g.rows), lo[0], dtype=np.uint64))
            his.append(np.full(len(g.rows), hi[0], dtype=np.uint64))
        else:
            lo, hi = fingerprints(g.texts, seed)
            los.append(lo)
            his.append(hi)
    if not groups:
        empty = np.zeros(0, dtype=np.uint64)
        return np.zeros(0, np.int64), empty, empty
    return np.concatenate([g.rows for g in groups]), np.concatenate(los), np.concatenate(his)


def _take_strings(groups: list[StringGroup], positions: np.ndarray) -> pa.Array:
    """The strings at `positions` (ascending) of the groups' strings in order."""
    out = []
    start = 0
    for g in groups:
        end = start + len(g.rows)
        lo, hi = np.searchsorted(positions, [start, end])
        if hi > lo:
            mine = positions[lo:hi] - start
            if isinstance(g.texts, str):
                out.append(pa.array([g.texts] * len(mine), pa.large_string()))
            else:
                out.append(g.texts.take(pa.array(mine)).cast(pa.large_string()))
        start = end
    return pa.concat_arrays(out) if out else pa.array([], pa.large_string())


def _prompts(texts: RecordTexts) -> tuple[np.ndarray, pa.ListArray, pa.Array, np.ndarray, np.ndarray]:
    """(records with a prompt candidate, their user turns, task keys, fingerprint halves): a record's
    prompt is its user turns in order with its task key."""
    n = texts.records
    counts = np.bincount(texts.user_row, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    has_key = np.asarray(texts.task_key.is_valid())
    rows = np.flatnonzero((counts > 0) | has_key)
    turns = pa.LargeListArray.from_arrays(pa.array(offsets), texts.user_text)
    lo, hi = fingerprints(texts.user_text, _PROMPT)
    if has_key.any():  # the task key as one more fingerprint at the end of its record's run
        key_lo, key_hi = fingerprints(pc.fill_null(texts.task_key, ""), _TASK_KEY)
        lo = np.insert(lo, offsets[1:][has_key], key_lo[has_key])
        hi = np.insert(hi, offsets[1:][has_key], key_hi[has_key])
        offsets = offsets + np.r_[0, np.cumsum(has_key)]
    plo, phi = combined(offsets, lo, hi)
    return rows, turns, texts.task_key, plo[rows], phi[rows]


class _FileMatcher:
    def __init__(
        self,
        store: Store,
        path: str,
        set_name: str | None,
        fuzzy: bool,
        max_distinct: int,
        match: Callable[[pa.Table], list[Hit]] | None = None,
    ) -> None:
        self.store = store
        self.match = match or (lambda t: members_in_rows(store, t, set_name=set_name, fuzzy=fuzzy).hits)
        self.seen = TextSet(max_distinct)
        self.result = FileMatch(path)
        self.chunk = _Chunk()
        self.hit_of: dict[tuple[int, int], list[tuple[str, str, str, float]]] = {}
        self.best: dict[tuple[str, str, int], Hit] = {}
        self.current: _Batch | None = None  # the batch being read

    # -- one batch ------------------------------------------------------------

    def add(self, texts: RecordTexts) -> None:
        """Read one batch: its candidates not seen before go to the chunk, its links to the batch's."""
        res, chunk = self.result, self.chunk
        res.rows += texts.records
        res.text_bytes += _nbytes(texts.user_text)
        self.current = _Batch(texts.first_row, texts.pair_id)
        rows, turns, task_key, lo, hi = _prompts(texts)
        new = self._new(lo, hi)
        if new.any():
            take = pa.array(rows[new])
            fresh = turns.take(take)
            chunk.prompts.append(fresh)
            chunk.task_keys.append(task_key.take(take))
            chunk.prompt_fp.append(_fp_pairs(lo[new], hi[new]))
            chunk.count += len(fresh)
            chunk.nbytes += _nbytes(pc.list_flatten(fresh))
        self._link(rows, lo, hi)
        res.strings += len(rows)
        self._strings([StringGroup(*self._ids(texts))], _ID)
        for group in texts.others:  # a column at a time: each let go once its strings are taken
            res.text_bytes += group.nbytes
            res.strings += len(group.rows)
            self._strings([group], _TEXT)
        self.current = None

    def _strings(self, groups: list[StringGroup], seed: int) -> None:
        chunk = self.chunk
        rows, lo, hi = _group_fingerprints(groups, seed)
        new = self._new(lo, hi)
        if new.any():
            fresh = _take_strings(groups, np.flatnonzero(new))
            into, fps = (chunk.texts, chunk.text_fp) if seed == _TEXT else (chunk.ids, chunk.id_fp)
            into.append(fresh)
            fps.append(_fp_pairs(lo[new], hi[new]))
            chunk.count += len(fresh)
            chunk.nbytes += _nbytes(fresh)
        self._link(rows, lo, hi)

    def _link(self, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Records rows of the current batch hold the candidates (lo, hi); a full chunk is matched now."""
        chunk = self.chunk
        assert self.current is not None
        if not chunk.batches or chunk.batches[-1] is not self.current:
            chunk.batches.append(self.current)
        self.current.rows.append(rows)
        self.current.lo.append(lo)
        self.current.hi.append(hi)
        chunk.links += len(rows)
        if chunk.count >= MATCH_ROWS or chunk.nbytes >= MATCH_BYTES or chunk.links >= MAX_PENDING:
            self.flush()
            if self.current is not None:  # the rest of the batch links into the next chunk
                self.current = _Batch(self.current.first_row, self.current.pair_id)

    def _new(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Which fingerprints were not seen before (the first of copies inside the batch)."""
        new = self.seen.add_fingerprints(lo, hi)
        if self.seen.full:  # past the set's size: copies inside the batch still once
            new &= TextSet(max(len(lo), 1)).add_fingerprints(lo, hi)
        return new

    def _ids(self, texts: RecordTexts) -> tuple[np.ndarray, pa.Array]:
        """Origin ids and their records, with the origins the store records for the batch's pair ids."""
        rows, ids = texts.id_row, texts.ids
        valid = texts.pair_id.is_valid()
        if pc.any(valid).as_py():
            pair_ids = pc.unique(texts.pair_id.filter(valid)).cast(pa.string())
            with self.store.registered("_fm_pairs", pa.table({"pair_id": pair_ids})):
                origins = arrow_query(
                    self.store.con,
                    "SELECT o.pair_id, o.origin_id FROM pair_origins o SEMI JOIN _fm_pairs USING (pair_id)",
                )
            if origins.num_rows:
                records = pa.table(
                    {
                        "row": pa.array(np.arange(texts.records, dtype=np.int64)),
                        "pair_id": texts.pair_id.cast(pa.string()),
                    }
                )
                joined = records.join(origins, "pair_id", join_type="inner")
                rows = np.concatenate([rows, np.asarray(joined["row"]).astype(np.int64)])
                ids = pa.concat_arrays([ids, joined["origin_id"].combine_chunks().cast(pa.large_string())])
        return rows, ids

    # -- matching a chunk ------------------------------------------------------

    def flush(self) -> None:
        chunk, self.chunk = self.chunk, _Chunk()
        if chunk.count:
            table, fps = _candidate_table(chunk)
            found = self.match(table)
            self.result.calls += 1
            self.result.distinct += table.num_rows
            self.result.matched_bytes += chunk.nbytes
            for h in found:
                key = (int(fps[h.row_index, 0]), int(fps[h.row_index, 1]))
                self.hit_of.setdefault(key, []).append((h.set_name, h.item_id, h.how, h.score))
        if self.hit_of:
            for batch in chunk.batches:
                self._resolve(batch)

    def _resolve(self, batch: _Batch) -> None:
        if not batch.rows:
            return
        hit_lo = np.fromiter((k[0] for k in self.hit_of), dtype=np.uint64, count=len(self.hit_of))
        rows, lo, hi = (np.concatenate(x) for x in (batch.rows, batch.lo, batch.hi))
        pair_ids: list[str | None] | None = None
        for i in np.flatnonzero(np.isin(lo, hit_lo)).tolist():
            found = self.hit_of.get((int(lo[i]), int(hi[i])))
            if not found:
                continue
            if pair_ids is None:
                pair_ids = cast("list[str | None]", batch.pair_id.to_pylist())
            r = int(rows[i])
            for set_name, item_id, how, score in found:
                self._keep(Hit(set_name, item_id, batch.first_row + r, pair_ids[r], how, score))

    def _keep(self, hit: Hit) -> None:
        key = (hit.set_name, hit.item_id, hit.row_index)
        cur = self.best.get(key)
        if cur is None or HOW_ORDER.index(hit.how) < HOW_ORDER.index(cur.how):
            self.best[key] = hit

    def finish(self) -> FileMatch:
        self.flush()
        self.result.hits = sorted(self.best.values(), key=lambda h: (h.row_index, h.set_name, h.item_id))
        return self.result


def _match_keys(turns: pa.ListArray, task_key: pa.Array) -> pa.Array:
    """The match key of the prompts that carry a task key (the gate spares a generated task by both)."""
    out: list[str | None] = [None] * len(turns)
    want = np.flatnonzero(np.asarray(task_key.is_valid()))
    if len(want):
        lists = turns.take(pa.array(want)).to_pylist()
        words = word_texts([t for ts in lists for t in ts])
        at = 0
        for i, ts in zip(want.tolist(), lists):
            out[i] = key_of_text(TURN_SEP.join(words[at : at + len(ts)]))
            at += len(ts)
    return pa.array(out, pa.string())


def _empty_lists(n: int, list_type: pa.ListType) -> pa.ListArray:
    """n empty lists of `list_type`."""
    return pa.ListArray.from_arrays(
        pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], list_type.value_type)
    )


def _candidate_table(chunk: _Chunk) -> tuple[pa.Table, np.ndarray]:
    """The chunk's candidates as matching.ROW_SCHEMA rows, and each row's fingerprint."""
    parts = []
    fps = []
    empty_prompt = pa.array([], ROW_SCHEMA.field("prompt").type)
    no_strings = pa.array([], pa.list_(pa.string()))
    if chunk.prompts:
        turns = pa.concat_arrays(chunk.prompts)
        task_key = pa.concat_arrays(chunk.task_keys).cast(pa.string())
        content = pc.list_flatten(turns).cast(pa.string())
        messages = pa.StructArray.from_arrays(
            [pa.array(np.full(len(content), "user", dtype=object), pa.string()), content], ["role", "content"]
        )
        offsets = np.asarray(turns.offsets).astype(np.int32)
        offsets = offsets - offsets[0]
        n = len(turns)
        parts.append(
            {
                "prompt": pa.ListArray.from_arrays(pa.array(offsets), messages),
                "answers": _empty_lists(n, no_strings.type),
                "origin_ids": _empty_lists(n, no_strings.type),
                "task_key": task_key,
                "match_key": _match_keys(turns, task_key),
            }
        )
        fps += chunk.prompt_fp
    for values, fp, column in (
        (chunk.texts, chunk.text_fp, "answers"),
        (chunk.ids, chunk.id_fp, "origin_ids"),
    ):
        if not values:
            continue
        flat = pa.concat_arrays(values).cast(pa.string())
        n = len(flat)
        single = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), flat)
        parts.append(
            {
                "prompt": _empty_lists(n, empty_prompt.type),
                "answers": single if column == "answers" else _empty_lists(n, no_strings.type),
                "origin_ids": single if column == "origin_ids" else _empty_lists(n, no_strings.type),
                "task_key": pa.nulls(n, pa.string()),
                "match_key": pa.nulls(n, pa.string()),
            }
        )
        fps += fp
    tables = []
    start = 0
    for part in parts:
        n = len(part["prompt"])
        tables.append(
            pa.table(
                {
                    "row_index": pa.array(np.arange(start, start + n, dtype=np.int64)),
                    "pair_id": pa.nulls(n, pa.string()),
                    "origin_ids": part["origin_ids"],
                    "match_key": part["match_key"],
                    "task_key": part["task_key"],
                    "prompt": part["prompt"],
                    "answers": part["answers"],
                },
                schema=ROW_SCHEMA,
            )
        )
        start += n
    return pa.concat_tables(tables), np.concatenate(fps)


def members_in_file(
    store: Store,
    path: str | Path,
    *,
    set_name: str | None = None,
    fuzzy: bool = True,
    batch_rows: int = BATCH_ROWS,
    max_distinct: int = DEFAULT_MAX_ENTRIES,
) -> FileMatch:
    """Which held-out members (every set, or only `set_name`) the file at `path` holds, in which rows."""
    matcher = _FileMatcher(store, str(path), set_name, fuzzy, max_distinct)
    with current_progress().stage(f"read {path}", unit="rows") as stage:
        for texts in read_file_texts(path, batch_rows=batch_rows):
            matcher.add(texts)
            stage.advance(texts.records)
    return matcher.finish()


def candidate_tables(store: Store, path: str | Path, *, batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
    """The candidate tables (matching.ROW_SCHEMA) members_in_file matches for the file, chunk by chunk, not
    matched: what a baseline matches to do the same work (bench/bench_leaks.py)."""
    tables: list[pa.Table] = []

    def keep(table: pa.Table) -> list[Hit]:
        tables.append(table)
        return []

    matcher = _FileMatcher(store, str(path), None, True, DEFAULT_MAX_ENTRIES, match=keep)
    for texts in read_file_texts(path, batch_rows=batch_rows):
        matcher.add(texts)
        yield from tables
        tables.clear()
    matcher.finish()
    yield from tables
