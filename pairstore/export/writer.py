"""Writing a planned mixture (pairstore.export.plan.MixturePlan) to parquet: fixed order, fixed
writer options, a content hash.

    rows, content_hash, by_source_family, sha256 = write_mixture_file(store, tmp, mix, "dpo", system_prompt)
    needed = estimated_bytes(store.con, mix.table)   # for the free-space check, measured on a sample

Rows go out in a fixed order (the trainer shuffles): blocks in recipe order; in a block, pairs in the
store's order (pairs.rowid), copies of a pair adjacent (they compress to almost nothing). The writer
options are fixed (zstd, row groups of ROW_GROUP_ROWS rows, one contiguous chunk per row group, no
timestamps), so the same store and recipe give byte-identical files. DPO rows are TRL's conversational
preference format (prompt, chosen, rejected as message lists); NLL-only rows go to a second file in
TRL's prompt-completion format.

The content hash is keys.content_hash_rows over the rows' digests in file order, a row's digest being
the xxh3-128 of its canonical JSON {"chosen": text, "prompt": messages, "rejected": text or null}
(row_json). It does not depend on the parquet writer or the column layout, so a file made elsewhere
with the same rows hashes the same (pairstore.export.attach.content_hash_of_file).

Each distinct pair is fetched from DuckDB once (a rowid range at a time, put in plan order), its row
JSON written and digested once, and its copies made only when a row group is cut. pyarrow encodes the
row groups; the file's SHA-256 is read back from the page cache once it is closed. DuckDB's own COPY
was measured as the writer and is no cheaper here: a join's rows come in plan order only through an
ORDER BY, whose sort of every text costs more than this fetch (bench/results/export.md).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from pairstore.errors import PairstoreError
from pairstore.keys import content_hash_rows, sha256_file, xxh128
from pairstore.prefetch import prefetch

if TYPE_CHECKING:
    from pairstore.export.plan import MixturePlan
    from pairstore.store.store import Store

ROW_GROUP_ROWS = 32_768
# Distinct pairs fetched per query: bounds memory whatever the size of the store (their copies are
# made a row group at a time).
FETCH_ROWS = 16_384
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 1

_MSG = pa.struct([("role", pa.string()), ("content", pa.string())])
DPO_SCHEMA = pa.schema(
    [
        ("prompt", pa.list_(_MSG)),
        ("chosen", pa.list_(_MSG)),
        ("rejected", pa.list_(_MSG)),
        ("pair_id", pa.string()),
        ("source", pa.string()),
        ("family", pa.string()),
    ]
)
SFT_SCHEMA = pa.schema(
    [
        ("prompt", pa.list_(_MSG)),
        ("completion", pa.list_(_MSG)),
        ("pair_id", pa.string()),
        ("source", pa.string()),
        ("family", pa.string()),
    ]
)
# Writer-dependent but fixed: these decide the bytes of the file.
_DICT_COLUMNS = [
    "source",
    "family",
    "prompt.list.element.role",
    "chosen.list.element.role",
    "rejected.list.element.role",
    "completion.list.element.role",
]


def row_json(prompt: list[dict], chosen: str, rejected: str | None) -> str:
    """The canonical JSON of one mixture row (what its digest is taken of)."""
    return json.dumps(
        {
            "prompt": [{"role": m["role"], "content": m["content"]} for m in prompt],
            "chosen": chosen,
            "rejected": rejected,
        },
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )


def row_digest(prompt: list[dict], chosen: str, rejected: str | None) -> str:
    """xxh3-128 of the row's canonical JSON."""
    return xxh128(row_json(prompt, chosen, rejected))


def rows_content_hash(digests: Iterable[str]) -> str:
    """The content hash of ordered rows: keys.content_hash_rows over the rows' digests."""
    return content_hash_rows([d] for d in digests)


