"""Ingest of pair files into `pairs` (written by pairstore.tables.pairs, which also holds what every
producer of pairs shares: `PairsResult` and `write_pairs` past the holdout).

    pairstore ingest pairs past_round.parquet --source attached

The file is read by pairstore.ingest.pair_files (every pair shape, read whole or refused) into checked
Arrow batches; each batch's pairs and origins are built as columns (the pair ids and match keys a batch
at a time, pairstore.ingest.keyed) and inserted as it is read (add_pair_tables), all in one transaction
with DuckDB's memory bounded: memory does not grow with the file.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import re
from json.encoder import encode_basestring as json_str  # what json.dumps writes for a string
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.ingest.base import IngestResult, records_in
from pairstore.ingest.batches import Batch
from pairstore.ingest.keyed import prompt_match_keys
from pairstore.ingest.kinds import PY_WHITESPACE, Column, blank
from pairstore.ingest.pair_files import pair_batches
from pairstore.ingest.pair_rows import ID_FIELDS
from pairstore.keys import nfc_many, sha256_file, xxh128
from pairstore.progress import Progress, as_progress
from pairstore.store.store import Store, bounded_memory
from pairstore.tables.ingests import log_ingest
from pairstore.tables.pairs import ORIGIN_TABLE_SCHEMA, PAIR_TABLE_SCHEMA, add_pair_tables

if TYPE_CHECKING:
    from pairstore.files import StrPath


def _user_text(prompts: Column) -> pa.Array:
    """Per prompt (a MSG_TYPE column): whether a user message holds text other than whitespace."""
    arr = prompts.combine_chunks() if isinstance(prompts, pa.ChunkedArray) else prompts
    flat = arr.flatten()
    text = pc.and_(
        pc.fill_null(pc.equal(flat.field("role"), "user"), False),
        pc.invert(blank(flat.field("content"))),
    )
    rows = pc.list_parent_indices(arr).filter(text).to_numpy(zero_copy_only=False)
    has = np.zeros(len(arr), dtype=bool)
    has[rows] = True
    return pa.array(has)


def refuse_unusable(batch: Batch) -> None:
    """A user's pair file is refused, not thinned: an empty side, identical sides or a prompt without user
    text names its line and field (miners drop such pairs by reason instead). The rules run over whole
    columns; the first row any breaks is named with the first rule it breaks."""
    t = batch.table
    chosen, rejected = t.column("chosen"), t.column("rejected")
    empty_chosen, empty_rejected = blank(chosen), blank(rejected)
    same = pc.fill_null(
        pc.equal(
            pc.utf8_trim(chosen, characters=PY_WHITESPACE), pc.utf8_trim(rejected, characters=PY_WHITESPACE)
        ),
        False,
    )
    no_user_text = pc.invert(_user_text(t.column("prompt")))
    bad = pc.or_(pc.or_(empty_chosen, empty_rejected), pc.or_(same, no_user_text))
    if not pc.any(bad).as_py():
        return
    i = pc.index(bad, True).as_py()
    if empty_chosen[i].as_py():
        raise batch.error(i, "empty or whitespace-only answer", "chosen")
    if empty_rejected[i].as_py():
        raise batch.error(i, "empty or whitespace-only answer", "rejected")
    if same[i].as_py():
        raise batch.error(i, "the same answer as chosen (a pair needs two different answers)", "rejected")
    raise batch.error(i, "no user message with text", "prompt")


def pair_ids(prompts: list, chosen: list, rejected: list) -> list[str]:
    """pairstore.tables.pairs.pair_id_of of every row: the JSON list messages_content_id hashes, written out
    with the batch's texts NFC-normalized in one call (tests/ingest/test_keyed.py compares)."""
    flat = [f"{m['role']}:{m['content']}" for p in prompts for m in p]
    return _pair_ids(flat, [len(p) for p in prompts], chosen, rejected)


