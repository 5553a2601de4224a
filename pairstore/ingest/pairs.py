"""Ingest of pair files into `pairs` (written by pairstore.tables.pairs, which also holds what every
producer of pairs shares: `PairsResult` and `write_pairs` past the holdout).

pairstore ingest pairs past_round.parquet --source attached
"""

from __future__ import annotations

import re
from json.encoder import encode_basestring as _json_str  # what json.dumps writes for a string
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.ingest.base import IngestResult, log_ingest, records_in
from pairstore.ingest.bulk import PY_WHITESPACE, NotVectorized, flag_text, user_messages
from pairstore.ingest.pair_files import ID_FIELDS, PLAIN_SCHEMA, plain_batches, read_pair_file
from pairstore.keys import match_keys_of_texts, nfc_many, sha256_file, xxh128
from pairstore.prefetch import prefetch
from pairstore.progress import as_progress
from pairstore.store.store import Store
from pairstore.tables.pairs import (
    ORIGIN_TABLE_SCHEMA,
    PAIR_TABLE_SCHEMA,
    Origin,
    Pair,
    add_pair_tables,
    add_pairs,
    check_pair,
)


def _refuse_unusable_pair(pair: Pair, path, line: int) -> None:
    """A user's pair file is refused, not thinned: an empty side, identical sides or an empty prompt name
    their line and field (miners drop such pairs by reason instead)."""
    ok, reason = check_pair(pair)
    if ok:
        return
    if reason == "empty side":
        field = "chosen" if not pair.chosen.strip() else "rejected"
        message = "empty or whitespace-only answer"
    elif reason == "identical sides":
        field, message = "rejected", "the same answer as chosen (a pair needs two different answers)"
    else:
        field, message = "prompt", "no user message with text"
    raise BadInput(message, path=str(path), line=line, field=field)


def ingest_pairs(
    store: Store,
    path,
    *,
    source: str,
    miner: str = "ingest-pairs",
    miner_version: str = "1",
    progress: bool = False,
) -> IngestResult:
    """Pairs from a pair file in any layout pairstore.ingest.pair_files reads; each row's origins are (file
    SHA-256 prefix, line) and every id the row carries (`battle_id`, `id`, `question_id`, ...). A missing or
    null `rejected` makes an NLL-only `sft` row. A row with an empty side, identical sides or an empty prompt
    is refused (BadInput naming its line and field)."""
    if not source or not re.fullmatch(r"[A-Za-z0-9_.\-]+", source):
        raise BadInput("--source must be letters, digits, '.', '_' or '-'", field="source")
    result = IngestResult("pairs", str(path))
    if _ingest_plain(store, path, source, miner, miner_version, result, progress):
        return result
    rows = read_pair_file(path, require_chosen=True)
    prefix = sha256_file(path)[:16]
    result.read = len(rows)
    pairs = []
    for r in rows:
        pair = Pair(
            prompt=r.prompt,
            chosen=r.required_chosen,
            rejected=r.rejected,
            source=source,
            family=r.family,
            task_key=r.task_key,
            # the file line, and every id the row carries (a held-out battle_id is found by id at export)
            origins=[Origin("import", f"{prefix}:{r.line}", f"ingest pairs --source {source}")]
            + [
                Origin("file_id", oid, f"ingest pairs --source {source}")
                for oid in dict.fromkeys(r.origin_ids)
            ],
        )
        _refuse_unusable_pair(pair, path, r.line)
        pairs.append(pair)
    with store.transaction():
        added = add_pairs(store, pairs, miner=miner, miner_version=miner_version)
        result.added = added.added
        result.skipped.update(added.dropped)
        log_ingest(store, path, "pairs", result.read, result.added)
    return result


# -- the plain layout as Arrow columns ----------------------------------------------------------------------


def _unusable(table: pa.Table) -> pa.Array:
    """Rows _refuse_unusable_pair refuses (an empty side, identical sides, an empty prompt): the row path
    then names the first one's line and field."""
    chosen, rejected = (
        pc.utf8_trim(table.column(n), characters=PY_WHITESPACE) for n in ("chosen", "rejected")
    )
    blank = pc.or_kleene(pc.equal(pc.utf8_length(chosen), 0), pc.equal(pc.utf8_length(rejected), 0))
    same = pc.equal(chosen, rejected)
    return pc.fill_null(pc.or_kleene(pc.or_kleene(blank, same), flag_text(table.column("prompt"))), False)


_NULL = "null"


