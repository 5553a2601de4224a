"""Writing a planned mixture (pairstore.export.plan.MixturePlan) to parquet: fixed order, fixed
writer options, a content hash.

    rows, content_hash, by_source_family, sha256 = write_mixture_file(store, tmp, mix, "dpo", system_prompt)

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
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from pairstore.errors import PairstoreError
from pairstore.keys import content_hash_rows, xxh128
from pairstore.prefetch import prefetch

if TYPE_CHECKING:
    from pairstore.export.plan import MixturePlan
    from pairstore.store.store import Store

ROW_GROUP_ROWS = 32_768
# Rows (pairs x copies) fetched per query: bounds memory whatever the size of the store.
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


def rows_content_hash(digests) -> str:
    """The content hash of ordered rows: keys.content_hash_rows over the rows' digests."""
    return content_hash_rows([d] for d in digests)


def _digests_of(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    """xxh3-128 of each row's bytes data[offsets[i]:offsets[i + 1]]."""
    view = memoryview(data.data)
    digest = xxhash.xxh3_128_hexdigest
    bounds = offsets.tolist()
    return [digest(view[a:b]) for a, b in zip(bounds, bounds[1:])]


def _chunk_digests(tbl: pa.Table, kind: str) -> list[str]:
    """The row digest (row_digest) of each row of a fetched chunk, in its order: the canonical JSON is
    written by pairstore.export.rowjson in one compiled pass; a row it flags (a null inside the prompt)
    gets its JSON from row_json."""
    from pairstore.export.rowjson import rows_json  # numba: loaded only by an export that writes

    rejected = tbl.column("rejected").combine_chunks() if kind == "dpo" else None
    data, offsets, flagged = rows_json(
        tbl.column("_prompt").combine_chunks(), tbl.column("chosen").combine_chunks(), rejected
    )
    digests = _digests_of(data, offsets)
    if flagged.any():
        sub = tbl.filter(pa.array(flagged)).select(["_prompt", "chosen", "rejected"]).to_pylist()
        for i, r in zip(np.flatnonzero(flagged), sub):
            digests[i] = row_digest(r["_prompt"], r["chosen"], r["rejected"] if kind == "dpo" else None)
    return digests


def _in_plan_order(tbl: pa.Table, prows: np.ndarray) -> pa.Table:
    """The fetched chunk in the order of its plan entries `prows` (ascending rowids)."""
    got = tbl.column("prow").to_numpy()
    if np.array_equal(got, prows):  # DuckDB's scan usually keeps rowid order: then nothing is moved
        return tbl
    order = np.argsort(got, kind="stable")
    if not np.array_equal(got[order], prows):
        raise PairstoreError(
            f"export: rows {int(prows[0])}..{int(prows[-1])} of the store changed while exporting"
        )
    return tbl.take(pa.array(order))


class _HashedFile:
    """A binary file that keeps the SHA-256 of every byte written to it (the parquet writer only appends),
    so the file's hash needs no second read."""

    def __init__(self, path: Path):
        self.file = open(path, "wb")  # noqa: SIM115 - closed by close(), after the parquet writer's last write
        self.sha256 = hashlib.sha256()
        self.position = 0

    def write(self, data) -> int:
        self.sha256.update(data)
        self.position += len(data)
        return self.file.write(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        self.file.flush()

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.file.close()


def _parquet_writer(sink, schema: pa.Schema) -> pq.ParquetWriter:
    return pq.ParquetWriter(
        sink,
        schema,
        compression=COMPRESSION,
        compression_level=COMPRESSION_LEVEL,
        use_dictionary=[c for c in _DICT_COLUMNS if c.split(".")[0] in schema.names],
        write_statistics=True,
        version="2.6",
        data_page_version="1.0",
        write_page_index=False,
    )


def _row_groups(tables: Iterable[pa.Table]) -> Iterator[pa.Table]:
    """The rows of `tables` cut into row groups of exactly ROW_GROUP_ROWS rows (the last one shorter), each
    one contiguous chunk: page boundaries then depend on the data only, not on how DuckDB's threads
    happened to chunk the fetched rows."""
    pending: list[pa.Table] = []
    pending_rows = 0
    for table in tables:
        pending.append(table)
        pending_rows += table.num_rows
        while pending_rows >= ROW_GROUP_ROWS:
            whole = pa.concat_tables(pending)
            yield whole.slice(0, ROW_GROUP_ROWS).combine_chunks()
            rest = whole.slice(ROW_GROUP_ROWS)
            pending, pending_rows = ([rest] if rest.num_rows else []), rest.num_rows
    if pending_rows:
        yield pa.concat_tables(pending).combine_chunks()


def _chunks(
    store: Store, mixture: MixturePlan, kind: str, block: int
) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """(first prow, last prow, prows, copies) of one block's pieces of about FETCH_ROWS output rows
    (pairs x copies), prows ascending."""
    arr = store.con.execute(
        f"SELECT prow, copies FROM {mixture.table} WHERE kind = ? AND block = ? ORDER BY prow", [kind, block]
    ).fetchnumpy()
    prow = np.asarray(arr["prow"], dtype=np.int64)
    copies = np.asarray(arr["copies"], dtype=np.int64)
    ends = np.cumsum(copies)
    out, start, base = [], 0, 0
    while start < len(prow):
        stop = int(np.searchsorted(ends, base + FETCH_ROWS, side="left"))
        stop = min(max(stop, start), len(prow) - 1)
        out.append((int(prow[start]), int(prow[stop]), prow[start : stop + 1], copies[start : stop + 1]))
        base = int(ends[stop])
        start = stop + 1
    return out


def _as_messages(texts: pa.Array, role: str) -> pa.ListArray:
    """[{'role': role, 'content': text}] for each text, built on the Arrow buffers (no copy of the text)."""
    n = len(texts)
    msgs = pa.StructArray.from_arrays([pa.repeat(role, n).cast(pa.string()), texts], fields=list(_MSG))
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), msgs)