def _digests_of(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    """xxh3-128 of each row's bytes data[offsets[i]:offsets[i + 1]]."""
    view = memoryview(data.data)
    digest = xxhash.xxh3_128_hexdigest
    bounds = offsets.tolist()
    return [digest(view[a:b]) for a, b in zip(bounds, bounds[1:])]


def _chunk_digests(tbl: pa.Table, kind: str) -> list[str]:
    """The row digest (row_digest) of each row of a fetched chunk (one contiguous chunk per column), in
    its order: the canonical JSON is written by pairstore.export.rowjson in one compiled pass; a row it
    flags (a null inside the prompt) gets its JSON from row_json."""
    from pairstore.export.rowjson import rows_json  # numba: loaded only by an export that writes

    rejected = _column(tbl, "rejected") if kind == "dpo" else None
    data, offsets, flagged = rows_json(_column(tbl, "_prompt"), _column(tbl, "chosen"), rejected)
    digests = _digests_of(data, offsets)
    if flagged.any():
        sub = tbl.filter(pa.array(flagged)).select(["_prompt", "chosen", "rejected"]).to_pylist()
        for i, r in zip(np.flatnonzero(flagged), sub):
            digests[i] = row_digest(r["_prompt"], r["chosen"], r["rejected"] if kind == "dpo" else None)
    return digests


def _column(tbl: pa.Table, name: str) -> pa.Array:
    """The one chunk of a column of a combined table (combine_chunks leaves one per column)."""
    col = tbl.column(name)
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _in_plan_order(tbl: pa.Table, prows: np.ndarray) -> pa.Table:
    """The fetched chunk in the order of its plan entries `prows` (ascending rowids), one contiguous chunk
    per column."""
    got = tbl.column("prow").to_numpy()
    if np.array_equal(got, prows):  # DuckDB's scan usually keeps rowid order: then nothing is moved
        return tbl.combine_chunks()
    order = np.argsort(got, kind="stable")
    if not np.array_equal(got[order], prows):
        raise PairstoreError(
            f"export: rows {int(prows[0])}..{int(prows[-1])} of the store changed while exporting"
        )
    return tbl.take(pa.array(order)).combine_chunks()


def _parquet_writer(sink: Path | pa.NativeFile, schema: pa.Schema) -> pq.ParquetWriter:
    return pq.ParquetWriter(
        str(sink) if isinstance(sink, Path) else sink,
        schema,
        compression=COMPRESSION,
        compression_level=COMPRESSION_LEVEL,
        # pyarrow takes a bool or a list of columns; unannotated, pyright reads bool from its default
        use_dictionary=[c for c in _DICT_COLUMNS if c.split(".")[0] in schema.names],  # pyright: ignore[reportArgumentType]
        write_statistics=True,
        version="2.6",
        data_page_version="1.0",
        write_page_index=False,
    )


class _Piece:
    """A fetched chunk's rows of the file (each distinct pair once, one contiguous chunk per column) and
    how many copies of each the file holds: the copies are made only when a row group is cut."""

    def __init__(self, rows: pa.Table, copies: np.ndarray) -> None:
        self.rows = rows
        self.copies = copies
        self.ends = np.cumsum(copies)  # file rows of the piece up to and including each pair

    @property
    def file_rows(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    def span(self, start: int, stop: int) -> tuple[int, int, np.ndarray | None]:
        """File rows start..stop-1 of the piece as (first pair, last pair, the index of each row into
        rows[first:last + 1], or None when no pair among them has copies)."""
        first = int(np.searchsorted(self.ends, start, side="right"))
        last = int(np.searchsorted(self.ends, stop - 1, side="right"))
        copies = self.copies[first : last + 1]
        if (copies == 1).all():
            return first, last, None
        index = np.repeat(np.arange(last - first + 1), copies)
        skip = start - (int(self.ends[first - 1]) if first else 0)
        return first, last, index[skip : skip + stop - start]


def _row_groups(pieces: Iterable[_Piece]) -> Iterator[pa.Table]:
    """The file rows of `pieces`, copies adjacent, cut into row groups of exactly ROW_GROUP_ROWS rows (the
    last one shorter), each one contiguous chunk: page boundaries then depend on the data only, not on
    how the rows were fetched."""
    pending: list[tuple[_Piece, int]] = []  # (piece, its first file row not yet written)
    pending_rows = 0

    def cut(rows: int) -> pa.Table:
        # The group's distinct pairs are gathered first (slices, no copy) and its rows made from them in
        # one step: one copy of the texts, where taking each piece's copies and then joining the parts
        # into one chunk copied every row twice.
        nonlocal pending_rows
        sources: list[pa.Table] = []
        indexes: list[np.ndarray] = []
        copied = False
        base = 0  # distinct pairs gathered so far
        need = rows
        while need:
            piece, start = pending[0]
            stop = min(piece.file_rows, start + need)
            first, last, index = piece.span(start, stop)
            sources.append(piece.rows.slice(first, last - first + 1))
            copied |= index is not None
            indexes.append(base + (np.arange(last - first + 1) if index is None else index))
            base += last - first + 1
            need -= stop - start
            if stop == piece.file_rows:
                pending.pop(0)
            else:
                pending[0] = (piece, stop)
        pending_rows -= rows
        source = sources[0] if len(sources) == 1 else pa.concat_tables(sources)
        if not copied:
            return source.combine_chunks()  # one slice: nothing copied; several: one copy
        if len(sources) > 1:
            source = source.combine_chunks()  # the distinct pairs only: a fraction of the rows
        return source.take(pa.array(np.concatenate(indexes))).combine_chunks()

    for piece in pieces:
        if not piece.file_rows:
            continue
        pending.append((piece, 0))
        pending_rows += piece.file_rows
        while pending_rows >= ROW_GROUP_ROWS:
            yield cut(ROW_GROUP_ROWS)
    if pending_rows:
        yield cut(pending_rows)


def _entries(
    con: duckdb.DuckDBPyConnection, plan_table: str, kind: str, block: int
) -> tuple[np.ndarray, np.ndarray]:
    """(prows ascending, copies) of one block's plan entries of `kind`."""
    arr = con.execute(
        f"SELECT prow, copies FROM {plan_table} WHERE kind = ? AND block = ? ORDER BY prow", [kind, block]
    ).fetchnumpy()
    return np.asarray(arr["prow"], dtype=np.int64), np.asarray(arr["copies"], dtype=np.int64)


def _pieces(prow: np.ndarray, copies: np.ndarray, size: int) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """(first prow, last prow, prows, copies) of consecutive runs of at most `size` plan entries."""
    return [
        (int(prow[s]), int(prow[min(s + size, len(prow)) - 1]), prow[s : s + size], copies[s : s + size])
        for s in range(0, len(prow), size)
    ]


def _fetch_sql(plan_table: str, system_prompt: str | None) -> str:
    """The query of one piece's rows ($kind, $block, $lo, $hi; $sys when there is a system prompt).

    A plain scan of a rowid range with a semi-join: no ORDER BY (a sort would hold every text of the
    piece in DuckDB's memory) and no nested columns built in SQL; the rows are put in order and the
    message lists built on the Arrow side."""
    # the stored prompt already is STRUCT(role, content)[]; a recipe system prompt replaces the pair's own
    prompt_sql = (
        "p.prompt"
        if system_prompt is None
        else "list_concat([{'role': 'system', 'content': $sys}], "
        "list_filter(p.prompt, lambda m: m.role <> 'system'))"
    )
    return f"""
        SELECT p.rowid AS prow, {prompt_sql} AS _prompt, p.chosen, p.rejected, p.pair_id, p.source, p.family
        FROM pairs p
        WHERE p.rowid BETWEEN $lo AND $hi
          AND p.rowid IN (SELECT prow FROM {plan_table} WHERE kind = $kind AND block = $block \
AND prow BETWEEN $lo AND $hi)"""


def _fetch(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    kind: str,
    block: int,
    piece: tuple[int, int, np.ndarray, np.ndarray],
    system_prompt: str | None,
) -> pa.Table:
    """One piece's rows in plan order, one contiguous chunk per column."""
    lo, hi, prows, _ = piece
    params: dict[str, object] = {"kind": kind, "block": block, "lo": lo, "hi": hi}
    if system_prompt is not None:
        params["sys"] = system_prompt
    return _in_plan_order(con.sql(sql, params=params).to_arrow_table(), prows)


def _as_messages(texts: pa.Array, role: str) -> pa.ListArray:
    """[{'role': role, 'content': text}] for each text, built on the Arrow buffers (no copy of the text)."""
    n = len(texts)
    msgs = pa.StructArray.from_arrays([pa.repeat(role, n).cast(pa.string()), texts], fields=list(_MSG))
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), msgs)


