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

import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.export.registry import attached_id, record_attached
from pairstore.export.writer import row_digest, rows_content_hash
from pairstore.files import StrPath
from pairstore.ingest.batches import Batch
from pairstore.ingest.pair_files import PairRow, iter_pair_rows, pair_batches, pair_rows_of
from pairstore.keys import match_key, sha256_file
from pairstore.rounds.recipes import get_round
from pairstore.store.store import bounded_memory
from pairstore.tables.exports import add_rows
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


def _stored_before(store: Store, ids: list[str]) -> set[str]:
    """The ids among `ids` of pairs the store held before this attach (not those it added: _ADDED_HERE)."""
    with store.registered("_att_new", pa.table({"pair_id": pa.array(sorted(set(ids)), pa.string())})):
        sql = (
            f"SELECT pair_id FROM pairs JOIN _att_new USING (pair_id) ANTI JOIN {_ADDED_HERE} USING (pair_id)"
        )
        return {r[0] for r in store.con.execute(sql).fetchall()}


# The pairs an attach stored (a repeat of one in a later row is neither matched nor new): a TEMP table of
# the connection, which DuckDB spills, so nothing of the attach grows with the file in memory.
_ADDED_HERE = "_attach_added_here"


class _Attaching:
    """One attach, a batch of the file's rows at a time: which rows are stored pairs, which become new
    ones. Each batch's (row, pair) links go into `export_rows` as it is read, its digests to the content
    hash (`digests`), so memory does not grow with the file."""

    def __init__(self, store: Store, name: str, sha: str, export_id: str, result: AttachResult):
        self.store, self.name, self.sha, self.export_id, self.result = store, name, sha, export_id, result
        self.dropped: Counter[str] = Counter()

    def digests(self, batches: Iterable[Batch]) -> Iterator[str]:
        """Each batch attached (add), then each of its rows' digest yielded in file order: what
        rows_content_hash reads as the batches go by."""
        for batch in batches:
            rows = list(pair_rows_of(batch))
            self.add(rows)
            yield from (row_digest(r.prompt, r.required_chosen, r.rejected) for r in rows)

    def add(self, rows: list[PairRow]) -> None:
        result = self.result
        known_by_file_id = _known_by_file_id(self.store, rows)
        new_pairs: list[tuple[int, str, Pair]] = []
        row_pairs: list[tuple[int, str]] = []  # (row index, pair id)
        for r in rows:
            result.rows += 1
            known = known_by_file_id.get(r.pair_id) if r.pair_id else None
            if known is not None and known[0] == match_key(r.prompt) and known[1] == r.chosen:
                # one of ours (an export carries the recipe's system prompt)
                row_pairs.append((r.row_index, r.pair_id))  # type: ignore[arg-type]  # known: an id
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
        if new_pairs:
            existing = _stored_before(self.store, [pid for _, pid, _ in new_pairs])
            # Rows whose pair is already stored count as matched; the rest become pairs with their own origin.
            keep = [(i, pid, pr) for i, pid, pr in new_pairs if pid not in existing]
            result.matched += len(new_pairs) - len(keep)
            row_pairs.extend((i, pid) for i, pid, _ in new_pairs if pid in existing)
            added = add_pairs(self.store, [pr for _, _, pr in keep], miner="round-attach", miner_version="1")
            stored = set(added.pair_ids)
            result.added += added.added
            dropped = Counter(added.dropped)
            dropped.pop("duplicate", None)
            self.dropped.update(dropped)
            added_here = pa.table({"pair_id": pa.array(sorted(stored), pa.string())})
            with self.store.registered("_att_added", added_here):
                self.store.con.execute(f"INSERT INTO {_ADDED_HERE} SELECT pair_id FROM _att_added")
            row_pairs.extend((i, pid) for i, pid, _ in keep if pid in stored)
        add_rows(self.store, self.export_id, sorted(row_pairs))


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
    work = _Attaching(store, name, sha, eid, result)
    with bounded_memory(store.con), store.transaction():  # what it writes spills, as an ingest's does
        store.con.execute(f"CREATE OR REPLACE TEMP TABLE {_ADDED_HERE} (pair_id VARCHAR)")
        try:
            result.content_hash = rows_content_hash(work.digests(pair_batches(p, require_chosen=True)))
        finally:
            with contextlib.suppress(duckdb.Error):  # an aborted transaction: its owner rolls it back
                store.con.execute(f"DROP TABLE IF EXISTS {_ADDED_HERE}")
        result.dropped = dict(work.dropped)
        record_attached(
            store,
            name,
            path=abs_path,
            sha=sha,
            rows=result.rows,
            content_hash=result.content_hash,
            detail={"matched": result.matched, "added": result.added, "dropped": result.dropped},
        )
    return result
