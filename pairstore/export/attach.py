"""Attaching a mixture file made outside pairstore to a round: history the audits can see.

    pairstore round attach m11a s2_pairs_lf1.parquet

The file is registered in `exports` (kind 'attached') with its SHA-256 and content hash; each row
becomes a pair (source from the file, else 'attached') with an `attached` origin naming the file's
SHA-256 and line, unless it is a pair the store already holds. Attached files are history: they are
not gated (the gate is for what pairstore writes), but `audit leaks` and `audit mixtures` check them
like any export. One file (by its bytes) attaches to a round once. The file is read by the reader of
every pair file (pairstore.ingest.pair_files): whole or refused, a batch at a time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.export.registry import attached_id, record_attached
from pairstore.export.writer import row_digest, rows_content_hash
from pairstore.files import StrPath
from pairstore.ingest.pair_files import PairRow, iter_pair_rows, pair_batches, pair_rows_of
from pairstore.keys import match_key, sha256_file
from pairstore.rounds.recipes import get_round
from pairstore.tables.pairs import Origin, Pair, add_pairs, declare_sources, pair_id_of

if TYPE_CHECKING:
    from pairstore.store.store import Store

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


def content_hash_of_file(path: StrPath) -> str:
    """The writer-independent content hash of a pair file's rows (the definition export uses), the file
    read a batch at a time."""
    return rows_content_hash(
        row_digest(r.prompt, r.required_chosen, r.rejected) for r in iter_pair_rows(path, require_chosen=True)
    )


def _known_by_file_id(store: Store, rows: list[PairRow]) -> dict[str, tuple[str, str]]:
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


def _stored_ids(store: Store, ids: list[str]) -> set[str]:
    with store.registered("_att_new", pa.table({"pair_id": pa.array(sorted(set(ids)), pa.string())})):
        return {
            r[0]
            for r in store.con.execute(
                "SELECT p.pair_id FROM pairs p JOIN _att_new USING (pair_id)"
            ).fetchall()
        }


class _Attaching:
    """One attach, a batch of the file's rows at a time: which rows are stored pairs, which become new
    ones."""

    def __init__(self, store: Store, name: str, sha: str, result: AttachResult):
        self.store, self.name, self.sha, self.result = store, name, sha, result
        self.row_pairs: list[tuple[int, str]] = []  # (row index, pair id) in file order
        self.digests: list[str] = []
        self.added_here: set[str] = set()  # pairs this attach stored (a repeat of one is neither)
        self.dropped: Counter[str] = Counter()

    def add(self, rows: list[PairRow]) -> None:
        result = self.result
        known_by_file_id = _known_by_file_id(self.store, rows)
        new_pairs: list[tuple[int, str, Pair]] = []
        for r in rows:
            self.digests.append(row_digest(r.prompt, r.required_chosen, r.rejected))
            result.rows += 1
            known = known_by_file_id.get(r.pair_id) if r.pair_id else None
            if known is not None and known[0] == match_key(r.prompt) and known[1] == r.chosen:
                # one of ours (an export carries the recipe's system prompt)
                self.row_pairs.append((r.row_index, r.pair_id))  # type: ignore[arg-type]  # known: an id
                result.matched += 1
                continue
            pid = pair_id_of(r.prompt, r.required_chosen, r.rejected)
            pair = Pair(
                prompt=r.prompt,
                chosen=r.required_chosen,
                rejected=r.rejected,
                source=r.source or SOURCES[0],
                family=r.family,
                task_key=r.task_key,
                origins=[Origin("attached", f"{self.sha}:{r.line}", f"round attach {self.name}")],
            )
            new_pairs.append((r.row_index, pid, pair))
        if not new_pairs:
            return
        existing = _stored_ids(self.store, [pid for _, pid, _ in new_pairs]) - self.added_here
        # Rows whose pair is already stored count as matched; the rest become pairs with their own origin.
        keep = [(i, pid, pr) for i, pid, pr in new_pairs if pid not in existing]
        result.matched += len(new_pairs) - len(keep)
        self.row_pairs.extend((i, pid) for i, pid, _ in new_pairs if pid in existing)
        added = add_pairs(self.store, [pr for _, _, pr in keep], miner="round-attach", miner_version="1")
        stored = set(added.pair_ids)
        result.added += added.added
        dropped = Counter(added.dropped)
        dropped.pop("duplicate", None)
        self.dropped.update(dropped)
        self.added_here |= stored
        self.row_pairs.extend((i, pid) for i, pid, _ in keep if pid in stored)


def attach_round(store: Store, name: str, path: StrPath) -> AttachResult:
    """Register a mixture file made outside pairstore as round `name`'s training data (not gated). The
    file is read whole or refused (pairstore.ingest.pair_files), a batch at a time, in one transaction."""
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
    result = AttachResult(round=name, path=abs_path, sha256=sha, rows=0, export_id=eid)
    work = _Attaching(store, name, sha, result)
    with store.transaction():
        for batch in pair_batches(p, require_chosen=True):
            work.add(list(pair_rows_of(batch)))
        result.content_hash = rows_content_hash(work.digests)
        result.dropped = dict(work.dropped)
        work.row_pairs.sort()
        record_attached(
            store,
            name,
            path=abs_path,
            sha=sha,
            rows=result.rows,
            content_hash=result.content_hash,
            row_pairs=work.row_pairs,
            detail={"matched": result.matched, "added": result.added, "dropped": result.dropped},
        )
    return result
