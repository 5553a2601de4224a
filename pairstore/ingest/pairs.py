"""Ingest of pair files into `pairs` (written by pairstore.tables.pairs), and what every producer of
pairs shares: the result of a run (`PairsResult`) and writing pairs past the holdout (`write_pairs`).

pairstore ingest pairs past_round.parquet --source attached
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from pairstore.errors import BadInput
from pairstore.holdout.sets import HoldoutFilter
from pairstore.ingest.base import (
    IngestResult,
    log_ingest,
)
from pairstore.ingest.pair_files import read_pair_file
from pairstore.keys import sha256_file
from pairstore.store.store import Store
from pairstore.tables.pairs import Origin, Pair, add_pairs, check_pair


@dataclass
class PairsResult:
    """What one run that writes pairs (a miner, a dataset import) did: new pairs, drops by reason, and
    tallies of what it looked at. `producer` and `version` are recorded on every pair it writes
    (pairs.miner, pairs.miner_version, pair_origins.miner)."""

    miner: str
    version: str
    kept: int = 0  # new pairs written
    new_origins: int = 0  # origins written (new and known pairs)
    dropped: Counter = field(default_factory=Counter)  # reason -> count
    stats: Counter = field(default_factory=Counter)  # what was looked at: battles, generations, rows, ...
    pair_ids: list[str] = field(default_factory=list)  # ids of every pair produced, in order
    by_source: Counter = field(default_factory=Counter)  # produced pairs per source
    # seconds: verify_s / scan_s inside the verifier / scanner (summed over worker processes),
    # judge_wall_s judging on the clock, write_s writing verdicts, pairs and origins
    timings: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "miner": self.miner,
            "version": self.version,
            "kept": self.kept,
            "new_origins": self.new_origins,
            "dropped": dict(sorted(self.dropped.items())),
            "stats": dict(sorted(self.stats.items())),
            "by_source": dict(sorted(self.by_source.items())),
            "pairs": len(self.pair_ids),
        }


R = TypeVar("R", bound=PairsResult)


def write_pairs(store: Store, result: R, pairs: Iterable[Pair], holdout: HoldoutFilter | None = None) -> R:
    """Write `pairs` through add_pairs and fold its counts into `result`.

    With a holdout filter, a pair whose prompt's match key (or task key) is held out is dropped as
    'holdout' here too: a last check for prompts that reach a producer by another road than their item id.
    """
    kept = []
    for p in pairs:
        if holdout is not None and holdout.holds_pair(p):
            result.dropped["holdout"] += 1
            continue
        kept.append(p)
    added = add_pairs(store, kept, miner=result.miner, miner_version=result.version)
    result.kept += added.added
    result.new_origins += added.new_origins
    result.dropped.update(added.dropped)
    result.pair_ids.extend(added.pair_ids)
    ids = set(added.pair_ids)
    for p in kept:
        if p.pair_id in ids:
            result.by_source[p.source] += 1
    return result


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
