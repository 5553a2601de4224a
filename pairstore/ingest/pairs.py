"""Ingest of pair files into `pairs` (written by pairstore.tables.pairs).

pairstore ingest pairs past_round.parquet --source attached
"""

from __future__ import annotations

import re

from pairstore.errors import BadInput
from pairstore.ingest.base import (
    IngestResult,
    log_ingest,
)
from pairstore.ingest.pair_files import read_pair_file
from pairstore.keys import sha256_file
from pairstore.tables.pairs import Origin, Pair, add_pairs, check_pair


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
    store, path, *, source: str, miner: str = "ingest-pairs", miner_version: str = "1", progress: bool = False
) -> IngestResult:
    """Pairs from a pair file in any layout pairstore.ingest.pair_files reads; each row's origins are (file
    SHA-256 prefix, line) and every id the row carries (`battle_id`, `id`, `question_id`, ...). A missing or null `rejected` makes an NLL-only `sft` row. A row with an empty side,
    identical sides or an empty prompt is refused (BadInput naming its line and field)."""
    if not source or not re.fullmatch(r"[A-Za-z0-9_.\-]+", source):
        raise BadInput("--source must be letters, digits, '.', '_' or '-'", field="source")
    result = IngestResult("pairs", str(path))
    rows = read_pair_file(path, require_chosen=True)
    prefix = sha256_file(path)[:16]
    result.read = len(rows)
    pairs = []
    for r in rows:
        pair = Pair(
            prompt=r.prompt,
            chosen=r.chosen,
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