def _pair_ids(prompts: list, chosen: list, rejected: list) -> list[str]:
    """pair_id_of([user message], chosen, rejected) of each row: the JSON list messages_content_id hashes,
    written out (tests/ingest/test_ingest_bulk_pairs.py compares)."""
    users = nfc_many(["user:" + p for p in prompts])
    firsts, seconds = nfc_many(chosen), nfc_many([r or "" for r in rejected])
    return [
        xxh128(f"[{_json_str(u)}, {_json_str(c)}, {_NULL if r is None else _json_str(s)}]")
        for u, c, s, r in zip(users, firsts, seconds, rejected)
    ]


def _plain_tables(table: pa.Table, before: int, prefix: str, source: str, miner: str, version: str):
    """The pairs and origins (PAIR_TABLE_SCHEMA, ORIGIN_TABLE_SCHEMA) of one checked batch, as the row
    path builds them: origins the file line and every id the row carries, once each."""
    n = table.num_rows
    col = {name: table.column(name) for name in PLAIN_SCHEMA.names}
    prompts, chosen, rejected = (col[c].to_pylist() for c in ("prompt", "chosen", "rejected"))
    ids = pa.array(_pair_ids(prompts, chosen, rejected), pa.string())
    order = pa.array(range(before, before + n), pa.int64())
    no_task = pc.fill_null(pc.equal(col["task_key"], ""), False)
    given = {
        "pair_id": ids,
        "kind": pc.if_else(pc.is_null(col["rejected"]), "sft", "dpo"),
        "prompt": user_messages(col["prompt"].combine_chunks()),
        "chosen": col["chosen"],
        "rejected": col["rejected"],
        "source": pa.array([source] * n, pa.string()),
        "family": col["family"],
        "miner": pa.array([miner] * n, pa.string()),
        "miner_version": pa.array([version] * n, pa.string()),
        "match_key": pa.array(match_keys_of_texts(prompts), pa.string()),
        "task_key": pc.if_else(no_task, pa.scalar(None, pa.string()), col["task_key"]),
        "_order": order,
    }
    pairs = pa.table([given[f.name] for f in PAIR_TABLE_SCHEMA], schema=PAIR_TABLE_SCHEMA)
    rule = f"ingest pairs --source {source}"
    lines = [f"{prefix}:{i + 1}" for i in range(before, before + n)]
    parts = [(ids, "import", pa.array(lines, pa.string()), order)]
    for name in ID_FIELDS:
        present = pc.invert(pc.is_null(col[name]))
        if pc.any(present).as_py():
            parts.append((ids.filter(present), "file_id", col[name].filter(present), order.filter(present)))
    origins = pa.concat_tables(
        pa.table(
            [pid, pa.array([kind] * len(pid), pa.string()), oid, pa.array([rule] * len(pid), pa.string()),
             pa.array([miner] * len(pid), pa.string()), at],
            schema=ORIGIN_TABLE_SCHEMA,
        )
        for pid, kind, oid, at in parts
    )  # fmt: skip
    return pairs, origins


def _ingest_plain(store: Store, path, source, miner, version, result: IngestResult, progress) -> bool:
    """A plain-layout JSONL pair file (prompt, chosen and rejected as strings) read in Arrow batches and
    written as columns (add_pair_tables), the same pairs and origins the row path writes. False (nothing
    written) where the file or a row needs the row path, which reads it again and names the first bad
    row's line and field. The next batch is read and checked in a thread (pairstore.prefetch; Arrow's
    reader works without the GIL) while this one is keyed."""
    if not Path(path).is_file():
        return False  # the row path names what is missing
    lines = records_in(path)
    sha = sha256_file(path)
    pairs, origins = [], []
    read = 0
    try:
        with as_progress(progress).stage("ingest pairs: read", total=lines, unit="records") as stage:
            batches = prefetch(plain_batches(path, True, _unusable), depth=1, name="pairstore-ingest-pairs")
            try:
                for table in batches:
                    batch_pairs, batch_origins = _plain_tables(table, read, sha[:16], source, miner, version)
                    pairs.append(batch_pairs)
                    origins.append(batch_origins)
                    read += table.num_rows
                    stage.advance(table.num_rows)
            finally:
                batches.close()
    except NotVectorized:  # FlaggedRecord too: the row path raises that record's error
        return False
    if not read or read != lines:
        return False  # blank lines: row numbers would not be line numbers
    with store.transaction():
        added = add_pair_tables(
            store,
            pa.concat_tables(pairs, promote_options="none"),
            pa.concat_tables(origins, promote_options="none"),
        )
        result.read, result.added = read, added.added
        result.skipped.update(added.dropped)
        log_ingest(store, path, "pairs", result.read, result.added, sha256=sha)
    return True