def _file_rows(tbl: pa.Table, kind: str) -> pa.Table:
    """A fetched piece's rows in the file's columns (each distinct pair once)."""
    columns = {
        "prompt": _column(tbl, "_prompt"),
        ("chosen" if kind == "dpo" else "completion"): _as_messages(_column(tbl, "chosen"), "assistant"),
    }
    if kind == "dpo":
        columns["rejected"] = _as_messages(_column(tbl, "rejected"), "assistant")
    return pa.table(
        {
            **columns,
            "pair_id": _column(tbl, "pair_id"),
            "source": _column(tbl, "source"),
            "family": _column(tbl, "family"),
        }
    ).cast(DPO_SCHEMA if kind == "dpo" else SFT_SCHEMA)


def _file_piece(
    tbl: pa.Table, digests: list[str], copies: np.ndarray, kind: str
) -> tuple[_Piece, bytes, Counter]:
    """One fetched piece, in plan order with its row digests, as (its rows of the file, each pair once with
    its copies; the lines content_hash_rows hashes for them; rows by (source, family)). `copies` are the
    piece's plan entries' copies."""
    # the bytes content_hash_rows([d] for d in digests) hashes: a one-string JSON list per line
    hash_lines = "".join(f'["{d}"]\n' * c for d, c in zip(digests, copies.tolist())).encode()
    grouped = (
        pa.table({"source": tbl.column("source"), "family": tbl.column("family"), "copies": pa.array(copies)})
        .group_by(["source", "family"])
        .aggregate([("copies", "sum")])
    )
    counts: Counter = Counter()
    for s, f, n in zip(*(grouped.column(c).to_pylist() for c in ("source", "family", "copies_sum"))):
        counts[(s, f)] += n
    return _Piece(_file_rows(tbl, kind), copies), hash_lines, counts


