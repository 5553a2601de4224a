"""The provenance report put beside a checkpoint: report.html (static, offline) and report.md.

    pairstore audit report --model sm11a --out reports/sm11a

The report is the sections of SECTIONS, in that order, then the model card's parts (CARD). Each
section is declared once, in the module of its kind, with its key, title and the store tables it
reads (audits.report_facts.section); build_report runs them in order and the markdown and HTML are
assembled from the list (audits.report_render). The sections are:

- report_verdict: the verdict, the model against its incumbent on every suite (difference, paired
  counts, exact McNemar p, Wilson intervals), the blind-judge tally with its clean subset, loop
  rates, and every leaked held-out id with the file it is in;
- report_training: the lineage (a picture; what ran at each stage, from its training evidence, or
  "planned (recipe)"), mixture composition per round (a chart), token lengths and truncation;
- report_holdout: holdout status (leak audit of every registered mixture), the gate's self-check,
  decontamination (n-gram overlap with every registered benchmark) and the mixture hash check;
- report_evaluation: the loop table, the verifier's stored verdicts, the evaluation table with
  blind-judge tallies, the dose curve over soups of the same two parents, ratings from votes.

Evaluation covers the models of the chain reported (all_models=True for every model in the store).
Pictures are PNGs made with matplotlib (Agg backend): embedded as base64 in the HTML, written beside
report.md. The markdown's "Training data" and "Evaluation" parts (report_card) are written to be
pasted into a model card. The store is only read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from audits import report_card, report_evaluation, report_holdout, report_training, report_verdict
from audits.report_facts import ReportFacts, SectionSpec
from audits.report_render import Report, Section, render_html, render_markdown
from pairstore.errors import NotFound
from pairstore.files import (
    atomic_write_bytes,
    folder_is_free,
    publish_folder,
    recover_folder,
    staged_folder,
    writes_into,
)
from pairstore.progress import current as current_progress
from pairstore.store.store import Store

# The report's sections, in the order it shows them and builds them.
SECTIONS: tuple[SectionSpec, ...] = (
    report_verdict.summary,
    report_training.lineage,
    report_training.composition,
    report_holdout.holdout,
    report_holdout.gate_audit,
    report_holdout.decontamination,
    report_holdout.mixture_hashes,
    report_training.lengths,
    report_evaluation.loops,
    report_evaluation.verdicts,
    report_evaluation.evaluation,
    report_evaluation.dose_curve,
    report_evaluation.ratings,
)
# The model card's parts, in order: markdown from the facts and the sections built.
CARD: tuple[Callable[[ReportFacts, dict[str, Section]], str], ...] = (
    report_card.training_data,
    report_card.evaluation,
)


def build_report(
    store: Store,
    model: str,
    *,
    tokenizer: str | None = None,
    incumbent: str | None = None,
    all_models: bool = False,
) -> Report:
    """Every section's data, tables and pictures for `model` (a registered round or checkpoint).

    `incumbent`: what the verdict compares the model with (default: its nearest evaluated ancestor).
    `all_models`: Evaluation, loop table and dose curve cover every model in the store, not only the
    chain's. An unknown model or an incumbent without evaluations raises NotFound before any section."""
    facts = ReportFacts(store, model, tokenizer=tokenizer, incumbent=incumbent, all_models=all_models)
    facts.check()
    sections = []
    with current_progress().stage(
        f"audit report {model}: sections", total=len(SECTIONS), unit="sections"
    ) as stage:
        for spec in SECTIONS:
            sections.append(spec.build(facts))
            stage.advance()
    built = {s.key: s for s in sections}
    return Report(model, sections, [part(facts, built) for part in CARD])


def build_section(
    store: Store,
    key: str,
    model: str = "",
    *,
    tokenizer: str | None = None,
    incumbent: str | None = None,
    all_models: bool = False,
) -> Section:
    """The section `key` alone, its options as build_report takes them (a section that does not read the
    lineage needs no model)."""
    by_key = {spec.key: spec for spec in SECTIONS}
    if key not in by_key:
        raise NotFound(f"no report section {key!r} (sections: {', '.join(by_key)})")
    facts = ReportFacts(store, model, tokenizer=tokenizer, incumbent=incumbent, all_models=all_models)
    return by_key[key].build(facts)


def _only_a_report(out: Path) -> bool:
    """`out` is free, or holds nothing but an earlier report's files."""
    if folder_is_free(out):
        return True
    return out.is_dir() and all(
        p.is_file() and (p.name in ("report.md", "report.html") or p.suffix == ".png") for p in out.iterdir()
    )


def write_report(
    store: Store,
    model: str,
    out_dir: str | Path,
    *,
    tokenizer: str | None = None,
    incumbent: str | None = None,
    all_models: bool = False,
) -> dict:
    """Write report.html, report.md and the PNGs into out_dir;
    returns {"html", "md", "images", "sections"}."""
    rep = build_report(store, model, tokenizer=tokenizer, incumbent=incumbent, all_models=all_models)
    out = Path(out_dir)
    recover_folder(out)
    files = {name: png for s in rep.sections for name, png in s.images}
    files["report.md"] = render_markdown(rep).encode("utf-8")
    files["report.html"] = render_html(rep).encode("utf-8")
    images = [str(out / name) for s in rep.sections for name, _ in s.images]
    with writes_into(out):
        if _only_a_report(out):
            # The whole folder at once: a reader sees the old report or the new one, never half.
            with staged_folder(out) as stage:
                for name, data in files.items():
                    (stage / name).write_bytes(data)
                publish_folder(stage, out, replace=True)
        else:  # a folder with other files in it: each file replaced atomically, the rest left alone
            for name, data in files.items():
                atomic_write_bytes(out / name, data)
    return {
        "html": str(out / "report.html"),
        "md": str(out / "report.md"),
        "images": images,
        "sections": [s.key for s in rep.sections],
        "summary": {s.key: len(s.tables) + len(s.images) for s in rep.sections},
    }