def _file_rows(
    tbl: pa.Table, digests: list[str], copies: np.ndarray, kind: str, schema: pa.Schema, answer_col: str
) -> tuple[pa.Table, bytes, Counter]:
    """One fetched chunk, in plan order with its row digests, as (its rows of the file, copies adjacent;
    the lines content_hash_rows hashes for them; rows by (source, family)). `copies` are the chunk's
    plan entries' copies."""
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
    columns = {
        "prompt": tbl.column("_prompt"),
        answer_col: _as_messages(tbl.column("chosen").combine_chunks(), "assistant"),
    }
    if kind == "dpo":
        columns["rejected"] = _as_messages(tbl.column("rejected").combine_chunks(), "assistant")
    tbl = pa.table(
        {
            **columns,
            "pair_id": tbl.column("pair_id"),
            "source": tbl.column("source"),
            "family": tbl.column("family"),
        }
    )
    if (copies != 1).any():
        # copies adjacent: the compressor sees a repeat, not new data, so upsampling is nearly free
        tbl = tbl.take(pa.array(np.repeat(np.arange(tbl.num_rows), copies)))
    return tbl.cast(schema), hash_lines, counts


def write_mixture_file(
    store: Store, path: Path, mixture: MixturePlan, kind: str, system_prompt: str | None
) -> tuple[int, str, Counter, str]:
    """Stream the `kind` (dpo or sft) rows of the planned mixture into parquet at `path`.

    Returns (rows, content hash, rows by (source, family), SHA-256 of the file's bytes).

    Each distinct pair's row JSON is made once (pairstore.export.rowjson: the bytes of row_json), digested,
    and the digest repeated for its copies.
    """
    con = store.con
    schema = DPO_SCHEMA if kind == "dpo" else SFT_SCHEMA
    answer_col = "chosen" if kind == "dpo" else "completion"
    # the stored prompt already is STRUCT(role, content)[]; a recipe system prompt replaces the pair's own
    prompt_sql = (
        "p.prompt"
        if system_prompt is None
        else "list_concat([{'role': 'system', 'content': $sys}], "
        "list_filter(p.prompt, lambda m: m.role <> 'system'))"
    )
    # A plain scan of a rowid range with a semi-join: no ORDER BY (a sort would hold every text of the
    # chunk in DuckDB's memory) and no nested columns built in SQL; the rows are put in order and the
    # message lists built on the Arrow side.
    sql = f"""
        SELECT p.rowid AS prow, {prompt_sql} AS _prompt, p.chosen, p.rejected, p.pair_id, p.source, p.family
        FROM pairs p
        WHERE p.rowid BETWEEN $lo AND $hi
          AND p.rowid IN (SELECT prow FROM {mixture.table} WHERE kind = $kind AND block = $block \
AND prow BETWEEN $lo AND $hi)"""
    jobs = [
        (block, *piece)
        for block in range(len(mixture.blocks))
        for piece in _chunks(store, mixture, kind, block)
    ]

    def fetch():
        # Runs in the producing thread below: only it touches the connection while the writer encodes.
        for block, lo, hi, prows, copies in jobs:
            params = {"kind": kind, "block": block, "lo": lo, "hi": hi}
            if system_prompt is not None:
                params["sys"] = system_prompt
            tbl = _in_plan_order(con.sql(sql, params=params).to_arrow_table(), prows)
            yield tbl, _chunk_digests(tbl, kind), copies

    h = hashlib.sha256()
    counts: Counter = Counter()

    def file_rows():
        for tbl, digests, copies in fetch():
            out, hash_lines, piece_counts = _file_rows(tbl, digests, copies, kind, schema, answer_col)
            h.update(hash_lines)
            counts.update(piece_counts)
            yield out

    rows = 0
    sink = _HashedFile(path)
    try:
        writer = _parquet_writer(sink, schema)
    except BaseException:
        sink.close()
        raise
    # Everything but the parquet encoding runs in one thread ahead of it (fetch, digests, file rows, row
    # groups cut), so the writer, the longest stage, is never kept waiting on Python. One row group
    # ahead, no more: each one held is about 50 MB at the benchmark's size.
    groups = prefetch(_row_groups(file_rows()), depth=1, name="pairstore-export-rows")
    try:
        for group in groups:
            writer.write_table(group, row_group_size=ROW_GROUP_ROWS)
            rows += group.num_rows
    finally:
        groups.close()  # stops and joins the producing thread before anything else uses the connection
        try:
            writer.close()
        finally:
            sink.close()
    return rows, h.hexdigest(), counts, sink.sha256.hexdigest()
