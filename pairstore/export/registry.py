"""The registry of mixture files: `exports` (one row per file, exported here or attached from elsewhere)
and `export_rows` (which pair sits at which row). This module decides what they hold;
pairstore.tables.exports writes both tables.

    registered_mixtures(store)                # every registered file, oldest first
    rows_of_export(store, export_id)          # its rows as the store records them

An export registers its parquet files with the evidence and the evidence file's SHA-256, and the pair
of every written row in file order; an attached file registers its rows' pairs likewise, so leak,
length and mixture audits see history and new exports the same way. A registration whose file another
export replaced (`export --replace`) is kept, marked superseded (`superseded_at`, `superseded_by`):
audits skip its file, which now holds the new bytes, and read its rows from `export_rows`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pairstore.ingest.pair_files import PairRow
from pairstore.keys import xxh128
from pairstore.tables import exports as exports_table
from pairstore.tables.audit_log import log_action

if TYPE_CHECKING:
    from pairstore.export.plan import MixturePlan
    from pairstore.store.store import Store


def export_id(kind: str, round_name: str, path: str, sha: str) -> str:
    """The registry id of a file: an export is keyed by its path and bytes, an attached file by its bytes."""
    return xxh128(f"{kind}\0{round_name}\0{path}\0{sha}")[:20]


def active_at(store: Store, paths: list[str]) -> list[dict]:
    """Registrations not superseded whose file or evidence file is one of `paths`."""
    return store.rows(
        """
        SELECT export_id, round, kind, path, sha256, evidence_path, evidence_sha256 FROM exports
        WHERE superseded_at IS NULL AND (path IN (SELECT unnest(?::VARCHAR[]))
                                         OR evidence_path IN (SELECT unnest(?::VARCHAR[])))
        ORDER BY created_at, export_id""",
        [paths, paths],
    )


@dataclass(frozen=True)
class ExportedFile:
    """One parquet file an export wrote: its final path, bytes, rows and the
    writer-independent content hash."""

    path: str
    sha256: str
    rows: int
    content_hash: str


def record_export(
    store: Store,
    round_name: str,
    files: dict[str, ExportedFile],
    evidence: dict,
    *,
    evidence_path: str,
    evidence_sha256: str,
    exempted: list[dict],
    mixture: MixturePlan,
    supersede: Sequence[str] = (),
) -> list[str]:
    """Register an export's files (kind -> {"path", "sha256", "rows", "content_hash"}) and their rows, read
    from the planned mixture in the file's order (block, store order, copies adjacent), marking the
    registrations in `supersede` superseded. Returns the export ids; a file registered before with the
    same path and bytes is left as it is (registered again if it had been superseded)."""
    ids = []
    with store.transaction():
        for kind, info in files.items():
            eid = export_id("export", round_name, info.path, info.sha256)
            ids.append(eid)
            row = store.one("SELECT evidence_sha256, superseded_at FROM exports WHERE export_id = ?", [eid])
            evidence_json = json.dumps(evidence, sort_keys=True, ensure_ascii=False)
            if row is not None:
                # The same bytes at the same path. With new evidence (an exemption added, say; only under
                # --replace) or superseded before, it is registered again, as the newest.
                if row[0] != evidence_sha256 or row[1] is not None:
                    exports_table.renew_export(
                        store,
                        eid,
                        evidence_json,
                        evidence_path=evidence_path,
                        evidence_sha256=evidence_sha256,
                    )
                continue
            exports_table.add_export(
                store,
                eid,
                round_name,
                "export",
                info.path,
                info.sha256,
                info.rows,
                info.content_hash,
                evidence_json,
                evidence_path=evidence_path,
                evidence_sha256=evidence_sha256,
            )
            exports_table.add_planned_rows(store, eid, mixture.table, kind)
        old = [e for e in supersede if e not in ids]
        if old:
            exports_table.supersede(store, old, by=ids[0])
        log_action(
            store,
            "export",
            round_name,
            {
                "files": files,
                "exempted": exempted,
                "evidence": evidence_path,
                "evidence_sha256": evidence_sha256,
                "superseded": old,
            },
        )
    return ids


def attached_id(round_name: str, sha: str) -> str:
    """One file (by its bytes) attaches to a round once, wherever it lies."""
    return export_id("attached", round_name, "", sha)


def record_attached(
    store: Store,
    round_name: str,
    *,
    path: str,
    sha: str,
    rows: int,
    content_hash: str,
    detail: dict,
) -> str:
    """Register an attached file (the caller writes the pair of each of its rows into `export_rows` as
    it reads them: pairstore.tables.exports.add_rows); inside the caller's transaction when there is
    one. Returns the export id."""
    eid = attached_id(round_name, sha)
    with store.transaction():
        exports_table.add_export(
            store,
            eid,
            round_name,
            "attached",
            path,
            sha,
            rows,
            content_hash,
            json.dumps(detail, sort_keys=True),
        )
        log_action(store, "round.attach", round_name, {"path": path, "sha256": sha, "rows": rows, **detail})
    return eid


def registered_mixtures(store: Store) -> list[dict]:
    """Every registered mixture (exports, attached history, superseded ones included), oldest first."""
    return store.rows(
        "SELECT export_id, round, kind, path, sha256, rows, evidence_path, evidence_sha256, "
        "superseded_at, superseded_by FROM exports ORDER BY created_at, export_id"
    )


def rows_of_export(store: Store, export_id: str) -> list[PairRow]:
    """The rows of a registered file as the store records them (for when the file itself is gone)."""
    found = store.con.execute(
        """
        SELECT r.row_index, p.pair_id, p.prompt, p.chosen, p.rejected, p.source, p.family, p.task_key,
               (SELECT list(DISTINCT o.origin_id ORDER BY o.origin_id) FROM pair_origins o
                 WHERE o.pair_id = p.pair_id) AS origins
        FROM export_rows r JOIN pairs p USING (pair_id)
        WHERE r.export_id = ? ORDER BY r.row_index""",
        [export_id],
    ).fetchall()
    return [
        PairRow(
            row_index=int(i),
            line=int(i) + 1,
            prompt=[dict(m) for m in prompt],
            chosen=c,
            rejected=rj,
            pair_id=pid,
            origin_ids=list(o or []),
            source=src,
            family=fam,
            task_key=tk,
        )
        for i, pid, prompt, c, rj, src, fam, tk, o in found
    ]
