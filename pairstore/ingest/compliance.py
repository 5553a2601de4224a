"""Handcrafted compliance pairs and NLL rows into `pairs` (written by pairstore.tables.pairs).

    pairstore ingest compliance compliance.jsonl
    from pairstore.ingest.compliance import import_compliance

A JSONL/parquet file (handcrafted): one record per line, either
{prompt, chosen, rejected} -> a pair, source 'compliance', or {prompt, target}
-> an NLL-only `sft` row (rejected None), source 'compliance_sft'. prompt is a
string or a message list (kept as given, system message included); optional
`id` (the origin id; default "<file name>:<line>") and `family`. Rows whose
prompt is held out are dropped ('holdout').

Bad records raise BadInput naming the file, the line (the row for parquet and Arrow) and
the field; nothing is written.
"""

from __future__ import annotations

from pathlib import Path

from pairstore.holdout.sets import HoldoutFilter
from pairstore.ingest.records import Fields, read_records
from pairstore.store.store import Store
from pairstore.tables.pairs import Origin, Pair, PairsResult, declare_sources, write_pairs

# Recorded on every pair as pairs.miner / miner_version (the names these pairs carried when the importer
# was registered as a miner, so stores and exports stay the same).
PRODUCER, VERSION = "compliance", "1"
SOURCES = declare_sources(("compliance", "compliance_sft"), by=__name__)


def import_compliance(store: Store, *, path: str | Path) -> PairsResult:
    """Handcrafted compliance pairs {prompt, chosen, rejected} and NLL rows {prompt, target}."""
    result = PairsResult(PRODUCER, VERSION)
    name = Path(path).name
    pairs = []
    for line, rec in read_records(path):
        f = Fields(rec, path, line)
        prompt = f.messages("prompt")
        origin_id = f.str("id", required=False) or f"{name}:{line}"
        family = f.str("family", required=False)
        if f.has("target"):
            if f.has("chosen") or f.has("rejected"):
                raise f.error("target", "give either target (an NLL row) or chosen and rejected, not both")
            target = f.str("target")
            result.stats["sft rows"] += 1
            pairs.append(
                Pair(
                    prompt=prompt,
                    chosen=target,
                    rejected=None,
                    source="compliance_sft",
                    family=family,
                    origins=[Origin("import", origin_id, "handcrafted compliance NLL row")],
                )
            )
        else:
            chosen = f.str("chosen")
            rejected = f.str("rejected")
            result.stats["pairs"] += 1
            pairs.append(
                Pair(
                    prompt=prompt,
                    chosen=chosen,
                    rejected=rejected,
                    source="compliance",
                    family=family,
                    origins=[
                        Origin("import", origin_id, "handcrafted: compliant chosen, non-compliant rejected")
                    ],
                )
            )
    holdout = HoldoutFilter.load(store)
    with store.transaction():
        write_pairs(store, result, pairs, holdout)
    return result
