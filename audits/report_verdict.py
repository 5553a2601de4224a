"""The report's first section, the verdict: is the model better than its incumbent on every suite (paired
counts, exact McNemar p, Wilson intervals), the blind judge's tally with its clean subset, loop rates,
and whether any held-out item leaked into training, each leaked id linked to its row."""

from __future__ import annotations

from typing import Any

from audits.compare import compare, paired_flips, wilson_interval
from audits.leaks import LeakReport
from audits.report_evaluation import eval_matrix
from audits.report_facts import COMPARE_READS, LINEAGE_READS, ReportFacts, section
from audits.report_holdout import leaked_items
from audits.report_render import Link, Section, Table
from pairstore.store.store import Store


def _share_text(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.4f} ({lo:.2f}-{hi:.2f})"


@section("summary", "Verdict", reads=(*LINEAGE_READS, *COMPARE_READS))
def summary(facts: ReportFacts, s: Section) -> None:
    """The verdict: is the candidate better than the incumbent, how sure, and did anything leak."""
    model, incumbent = facts.model, facts.incumbent
    if incumbent is None:
        s.paragraphs.append(f"No evaluated ancestor of {model} to compare it with.")
    else:
        _paired_verdict(facts.store, model, incumbent, s)
        _judge_tally(facts.store, model, incumbent, s)
        _loop_rates(facts.store, model, incumbent, s)
    _leak_answer(facts.leak_reports, s)


def _paired_verdict(store: Store, model: str, incumbent: str, s: Section) -> None:
    """Per suite both answered: the difference on the items both answered, its exact McNemar p and the
    accuracy of each with its Wilson interval."""
    verdict: list[dict[str, Any]] = []
    suites, matrix = eval_matrix(store, [model, incumbent])
    rows = []
    for suite in suites:
        if suite not in matrix.get(model, {}) or suite not in matrix.get(incumbent, {}):
            continue
        f = paired_flips(store, model, incumbent, suite)
        if not f.items:
            continue
        diff = (f.a_only - f.b_only) / f.items
        cand, inc = f.both + f.a_only, f.both + f.b_only
        significant = f.mcnemar_p < 0.05
        better = ("better" if diff > 0 else "worse") if significant and diff else "no significant difference"
        sure = "exact McNemar p < 0.05" if significant else "exact McNemar p >= 0.05"
        verdict.append(
            {
                "suite": suite,
                "difference": diff,
                "p": f.mcnemar_p,
                "better": better,
                "items": f.items,
                "counts": (cand, inc),
            }
        )
        rows.append(
            [
                suite,
                f.items,
                _share_text(cand, f.items),
                _share_text(inc, f.items),
                f"{diff:+.4f}",
                f"{f.both} / {f.a_only} / {f.b_only} / {f.neither}",
                f"{f.mcnemar_p:.3g}",
                f"{better}, {sure}",
            ]
        )
    if rows:
        s.paragraphs.append(
            f"Is {model} better than the incumbent {incumbent}? "
            + "; ".join(
                f"{v['suite']}: {v['better']}, {v['difference'] * 100:+.1f} points "
                f"({v['counts'][0]} vs {v['counts'][1]} of {v['items']} paired items right, "
                f"exact McNemar p = {v['p']:.3g})"
                for v in verdict
            )
            + "."
        )
        s.tables.append(
            (
                f"{model} (candidate) vs {incumbent} (incumbent) on the items both answered: accuracy "
                "with its 95% Wilson interval, the paired counts and the exact McNemar test",
                Table(
                    [
                        "suite",
                        "items",
                        f"{model}",
                        f"{incumbent}",
                        "difference",
                        f"both / only {model} / only {incumbent} / neither",
                        "McNemar p",
                        "verdict",
                    ],
                    rows,
                ),
            )
        )
    else:
        s.paragraphs.append(f"{model} and {incumbent} share no evaluated item.")


def _judge_tally(store: Store, model: str, incumbent: str, s: Section) -> None:
    """The blind judge's wins, losses and ties of the model against the incumbent, all and clean."""
    c = compare(store, model, incumbent)
    if c.judge_all.battles:
        a, cl = c.judge_all, c.judge_clean
        s.tables.append(
            (
                f"Blind judge, {model} vs {incumbent} (wins-losses-ties of {model}, each battle once; "
                "clean = battles neither lineage trained on)",
                Table(
                    ["battles", "all", "sign p", "clean battles", "clean", "sign p (clean)"],
                    [
                        [
                            a.battles,
                            f"{a.a_wins}-{a.b_wins}-{a.ties}",
                            f"{a.sign_p:.3g}",
                            cl.battles,
                            f"{cl.a_wins}-{cl.b_wins}-{cl.ties}",
                            f"{cl.sign_p:.3g}",
                        ]
                    ],
                ),
            )
        )


def _loop_rates(store: Store, model: str, incumbent: str, s: Section) -> None:
    """Loop-flagged and empty answers of both on every evaluated suite."""
    loops = store.rows(
        "SELECT model, suite, count(*) AS n, count(*) FILTER (loop_flagged) AS flagged, "
        "count(*) FILTER (empty) AS empty FROM evals WHERE model IN (?, ?) "
        "GROUP BY model, suite ORDER BY suite, "
        "model = ? DESC",
        [model, incumbent, model],
    )
    if loops:
        s.tables.append(
            (
                "Loop rates on the evaluated suites (flagged by the repetition scanner; empty answers)",
                Table(
                    ["suite", "model", "items", "loop-flagged", "empty"],
                    [
                        [
                            r["suite"],
                            r["model"],
                            r["n"],
                            f"{r['flagged']} ({r['flagged'] / r['n']:.1%})",
                            f"{r['empty']} ({r['empty'] / r['n']:.1%})",
                        ]
                        for r in loops
                    ],
                ),
            )
        )


def _leak_answer(leak_reports: list[LeakReport], s: Section) -> None:
    """Did anything leak: unknown without a holdout set, no, or yes with every leaked id linked to its row."""
    leaked = leaked_items(leak_reports)
    if not leak_reports:
        s.paragraphs.append("Did anything leak? Unknown: no holdout set is defined, so nothing was checked.")
    elif not leaked:
        s.paragraphs.append(
            "Did anything leak? No: no member of "
            + ", ".join(f"{r.name} ({r.size})" for r in leak_reports)
            + " is in any registered mixture."
        )
    else:
        for rep in leak_reports:
            mine = [x for x in leaked if x["set"] == rep.name]
            if not mine:
                continue
            files = sorted({(x["file"], x["round"] or "-") for x in mine})
            parts: list = [
                f"Did anything leak? Yes: {rep.leaked} of the {rep.size} members of held-out set {rep.name} "
                "are in training mixtures."
            ]
            for file, rnd in files:
                parts.append(f" In {file} (round {rnd}): ")
                held = [x for x in mine if (x["file"], x["round"] or "-") == (file, rnd)]
                for i, x in enumerate(held):
                    parts += ([", "] if i else []) + [Link(x["item_id"], f"#{x['anchor']}")]
                parts.append(".")
            parts.append(" Each id links to its row (file, rows, pair ids) in Holdout status.")
            s.paragraphs.append(parts)
