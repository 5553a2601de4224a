"""The report's sections on held-out data: the holdout status (the leak audit of every registered
mixture, every leaked id linked to its row), the gate's self-check, decontamination against registered
benchmarks and the recomputed mixture hashes."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from audits.gate_audit import audit_gate, gate_audit_tables
from audits.leaks import LeakReport
from audits.report_facts import (
    LEAK_READS,
    LINEAGE_READS,
    MEMBER_READS,
    MIXTURE_READS,
    ReportFacts,
    section,
)
from audits.report_render import Section, Table


@section("holdout", "Holdout status", reads=(*LEAK_READS, "holdout_status", "holdout_exemptions"))
def holdout(facts: ReportFacts, s: Section) -> None:
    """Every holdout set audited against every registered mixture; each leaked item with its file and rows."""
    store, reports = facts.store, facts.leak_reports
    if not reports:
        s.paragraphs.append("No holdout set is defined in this store.")
        return
    rows = []
    for rep in reports:
        name = rep.name
        hit_files = [f for f in rep.files if f.leaked_ids or f.near_ids]
        removed, exempt = store.con.execute(
            "SELECT count(*) FILTER (status = 'removed'), coalesce(sum(exemptions), 0) FROM holdout_status "
            "WHERE set_name = ?",
            [name],
        ).fetchall()[0]
        rows.append(
            [
                name,
                rep.size,
                rep.clean,
                rep.leaked,
                removed,
                exempt,
                "; ".join(
                    f"{Path(f.path).name}: {len(f.leaked_ids)} exact, {len(f.near_ids)} near"
                    for f in hit_files
                )
                or "none",
            ]
        )
        s.paragraphs.append(holdout_sentence(rep))
    s.tables.append(
        (
            "Leak audit of every registered mixture (exact = origin id or match key; near = fuzzy)",
            Table(["set", "members", "clean", "leaked", "removed", "exemptions", "where"], rows),
        )
    )
    leaked = leaked_items(reports)
    if leaked:
        s.tables.append(
            (
                "Every held-out item found in a registered mixture, with the file, its round and the rows "
                "(0-based) that hold it",
                Table(
                    ["set", "held-out id", "file", "round", "rows", "pair ids", "found by"],
                    [
                        [
                            x["set"],
                            x["item_id"],
                            x["file"],
                            x["round"] or "-",
                            x["rows"],
                            x["pair_ids"],
                            x["how"],
                        ]
                        for x in leaked
                    ],
                    row_ids=[x["anchor"] for x in leaked],
                ),
            )
        )


def leak_anchor(set_name: str, item_id: str, path: str) -> str:
    return "leak-" + "-".join(
        "".join(c if c.isalnum() else "_" for c in v) for v in (set_name, item_id, Path(path).name)
    )


def leaked_items(reports: list[LeakReport]) -> list[dict]:
    """One row per (held-out item, file holding it), in set, id and file order."""
    out = []
    for rep in reports:
        for f in rep.files:
            by_item: dict[str, list] = defaultdict(list)
            for h in f.hits:
                by_item[h.item_id].append(h)
            for item_id in sorted(by_item):
                hits = sorted(by_item[item_id], key=lambda h: h.row_index)
                out.append(
                    {
                        "set": rep.name,
                        "item_id": item_id,
                        "file": Path(f.path).name,
                        "path": f.path,
                        "round": f.round,
                        "rows": ", ".join(str(h.row_index) for h in hits),
                        "pair_ids": ", ".join(sorted({h.pair_id for h in hits if h.pair_id})) or "-",
                        "how": ", ".join(sorted({h.how for h in hits})),
                        "anchor": leak_anchor(rep.name, item_id, f.path),
                    }
                )
    return sorted(out, key=lambda x: (x["set"], x["item_id"], x["file"]))


def holdout_sentence(rep: LeakReport) -> str:
    files = len(rep.files)
    hit = [f for f in rep.files if f.leaked_ids or f.near_ids]
    text = (
        f"Holdout set {rep.name} ({rep.size} members): an audit of every registered mixture file ({files}) "
        f"by origin id, match key and fuzzy match found {rep.clean} never used in training and "
        f"{rep.leaked} included"
    )
    if hit:
        text += (
            " ("
            + "; ".join(
                f"{len(set(f.leaked_ids) | set(f.near_ids))} in {Path(f.path).name}"
                + (f", round {f.round}" if f.round else "")
                for f in hit
            )
            + ")"
        )
        others = files - len(hit)
        text += f"; {others} other file(s) have zero hits." if others else "."
    else:
        text += "."
    return text


@section("gate-audit", "Holdout gate self-check", reads=(*MEMBER_READS, "benchmark_refs"))
def gate_audit(facts: ReportFacts, s: Section) -> None:
    """`pairstore audit gate` on the store's own members: recall per transformation, false refusals."""
    if not facts.store.scalar("SELECT count(*) FROM holdout WHERE removed_at IS NULL"):
        s.paragraphs.append("No active holdout member: nothing to measure.")
        return
    result = audit_gate(facts.store, limit=1000)
    cols, rows, mcols, mrows = gate_audit_tables(result)
    s.paragraphs.append(
        f"{result.members} active member(s), each disguised by every transformation (seed {result.seed}) and "
        "run through the export gate's matcher. Not caught by string matching: "
        + "; ".join(result.uncaught)
        + "."
    )
    s.tables.append(("Recall per transformation", Table(cols, rows)))
    s.tables.append(("Near neighbours refused (false refusals)", Table(mcols, mrows)))


@section(
    "decontamination",
    "Decontamination",
    reads=(*LINEAGE_READS, "export_rows", "pairs", "benchmark_refs", "benchmark_ngrams"),
)
def decontamination(facts: ReportFacts, s: Section) -> None:
    """Word n-gram overlap of the lineage's mixture rows with every registered benchmark's test items."""
    rows = facts.decontamination
    if rows is None:
        s.paragraphs.append(
            "No benchmark is registered (`pairstore audit decontam --register`), so no n-gram "
            "check against benchmark test items was possible."
        )
        return
    s.tables.append(
        (
            "Word n-gram overlap of the lineage's mixture rows with registered benchmark test items",
            Table(
                ["benchmark", "items", "n", "rows checked", "contaminated rows", "items matched", "rounds"],
                rows,
            ),
        )
    )
    clean = all(r[4] == 0 for r in rows)
    s.paragraphs.append(
        "No training row of this lineage shares an n-gram with a registered benchmark test item."
        if clean
        else "Some training rows share n-grams with benchmark test items (table)."
    )


@section("mixture-hashes", "Mixture hash check", reads=MIXTURE_READS)
def mixture_hashes(facts: ReportFacts, s: Section) -> None:
    """The SHA-256 of every registered mixture and recorded bundle file, recomputed now."""
    checks = facts.mixture_checks
    if not checks:
        s.paragraphs.append("No registered mixture or bundle evidence to check.")
        return
    bad = [c for c in checks if c.status != "ok"]
    s.paragraphs.append(
        f"{len(checks)} recorded file hash(es) recomputed: "
        + ("all match." if not bad else f"{len(bad)} changed or missing.")
    )
    s.tables.append(
        (
            "SHA-256 of every registered mixture and recorded bundle file, recomputed now",
            Table(
                ["status", "what", "owner", "file", "SHA-256 (recorded)"],
                [[c.status, c.what, c.owner, Path(c.path).name, (c.expected or "")[:16]] for c in checks],
            ),
        )
    )