def write_mixture_file(
    store: Store, path: Path, mixture: MixturePlan, kind: str, system_prompt: str | None
) -> tuple[int, str, Counter, str]:
    """Stream the `kind` (dpo or sft) rows of the planned mixture into parquet at `path`.

    Returns (rows, content hash, rows by (source, family), SHA-256 of the file's bytes).

    Each distinct pair is fetched once, its row JSON made once (pairstore.export.rowjson: the bytes of
    row_json) and digested, the digest repeated for its copies; the copies themselves are made when a
    row group is cut.
    """
    con = store.con
    schema = DPO_SCHEMA if kind == "dpo" else SFT_SCHEMA
    sql = _fetch_sql(mixture.table, system_prompt)
    jobs = [
        (block, piece)
        for block in range(len(mixture.blocks))
        for piece in _pieces(*_entries(con, mixture.table, kind, block), FETCH_ROWS)
    ]
    h = hashlib.sha256()
    counts: Counter = Counter()

    def pieces() -> Iterator[_Piece]:
        # Runs in the producing thread below: only it touches the connection while the writer encodes.
        for block, piece in jobs:
            tbl = _fetch(con, sql, kind, block, piece, system_prompt)
            file_piece, hash_lines, piece_counts = _file_piece(tbl, _chunk_digests(tbl, kind), piece[3], kind)
            h.update(hash_lines)
            counts.update(piece_counts)
            yield file_piece

    rows = 0
    writer = _parquet_writer(path, schema)
    # Everything but the parquet encoding runs in one thread ahead of it (fetch, digests, file rows, row
    # groups cut), so the writer, the longest stage, is never kept waiting on Python. One row group
    # ahead, no more: each one held is about 50 MB at the benchmark's size.
    groups = prefetch(_row_groups(pieces()), depth=1, name="pairstore-export-rows")
    try:
        for group in groups:
            writer.write_table(group, row_group_size=ROW_GROUP_ROWS)
            rows += group.num_rows
    finally:
        groups.close()  # stops and joins the producing thread before anything else uses the connection
        writer.close()
    # The file is read back once for its SHA-256 (from the page cache, in C): hashing inside the
    # writer's Python write calls cost more than this read.
    return rows, h.hexdigest(), counts, sha256_file(path)


