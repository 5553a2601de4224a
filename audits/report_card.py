"""The report's model card parts, markdown to paste: the training data (each round's mixture with its
rows per source and SHA-256, the holdout audit, decontamination, the hash check) and the evaluation
(the evaluation and loop tables, and a provenance note where something leaked)."""

from __future__ import annotations

from pathlib import Path

from audits.report_facts import ReportFacts
from audits.report_holdout import holdout_sentence
from audits.report_render import Section
from audits.report_training import rows_by_source


def training_data(facts: ReportFacts, sections: dict[str, Section]) -> str:
    """## Training data: what each round trained on, and what the audits found in it."""
    store, stages, leak_reports = facts.store, facts.stages, facts.leak_reports
    decon_rows, checks = facts.decontamination, facts.mixture_checks
    lines = ["## Training data", ""]
    for st in stages:
        if st["kind"] == "soup":
            continue
        for m in st["mixtures"]:
            parts = rows_by_source(store, [m["export_id"]])
            mix = ", ".join(f"{n:,} {src}" for src, n in parts.items()) or "composition not recorded"
            lines.append(
                f"- Round {st['name']} "
                f"({'attached from earlier work' if m['kind'] == 'attached' else 'exported'}): "
                f"`{Path(m['path']).name}`, {m['rows']:,} rows ({mix}); SHA-256 `{m['sha256']}`."
            )
    if len(lines) == 2:
        lines.append("- No registered training mixture in this lineage.")
    lines.append("")
    for rep in leak_reports:
        lines += [holdout_sentence(rep), ""]
    if decon_rows:
        total = sum(r[4] for r in decon_rows)
        names = ", ".join(f"{r[0]} ({r[1]} items, {r[2]}-grams)" for r in decon_rows)
        lines.append("")
        lines.append(
            f"Benchmark decontamination: word n-gram overlap against {names}: "
            + ("no training row matched." if total == 0 else f"{total} training row(s) matched.")
        )
    bad = [c for c in checks if c.status != "ok"]
    lines.append("")
    lines.append(
        f"SHA-256 of every training mixture is recorded; a recomputation of {len(checks)} recorded "
        "file hash(es) " + ("matched all of them." if not bad else f"found {len(bad)} changed or missing.")
    )
    return "\n".join(lines).replace("\n\n\n", "\n\n")


def evaluation(facts: ReportFacts, sections: dict[str, Section]) -> str:
    """## Evaluation: the evaluation and loop tables, and a provenance note where something leaked."""
    eval_s, loops_s, leak_reports = sections["evaluation"], sections["loops"], facts.leak_reports
    lines = ["## Evaluation", ""]
    for caption, t in eval_s.tables + loops_s.tables:
        lines += [f"{caption}:", "", t.markdown(), ""]
    lines += [p for p in eval_s.paragraphs]
    for rep in leak_reports:
        if rep.leaked:
            lines += [
                "",
                f"Provenance: {rep.leaked} of the {rep.size} members of {rep.name} were included in "
                f"training (see Training data); judge tallies are also given on the clean subset.",
            ]
    return "\n".join(lines).rstrip() + "\n"