def pair_ids_of_columns(prompts: Column, chosen: list, rejected: list) -> list[str]:
    """pair_ids with the prompts an Arrow MSG_TYPE column (no null prompt): its messages read as two flat
    string columns, not as a dict each."""
    arr = prompts.combine_chunks() if isinstance(prompts, pa.ChunkedArray) else prompts
    values = arr.flatten()
    flat = [f"{r}:{c}" for r, c in zip(values.field("role").to_pylist(), values.field("content").to_pylist())]
    return _pair_ids(flat, pc.fill_null(pc.list_value_length(arr), 0).to_pylist(), chosen, rejected)


def _pair_ids(flat: list[str], lengths: list[int], chosen: list, rejected: list) -> list[str]:
    texts = nfc_many(flat + list(chosen) + [r or "" for r in rejected])
    n_flat, n = len(flat), len(chosen)
    out, at = [], 0
    for i, k in enumerate(lengths):
        parts = [json_str(x) for x in texts[at : at + k]]
        at += k
        parts.append(json_str(texts[n_flat + i]))
        parts.append("null" if rejected[i] is None else json_str(texts[n_flat + n + i]))
        out.append(xxh128("[" + ", ".join(parts) + "]"))
    return out


def pair_tables(
    batch: Batch, prefix: str, source: str, miner: str, version: str
) -> tuple[pa.Table, pa.Table]:
    """The pairs and origins (PAIR_TABLE_SCHEMA, ORIGIN_TABLE_SCHEMA) of one checked batch: origins the file
    line and every id the row carries, once each."""
    t = batch.table
    n = t.num_rows
    # the sides as Python strings only while the ids are made: they are a batch's largest Python objects
    ids = pa.array(
        pair_ids_of_columns(
            t.column("prompt"), t.column("chosen").to_pylist(), t.column("rejected").to_pylist()
        ),
        pa.string(),
    )
    order = t.column("_row").combine_chunks()
    task = t.column("task_key")
    given = {
        "pair_id": ids,
        "kind": pc.if_else(pc.is_null(t.column("rejected")), "sft", "dpo"),
        "prompt": t.column("prompt"),
        "chosen": t.column("chosen"),
        "rejected": t.column("rejected"),
        "source": pa.array([source] * n, pa.string()),
        "family": t.column("family"),
        "miner": pa.array([miner] * n, pa.string()),
        "miner_version": pa.array([version] * n, pa.string()),
        "match_key": pa.array(prompt_match_keys(t.column("prompt")), pa.string()),
        "task_key": pc.if_else(pc.fill_null(pc.equal(task, ""), False), pa.scalar(None, pa.string()), task),
        "_order": order,
    }
    pairs = pa.table([given[f.name] for f in PAIR_TABLE_SCHEMA], schema=PAIR_TABLE_SCHEMA)
    origins = _origins(batch, ids, order, prefix, f"ingest pairs --source {source}", miner)
    return pairs, origins


