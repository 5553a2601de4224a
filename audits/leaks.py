"""Leak audit: which holdout members a pair file holds, exactly or near.

    pairstore audit leaks --holdout judge34 s2_pairs_lf1.parquet other.jsonl --json
    pairstore audit leaks --holdout judge34            # every registered mixture, attached history too

A file is any pair file pairstore.ingest.pair_files reads, made by this project or
not: the prompt as a string or as chat messages (a system prompt in front or
not), or only inside `chosen` as messages (UltraFeedback style). Each row is checked
with the export gate's matcher (pairstore.holdout.matching), so the audit and the gate find
the same members in the same rows: exact = an origin id (a `battle_id`/`origin_id`/...
column, or the origins the store records for a `pair_id`), the match key of the
user turns or a task key; near = the member embedded in a longer prompt or in a
system or assistant turn, or a fuzzy match. Near counts as leaked.

The command prints a report and exits 0 even when it finds leaks: it is an
audit of what happened. The export gate is what refuses (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pairstore.errors import BadInput, NotFound
from pairstore.export.registry import registered_mixtures, rows_of_export
from pairstore.holdout.matching import candidate_table, find_holdout_hits
from pairstore.ingest.pair_files import PairRow, add_store_origins, read_pair_file
from pairstore.keys import sha256_file
from pairstore.progress import current as current_progress

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


def _scan_rows(store, holdout: str, rows: list[PairRow]) -> list:
    if not rows:
        return []
    cands = candidate_table(
        (r.row_index, r.pair_id, r.origin_ids, r.prompt, r.task_key, (r.chosen, r.rejected)) for r in rows
    )
    return find_holdout_hits(store, cands, set_name=holdout)


def _read_with_origins(store, path) -> list[PairRow]:
    rows = read_pair_file(path)
    add_store_origins(store, rows)
    return rows


def _file_leaks(path: str, sha: str | None, rows: list[PairRow], hits: list, **extra) -> FileLeaks:
    exact = sorted({h.item_id for h in hits if h.how in EXACT_HOW})
    near = sorted({h.item_id for h in hits if h.how not in EXACT_HOW} - set(exact))
    return FileLeaks(path, sha, len(rows), exact, near, hits, **extra)


def audit_leaks(store, holdout: str, paths: list[str] | None = None) -> LeakReport:
    """Which members of holdout set `holdout` each file holds; no paths = every registered mixture."""
    if not store.scalar("SELECT count(*) FROM holdout_sets WHERE set_name = ?", [holdout]):
        raise NotFound(f"no holdout set {holdout!r}")
    size = store.scalar("SELECT count(*) FROM holdout WHERE set_name = ? AND removed_at IS NULL", [holdout])
    files: list[FileLeaks] = []
    if paths:
        for p in current_progress().track(paths, f"audit leaks {holdout}: files", unit="files"):
            if not Path(p).exists():
                raise BadInput("no such file", path=str(p))
            rows = _read_with_origins(store, p)
            files.append(_file_leaks(str(p), sha256_file(p), rows, _scan_rows(store, holdout, rows)))
    else:
        mixtures = registered_mixtures(store)
        for ex in current_progress().track(mixtures, f"audit leaks {holdout}: mixtures", unit="files"):
            p = ex["path"]
            if ex["superseded_by"] is not None:  # its path now holds the newer export's bytes
                rows = rows_of_export(store, ex["export_id"])
                files.append(
                    _file_leaks(
                        p,
                        None,
                        rows,
                        _scan_rows(store, holdout, rows),
                        round=ex["round"],
                        note=f"superseded by {ex['superseded_by']}: rows read from export_rows",
                    )
                )
            elif Path(p).exists():
                rows = _read_with_origins(store, p)
                files.append(
                    _file_leaks(p, sha256_file(p), rows, _scan_rows(store, holdout, rows), round=ex["round"])
                )
            else:
                rows = rows_of_export(store, ex["export_id"])
                files.append(
                    _file_leaks(
                        p,
                        None,
                        rows,
                        _scan_rows(store, holdout, rows),
                        round=ex["round"],
                        note="file missing: rows read from export_rows",
                    )
                )
    leaked = sorted(set().union(*[set(f.leaked_ids) | set(f.near_ids) for f in files]) if files else set())
    return LeakReport(holdout, size, size - len(leaked), len(leaked), files, leaked)