# The free-space estimate writes SAMPLE_RUNS runs of SAMPLE_RUN consecutive plan entries of each kind,
# spread evenly over the plan, with the writer's own encoder and settings.
SAMPLE_RUNS = 16
SAMPLE_RUN = 128
# Beside the files: the evidence, the footers.
ESTIMATE_MARGIN_BYTES = 1 << 20


def estimated_bytes(con: duckdb.DuckDBPyConnection, plan_table: str, system_prompt: str | None = None) -> int:
    """The bytes the planned mixture's files will take, measured on a sample: runs of consecutive plan
    entries (as the file holds them, copies adjacent) written with the writer's encoder and settings,
    scaled by the number of entries. What the free-space check asks for: near the file's size (the
    sample's rows compress about as the file's do), not an upper bound of its raw text."""
    total = ESTIMATE_MARGIN_BYTES
    for kind in ("dpo", "sft"):
        # the kind's plan entries in file order: (block, its prows, its copies) per block
        entries = [
            (block, *_entries(con, plan_table, kind, block)) for block in _blocks(con, plan_table, kind)
        ]
        ends = np.cumsum([len(prow) for _, prow, _ in entries])
        n = int(ends[-1]) if len(ends) else 0
        if not n:
            continue
        sql = _fetch_sql(plan_table, system_prompt)
        sampled_entries = sampled_bytes = 0
        for start in sorted(set(np.linspace(0, n - 1, SAMPLE_RUNS).astype(np.int64).tolist())):
            i = int(np.searchsorted(ends, start, side="right"))  # the block the run starts in; it ends there
            block, prow, copies = entries[i]
            first = start - (int(ends[i - 1]) if i else 0)
            piece = _pieces(prow[first : first + SAMPLE_RUN], copies[first : first + SAMPLE_RUN], SAMPLE_RUN)[
                0
            ]
            rows = _file_rows(_fetch(con, sql, kind, block, piece, system_prompt), kind)
            sampled_bytes += _encoded_bytes(_Piece(rows, piece[3]), kind)
            sampled_entries += len(piece[2])
        total += sampled_bytes * n // sampled_entries
    return total


def _blocks(con: duckdb.DuckDBPyConnection, plan_table: str, kind: str) -> list[int]:
    return [
        b
        for (b,) in con.execute(
            f"SELECT DISTINCT block FROM {plan_table} WHERE kind = ? ORDER BY 1", [kind]
        ).fetchall()
    ]


def _encoded_bytes(piece: _Piece, kind: str) -> int:
    """The bytes `piece`'s rows (copies adjacent) take in a parquet file of the writer's settings: its row
    groups, without the footer every file has once."""
    sink = pa.BufferOutputStream()
    writer = _parquet_writer(sink, DPO_SCHEMA if kind == "dpo" else SFT_SCHEMA)
    for group in _row_groups([piece]):
        writer.write_table(group, row_group_size=ROW_GROUP_ROWS)
    written = sink.tell()
    writer.close()
    return written