def _origins(batch: Batch, ids: pa.Array, order: pa.Array, prefix: str, rule: str, miner: str) -> pa.Table:
    """The origins (ORIGIN_TABLE_SCHEMA) of a batch's pairs, built as columns: per row its line, then the
    ids it carries (ID_FIELDS in order, then `origin_ids`), each id once a row (add_pair_tables keeps
    the first of a key across rows)."""
    t = batch.table
    lines = pa.array([f"{prefix}:{line}" for line in batch.all_lines()], pa.string())
    rows = pa.array(np.arange(t.num_rows, dtype=np.int64))
    parts = [(rows, "import", lines)]  # (row of each origin, kind, origin id)
    for name in ID_FIELDS:
        col = t.column(name).combine_chunks()
        if col.null_count < len(col):
            present = col.is_valid()
            parts.append((rows.filter(present), "file_id", col.filter(present)))
    more = t.column("origin_ids").combine_chunks()
    if len(more) > more.null_count:
        parts.append((pc.list_parent_indices(more), "file_id", more.flatten()))
    at = pa.concat_arrays([pa.array(np.full(len(r), k, dtype=np.int64)) for k, (r, _, _) in enumerate(parts)])
    table = pa.table(
        {
            "row": pa.concat_arrays([r.cast(pa.int64()) for r, _, _ in parts]),
            "part": at,
            "kind": pa.concat_arrays([pa.array([kind] * len(r), pa.string()) for r, kind, _ in parts]),
            "origin_id": pa.concat_arrays([oid.cast(pa.string()) for _, _, oid in parts]),
        }
    )
    if len(parts) > 1:
        # a row's origins together, in the order above; an id a row carries twice kept once
        table = table.take(pc.sort_indices(table, [("row", "ascending"), ("part", "ascending")]))
        table = table.filter(pc.invert(_repeated_in_row(table)))
    row = table.column("row")
    m = table.num_rows
    return pa.table(
        [
            ids.take(row),
            table.column("kind"),
            table.column("origin_id"),
            pa.array([rule] * m, pa.string()),
            pa.array([miner] * m, pa.string()),
            order.take(row),
        ],
        schema=ORIGIN_TABLE_SCHEMA,
    )


def _repeated_in_row(table: pa.Table) -> pa.Array:
    """Per origin (sorted by row): whether it is a file id the same row gave before it. Only rows with two
    file ids or more are looked at one by one."""
    rows = table.column("row").to_numpy()
    file_id = pc.equal(table.column("kind"), "file_id").to_numpy(zero_copy_only=False)
    repeated = np.zeros(len(rows), dtype=bool)
    several = np.bincount(rows[file_id], minlength=int(rows.max(initial=-1)) + 1) > 1
    candidates = np.flatnonzero(file_id & several[rows])
    if len(candidates):
        oids = table.column("origin_id").take(pa.array(candidates)).to_pylist()
        seen: set[tuple[int, str]] = set()
        for at, oid in zip(candidates.tolist(), oids):
            key = (int(rows[at]), oid)
            repeated[at] = key in seen
            seen.add(key)
    return pa.array(repeated)


def ingest_pairs(
    store: Store,
    path: StrPath,
    *,
    source: str,
    miner: str = "ingest-pairs",
    miner_version: str = "1",
    progress: Progress | bool = False,
) -> IngestResult:
    """Pairs from a pair file in any shape pairstore.ingest.pair_files reads; each row's origins are (file
    SHA-256 prefix, line) and every id the row carries (`battle_id`, `id`, `question_id`, ...). A missing or
    null `rejected` makes an NLL-only `sft` row. A row with an empty side, identical sides or an empty prompt
    is refused (BadInput naming its line and field)."""
    if not source or not re.fullmatch(r"[A-Za-z0-9_.\-]+", source):
        raise BadInput("--source must be letters, digits, '.', '_' or '-'", field="source")
    if not Path(path).is_file():
        raise BadInput("no such file" if not Path(path).exists() else "a folder, not a file", path=str(path))
    result = IngestResult("pairs", str(path))
    sha = sha256_file(path)
    # Each batch inserted as it is read, in one transaction with DuckDB's memory bounded (what a transaction
    # inserts spills to the file), so memory does not grow with the file. A later batch's anti-join sees
    # the earlier batches' rows: a pair the file repeats is counted once. A refused row raises inside the
    # transaction, which rolls back: the store unchanged.
    reading = as_progress(progress).stage("ingest pairs: read", total=records_in(path), unit="records")
    with bounded_memory(store.con), store.transaction(), reading as read:
        for batch in pair_batches(path, require_chosen=True):
            refuse_unusable(batch)
            added = add_pair_tables(store, *pair_tables(batch, sha[:16], source, miner, miner_version))
            result.added += added.added
            result.skipped.update(added.dropped)
            result.read += batch.table.num_rows
            read.advance(batch.table.num_rows)
        log_ingest(store, path, "pairs", result.read, result.added, sha256=sha)
    return result
