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
from pairstore.ingest.declare import Unread
from pairstore.ingest.formats import get_format
from pairstore.ingest.records import Fields, read_records, unit_of
from pairstore.store.store import Store
from pairstore.tables.pairs import Origin, Pair, PairsResult, declare_sources, write_pairs

# Recorded on every pair as pairs.miner / miner_version (the names these pairs carried when the importer
# was registered as a miner, so stores and exports stay the same).
PRODUCER, VERSION = "compliance", "1"
SOURCES = declare_sources(("compliance", "compliance_sft"), by=__name__)


def import_compliance(store: Store, *, path: str | Path) -> PairsResult:
    """Handcrafted compliance pairs {prompt, chosen, rejected} and NLL rows {prompt, target}, read whole in
    the `compliance` format (pairstore.ingest.formats)."""
    result = PairsResult(PRODUCER, VERSION)
    name = Path(path).name
    fmt = get_format("pairs", "compliance")
    unread = Unread(fmt)
    pairs = []
    for line, rec in read_records(path):
        f = Fields(rec, path, line)
        unread.check(rec, path, line, unit_of(path))
        row = fmt.parse(f)  # type: ignore[misc]  # a records format
        origin_id = row.get("id") or f"{name}:{line}"
        nll = row["rejected"] is None
        result.stats["sft rows" if nll else "pairs"] += 1
        pairs.append(
            Pair(
                prompt=row["prompt"],
                chosen=row["chosen"],
                rejected=row["rejected"],
                source="compliance_sft" if nll else "compliance",
                family=row.get("family"),
                origins=[
                    Origin(
                        "import",
                        origin_id,
                        "handcrafted compliance NLL row"
                        if nll
                        else "handcrafted: compliant chosen, non-compliant rejected",
                    )
                ],
            )
        )
    holdout = HoldoutFilter.load(store)
    with store.transaction():
        write_pairs(store, result, pairs, holdout)
    return result
