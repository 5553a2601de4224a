"""Leak audit: which holdout members a pair file holds, exactly or near.

    pairstore audit leaks --holdout judge34 s2_pairs_lf1.parquet other.jsonl.gz --json
    pairstore audit leaks --holdout judge34            # every registered mixture, attached history too

A file is any record file, made by this project or not (parquet, Arrow, JSON lines, a JSON array or
CSV, gzip or zstd compressed), read with no layout in mind: every string of every record, whatever its
column, however deep, goes through the export gate's matcher (pairstore.holdout.file_members, which
reads files through pairstore.holdout.file_texts, not through an ingest reader). So a field an ingest
reader would drop (earlier turns of a message list, tool-call arguments, a `system` or `response` column
beside the prompt) is read all the same. Exact = an origin id (an id column, an `origin_ids` list, or the
origins the store records for a `pair_id`), the match key of the prompt's user turns or a task key;
near = the member whole, as a sentence or embedded in any other string of the record, or a near copy.
Near counts as leaked.

A registered mixture whose file is gone, or superseded by a newer export at its path, is read from the
store (`export_rows` and `pairs`), the rows the gate read when it was exported.

The command prints a report and exits 0 even when it finds leaks: it is an audit of what happened. The
export gate is what refuses (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pairstore.errors import BadInput, NotFound
from pairstore.export.registry import registered_mixtures
from pairstore.holdout.matching import Hit, members_in_rows
from pairstore.keys import sha256_file
from pairstore.progress import current as current_progress

if TYPE_CHECKING:
    from pairstore.store.store import Store

EXACT_HOW = ("id", "match_key", "task_key")


@dataclass
class FileLeaks:
    path: str
    sha256: str | None  # None: the registered file is missing (rows read from export_rows)
    rows: int
    leaked_ids: list[str]  # members found exactly (origin id, match key, task key)
    near_ids: list[str]  # members found only embedded or by fuzzy match
    hits: list = field(default_factory=list)  # pairstore.holdout.matching.Hit, for the detailed view
    round: str | None = None
    note: str | None = None

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "rows": self.rows,
            "leaked_ids": self.leaked_ids,
            "near_ids": self.near_ids,
        }


@dataclass
class LeakReport:
    name: str
    size: int
    clean: int
    leaked: int
    files: list[FileLeaks]
    leaked_members: list[str]

    def as_dict(self) -> dict:
        """The `audit leaks --json` contract (docs/design.md, "File contracts")."""
        return {
            "holdout": {"name": self.name, "size": self.size, "clean": self.clean, "leaked": self.leaked},
            "files": [f.as_dict() for f in self.files],
        }


def _export_rows_sql(export_id: str) -> str:
    """The distinct pairs of a registered export as matching.ROW_SCHEMA rows (row_index: a pair number)."""
    quoted = export_id.replace("'", "''")
    return f"""
        SELECT (row_number() OVER (ORDER BY p.pair_id) - 1)::BIGINT AS row_index, p.pair_id,
               coalesce((SELECT list(DISTINCT o.origin_id ORDER BY o.origin_id) FROM pair_origins o
                         WHERE o.pair_id = p.pair_id), []::VARCHAR[]) AS origin_ids,
               p.match_key, p.task_key, p.prompt,
               list_filter([p.chosen, p.rejected], lambda a: a IS NOT NULL) AS answers
        FROM pairs p WHERE p.pair_id IN (SELECT pair_id FROM export_rows WHERE export_id = '{quoted}')"""


def _stored_export(store: Store, export_id: str, holdout: str) -> tuple[int, list[Hit]]:
    """(rows, hits per row) of a registered export read from the store: each distinct pair matched once."""
    rows = store.scalar("SELECT count(*) FROM export_rows WHERE export_id = ?", [export_id])
    store.con.execute(f"CREATE OR REPLACE TEMP VIEW _lk_pairs AS {_export_rows_sql(export_id)}")
    try:
        found = members_in_rows(store, "_lk_pairs", set_name=holdout).hits
        pair_of = (
            dict(store.con.execute("SELECT row_index, pair_id FROM _lk_pairs").fetchall()) if found else {}
        )
    finally:
        store.con.execute("DROP VIEW IF EXISTS _lk_pairs")
    by_pair: dict[str, list[Hit]] = {}
    for h in found:
        by_pair.setdefault(pair_of[h.row_index], []).append(h)
    hits = []
    if by_pair:
        for row_index, pair_id in store.con.execute(
            "SELECT row_index, pair_id FROM export_rows WHERE export_id = ? "
            "AND pair_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY row_index",
            [export_id, sorted(by_pair)],
        ).fetchall():
            hits += [
                Hit(h.set_name, h.item_id, int(row_index), pair_id, h.how, h.score) for h in by_pair[pair_id]
            ]
    return rows, hits


def _file_leaks(path: str, sha: str | None, rows: int, hits: list, **extra: str | None) -> FileLeaks:
    exact = sorted({h.item_id for h in hits if h.how in EXACT_HOW})
    near = sorted({h.item_id for h in hits if h.how not in EXACT_HOW} - set(exact))
    return FileLeaks(path, sha, rows, exact, near, hits, **extra)


def _read_file(store: Store, holdout: str, path: str, **extra: str | None) -> FileLeaks:
    # imported here: the file matcher compiles with numba (pairstore.compiled), an import of a fifth of a
    # second that every other command would pay
    from pairstore.holdout.file_members import members_in_file

    found = members_in_file(store, path, set_name=holdout)
    return _file_leaks(path, sha256_file(path), found.rows, found.hits, **extra)


def audit_leaks(store: Store, holdout: str, paths: list[str] | None = None) -> LeakReport:
    """Which members of holdout set `holdout` each file holds; no paths = every registered mixture."""
    if not store.scalar("SELECT count(*) FROM holdout_sets WHERE set_name = ?", [holdout]):
        raise NotFound(f"no holdout set {holdout!r}")
    size = store.scalar("SELECT count(*) FROM holdout WHERE set_name = ? AND removed_at IS NULL", [holdout])
    files: list[FileLeaks] = []
    if paths:
        for p in current_progress().track(paths, f"audit leaks {holdout}: files", unit="files"):
            if not Path(p).exists():
                raise BadInput("no such file", path=str(p))
            files.append(_read_file(store, holdout, str(p)))
    else:
        mixtures = registered_mixtures(store)
        for ex in current_progress().track(mixtures, f"audit leaks {holdout}: mixtures", unit="files"):
            p = ex["path"]
            if ex["superseded_by"] is None and Path(p).exists():
                files.append(_read_file(store, holdout, p, round=ex["round"]))
                continue
            note = (
                f"superseded by {ex['superseded_by']}: rows read from export_rows"
                if ex["superseded_by"] is not None  # its path now holds the newer export's bytes
                else "file missing: rows read from export_rows"
            )
            rows, hits = _stored_export(store, ex["export_id"], holdout)
            files.append(_file_leaks(p, None, rows, hits, round=ex["round"], note=note))
    leaked = sorted(set().union(*[set(f.leaked_ids) | set(f.near_ids) for f in files]) if files else set())
    return LeakReport(holdout, size, size - len(leaked), len(leaked), files, leaked)
