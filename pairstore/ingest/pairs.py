"""Ingest of pair files into `pairs` (written by pairstore.tables.pairs, which also holds what every
producer of pairs shares: `PairsResult` and `write_pairs` past the holdout).

    pairstore ingest pairs past_round.parquet --source attached

The file is read by pairstore.ingest.pair_files (every pair shape, read whole or refused) into checked
Arrow batches; each batch's pairs and origins are built as columns (the pair ids and match keys a batch
at a time, pairstore.ingest.keyed) and written in one transaction (add_pair_tables).
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import re
from json.encoder import encode_basestring as json_str  # what json.dumps writes for a string
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.ingest.base import IngestResult, records_in
from pairstore.ingest.batches import Batch
from pairstore.ingest.keyed import prompt_match_keys
from pairstore.ingest.kinds import PY_WHITESPACE, Column
from pairstore.ingest.pair_files import pair_batches
from pairstore.ingest.pair_rows import ID_FIELDS
from pairstore.keys import nfc_many, sha256_file, xxh128
from pairstore.progress import as_progress
from pairstore.store.store import Store
from pairstore.tables.ingests import log_ingest
from pairstore.tables.pairs import ORIGIN_TABLE_SCHEMA, PAIR_TABLE_SCHEMA, add_pair_tables

if TYPE_CHECKING:
    from pairstore.files import StrPath


def _blank(col: Column) -> list[bool]:
    return pc.fill_null(
        pc.equal(pc.utf8_length(pc.utf8_trim(col, characters=PY_WHITESPACE)), 0), False
    ).to_pylist()


def refuse_unusable(batch: Batch) -> None:
    """A user's pair file is refused, not thinned: an empty side, identical sides or a prompt without user
    text names its line and field (miners drop such pairs by reason instead)."""
    t = batch.table
    chosen, rejected = t.column("chosen"), t.column("rejected")
    empty_chosen, empty_rejected = _blank(chosen), _blank(rejected)
    same = pc.fill_null(
        pc.equal(
            pc.utf8_trim(chosen, characters=PY_WHITESPACE), pc.utf8_trim(rejected, characters=PY_WHITESPACE)
        ),
        False,
    ).to_pylist()
    prompts = t.column("prompt").to_pylist()
    for i in range(t.num_rows):
        if empty_chosen[i]:
            raise batch.error(i, "empty or whitespace-only answer", "chosen")
        if empty_rejected[i]:
            raise batch.error(i, "empty or whitespace-only answer", "rejected")
        if same[i]:
            raise batch.error(i, "the same answer as chosen (a pair needs two different answers)", "rejected")
        if not any(m["role"] == "user" and m["content"].strip() for m in prompts[i]):
            raise batch.error(i, "no user message with text", "prompt")


def pair_ids(prompts: list, chosen: list, rejected: list) -> list[str]:
    """pairstore.tables.pairs.pair_id_of of every row: the JSON list messages_content_id hashes, written out
    with the batch's texts NFC-normalized in one call (tests/ingest/test_keyed.py compares)."""
    flat = [f"{m['role']}:{m['content']}" for p in prompts for m in p]
    texts = nfc_many(flat + list(chosen) + [r or "" for r in rejected])
    n_flat, n = len(flat), len(chosen)
    out, at = [], 0
    for i, p in enumerate(prompts):
        parts = [json_str(x) for x in texts[at : at + len(p)]]
        at += len(p)
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
    prompts, chosen, rejected = (t.column(c).to_pylist() for c in ("prompt", "chosen", "rejected"))
    ids = pa.array(pair_ids(prompts, chosen, rejected), pa.string())
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
    rule = f"ingest pairs --source {source}"
    id_cols = [t.column(name).to_pylist() for name in ID_FIELDS]
    more = t.column("origin_ids").to_pylist()
    rows: dict[str, list] = {name: [] for name in ORIGIN_TABLE_SCHEMA.names}
    for i in range(n):
        pid, at = ids[i].as_py(), order[i].as_py()
        found = [("import", f"{prefix}:{batch.line(i)}")] + [
            ("file_id", oid)
            for oid in dict.fromkeys([c[i] for c in id_cols if c[i] is not None] + list(more[i] or []))
        ]
        for kind, oid in found:
            for name, v in zip(ORIGIN_TABLE_SCHEMA.names, (pid, kind, oid, rule, miner, at)):
                rows[name].append(v)
    origins = pa.table(rows, schema=ORIGIN_TABLE_SCHEMA)
    return pairs, origins


def ingest_pairs(
    store: Store,
    path: StrPath,
    *,
    source: str,
    miner: str = "ingest-pairs",
    miner_version: str = "1",
    progress: bool = False,
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
    pairs: list[pa.Table] = []
    origins: list[pa.Table] = []
    with as_progress(progress).stage("ingest pairs: read", total=records_in(path), unit="records") as stage:
        for batch in pair_batches(path, require_chosen=True):
            refuse_unusable(batch)
            got = pair_tables(batch, sha[:16], source, miner, miner_version)
            pairs.append(got[0])
            origins.append(got[1])
            result.read += batch.table.num_rows
            stage.advance(batch.table.num_rows)
    with store.transaction():
        added = add_pair_tables(
            store,
            pa.concat_tables(pairs, promote_options="none") if pairs else PAIR_TABLE_SCHEMA.empty_table(),
            pa.concat_tables(origins, promote_options="none")
            if origins
            else ORIGIN_TABLE_SCHEMA.empty_table(),
        )
        result.added = added.added
        result.skipped.update(added.dropped)
        log_ingest(store, path, "pairs", result.read, result.added, sha256=sha)
    return result
