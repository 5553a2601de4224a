"""Attaching a mixture file made outside pairstore to a round: history the audits can see.

    pairstore round attach m11a s2_pairs_lf1.parquet

The file is registered in `exports` (kind 'attached') with its SHA-256 and content hash; each row
becomes a pair (source from the file, else 'attached') with an `attached` origin naming the file's
SHA-256 and line, unless it is a pair the store already holds. Attached files are history: they are
not gated (the gate is for what pairstore writes), but `audit leaks` and `audit mixtures` check them
like any export. One file (by its bytes) attaches to a round once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.export.registry import attached_id, record_attached
from pairstore.export.writer import row_digest, rows_content_hash
from pairstore.ingest.pair_files import PairRow, read_pair_file
from pairstore.keys import match_key, sha256_file
from pairstore.rounds.recipes import get_round
from pairstore.tables.pairs import Origin, Pair, add_pairs, declare_sources, pair_id_of

# Rows of an attached file that are not stored pairs and name no source of their own.
SOURCES = declare_sources(("attached",), by=__name__)


@dataclass
class AttachResult:
    round: str
    path: str
    sha256: str
    rows: int
    matched: int = 0  # rows that are pairs already in the store
    added: int = 0  # rows stored as new pairs
    dropped: dict = field(default_factory=dict)  # rows not stored, by reason (empty side, ...)
    export_id: str = ""
    content_hash: str = ""
    already: bool = False  # the same file was attached to this round before


def _content_hash(rows: list[PairRow]) -> str:
    return rows_content_hash(row_digest(r.prompt, r.required_chosen, r.rejected) for r in rows)


def content_hash_of_file(path) -> str:
    """The writer-independent content hash of a pair file's rows (the definition export uses)."""
    return _content_hash(read_pair_file(path, require_chosen=True))


def _known_by_file_id(store, rows: list[PairRow]) -> dict[str, tuple[str, str]]:
    """pair_id -> (match key, chosen) of the stored pairs the file names by id."""
    file_ids = sorted({r.pair_id for r in rows if r.pair_id})
    if not file_ids:
        return {}
    with store.registered("_att_ids", pa.table({"pair_id": pa.array(file_ids, pa.string())})):
        return {
            pid: (mk, ch)
            for pid, mk, ch in store.con.execute(
                "SELECT p.pair_id, p.match_key, p.chosen FROM pairs p JOIN _att_ids USING (pair_id)"
            ).fetchall()
        }


def _stored_ids(store, ids: list[str]) -> set[str]:
    with store.registered("_att_new", pa.table({"pair_id": pa.array(sorted(set(ids)), pa.string())})):
        return {
            r[0]
            for r in store.con.execute(
                "SELECT p.pair_id FROM pairs p JOIN _att_new USING (pair_id)"
            ).fetchall()
        }


def attach_round(store, name: str, path) -> AttachResult:
    """Register a mixture file made outside pairstore as round `name`'s training data (not gated)."""
    get_round(store, name)
    p = Path(path)
    if not p.is_file():
        raise BadInput("no such file", path=str(path))
    sha = sha256_file(p)
    abs_path = str(p.resolve())
    eid = attached_id(name, sha)
    row = store.one("SELECT rows, content_hash FROM exports WHERE export_id = ?", [eid])
    if row is not None:
        return AttachResult(
            round=name,
            path=abs_path,
            sha256=sha,
            rows=row[0],
            export_id=eid,
            content_hash=row[1],
            already=True,
        )
    records = read_pair_file(p, require_chosen=True)
    result = AttachResult(
        round=name,
        path=abs_path,
        sha256=sha,
        rows=len(records),
        export_id=eid,
        content_hash=_content_hash(records),
    )
    known_by_file_id = _known_by_file_id(store, records)
    row_pairs: list[tuple[int, str | None]] = []  # (row index, pair id) in file order
    new_pairs: list[tuple[int, Pair]] = []
    for r in records:
        known = known_by_file_id.get(r.pair_id) if r.pair_id else None
        if known is not None and known[0] == match_key(r.prompt) and known[1] == r.chosen:
            row_pairs.append(
                (r.row_index, r.pair_id)
            )  # one of ours (an export carries the recipe's system prompt)
            result.matched += 1
            continue
        row_pairs.append((r.row_index, pair_id_of(r.prompt, r.required_chosen, r.rejected)))
        new_pairs.append(
            (
                r.row_index,
                Pair(
                    prompt=r.prompt,
                    chosen=r.required_chosen,
                    rejected=r.rejected,
                    source=r.source or SOURCES[0],
                    family=r.family,
                    task_key=r.task_key,
                    origins=[Origin("attached", f"{sha}:{r.line}", f"round attach {name}")],
                ),
            )
        )
    with store.transaction():
        if new_pairs:
            existing = _stored_ids(store, [str(row_pairs[i][1]) for i, _ in new_pairs])  # new: never None
            # Rows whose pair is already stored count as matched; the rest become pairs with their own origin.
            keep = [(i, pr) for i, pr in new_pairs if row_pairs[i][1] not in existing]
            result.matched += len(new_pairs) - len(keep)
            added = add_pairs(store, [pr for _, pr in keep], miner="round-attach", miner_version="1")
            stored = set(added.pair_ids)
            result.added = added.added
            dropped = Counter(added.dropped)
            dropped.pop("duplicate", None)
            result.dropped = dict(dropped)
            for i, _ in keep:
                if row_pairs[i][1] not in stored:
                    row_pairs[i] = (i, None)
        record_attached(
            store,
            name,
            path=abs_path,
            sha=sha,
            rows=result.rows,
            content_hash=result.content_hash,
            row_pairs=[(i, pid) for i, pid in row_pairs if pid is not None],
            detail={"matched": result.matched, "added": result.added, "dropped": result.dropped},
        )
    return result
