"""The report's sections on what the models answered: the loop table, the verifier's stored verdicts,
the evaluation table with blind-judge tallies, the dose curve over soups of the same two parents and
the ratings from votes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, is_dataclass
from typing import Any

from audits.compare import compare, paired_flips, wilson_interval
from audits.loop_table import loop_table
from audits.report_facts import COMPARE_READS, LINEAGE_READS, ReportFacts, section
from audits.report_render import Section, Table, figure_png, number
from audits.verifier_audit import stored_verdicts
from pairstore.store.store import Store

# A model's evaluations per suite: model -> suite -> (right, items, loop-flagged, empty).
EvalMatrix = dict[str, dict[str, tuple[int, int, int, int]]]


def _normalize_loop_table(result: Any) -> Table:
    """loop_table's result (list of dicts / dataclasses, or (columns, rows)) as a Table."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], (list, tuple)):
        return Table(list(result[0]), [list(r) for r in result[1]])
    rows = [asdict(r) if is_dataclass(r) and not isinstance(r, type) else dict(r) for r in result]
    cols = list(rows[0]) if rows else ["model", "suite"]
    return Table(cols, [[r.get(c) for c in cols] for r in rows])


@section("loops", "Loop table", reads=(*LINEAGE_READS, "generations", "evals"))
def loops(facts: ReportFacts, s: Section) -> None:
    """The repetition scanner's flags per model and suite (the chain's models unless all_models)."""
    models = None if facts.models is None else set(facts.models)
    result = [r for r in loop_table(facts.store) if models is None or r["model"] in models]
    for r in result:
        if r.get("suite") is None:
            r["suite"] = "(no suite: samples)"
    table = _normalize_loop_table(result)
    if not table.rows:
        s.paragraphs.append("No scanned outputs in the store (generations or evals with loop flags).")
        return
    s.paragraphs.append(
        "Repetition scanner (audits.loops) per model and suite: flagged outputs (repeated "
        "n-gram, cycle or tail loop), catastrophic loops (100x+ repetition), empty responses."
    )
    s.tables.append(("Loops per model and suite", table))


@section("verdicts", "Verifier verdicts", reads=(*LINEAGE_READS, "generations", "problems", "tasks"))
def verdicts(facts: ReportFacts, s: Section) -> None:
    """The answer verifier's stored verdicts on the lineage's models' generations, per model and dataset."""
    columns, rows = stored_verdicts(facts.store, facts.rounds)
    if not rows:
        s.paragraphs.append("No verified generations of the lineage's models in the store.")
        return
    s.paragraphs.append(
        "The answer verifier's stored verdicts on the lineage's models' generations: only correct and "
        "wrong become training pairs; unknowns are dropped by reason (`pairstore audit verifier` runs "
        "it afresh against math-verify)."
    )
    s.tables.append(("Verdicts per model and dataset", Table(columns, rows)))


def eval_matrix(store: Store, models: list[str] | None = None) -> tuple[list[str], EvalMatrix]:
    """Every suite evaluated, and the evaluations of `models` (None: every model) per suite."""
    rows = store.rows("""
        SELECT model, suite, count(*) AS n, count(*) FILTER (coalesce(correct, score >= 0.5)) AS k,
               count(*) FILTER (loop_flagged) AS flagged, count(*) FILTER (empty) AS empty
        FROM evals GROUP BY ALL ORDER BY model, suite""")
    suites = sorted({r["suite"] for r in rows})
    out: EvalMatrix = defaultdict(dict)
    for r in rows:
        if models is None or r["model"] in models:
            out[r["model"]][r["suite"]] = (r["k"], r["n"], r["flagged"], r["empty"])
    return suites, out


def _paired_rows(store: Store, model: str, suites: list[str], matrix: EvalMatrix) -> list[list]:
    rows = []
    for suite in suites:
        if suite not in matrix.get(model, {}):
            continue
        for other in sorted(m for m in matrix if m != model and suite in matrix[m]):
            f = paired_flips(store, model, other, suite)
            if (
                f.a_only + f.b_only
            ):  # items neither or both got right everywhere say nothing about a difference
                rows.append(
                    [
                        f"{model} vs {other}",
                        suite,
                        f.items,
                        f.both,
                        f.a_only,
                        f.b_only,
                        f.neither,
                        f"{(f.a_only - f.b_only) / f.items:+.4f}",
                        f"{f.mcnemar_p:.3g}",
                    ]
                )
    return rows


def _judge_rows(store: Store, model: str) -> list[list]:
    others = [
        r[0]
        for r in store.con.execute(
            """
        SELECT DISTINCT CASE WHEN model_a = ? THEN model_b ELSE model_a END FROM judgments
        WHERE model_a = ? OR model_b = ? ORDER BY 1""",
            [model, model, model],
        ).fetchall()
    ]
    rows = []
    for other in others:
        c = compare(store, model, other)
        a, cl = c.judge_all, c.judge_clean
        rows.append(
            [
                f"{model} vs {other}",
                f"{a.a_wins}-{a.b_wins}-{a.ties}",
                f"{a.sign_p:.3g}",
                f"{cl.a_wins}-{cl.b_wins}-{cl.ties} ({cl.battles})",
                f"{cl.sign_p:.3g}",
                f"{a.heavy_flaws_a} / {a.heavy_flaws_b}",
            ]
        )
    return rows


@section("evaluation", "Evaluation", reads=(*LINEAGE_READS, *COMPARE_READS))
def evaluation(facts: ReportFacts, s: Section) -> None:
    """Accuracy per suite with Wilson intervals, paired comparisons and blind-judge tallies of the model
    against every other model evaluated (the chain's unless all_models)."""
    store, model, models = facts.store, facts.model, facts.models
    suites, matrix = eval_matrix(store, models)
    suites = [x for x in suites if any(x in v for v in matrix.values())]
    if models is not None:
        others = store.scalar(
            "SELECT count(DISTINCT model) FROM evals WHERE NOT list_contains(?, model)", [list(models)]
        )
        if others:
            s.paragraphs.append(
                f"The models of this chain only; {others} other evaluated model(s) in the store are left out "
                "(`pairstore audit report --all-models` lists them too)."
            )
    if matrix:
        rows = []
        for m in sorted(matrix, key=lambda m: (m != model, m)):
            cells = []
            for suite in suites:
                v = matrix[m].get(suite)
                if v is None:
                    cells.append("-")
                else:
                    lo, hi = wilson_interval(v[0], v[1])
                    cells.append(f"{v[0] / v[1]:.4f} (n={v[1]}, {lo:.2f}-{hi:.2f})")
            rows.append([m + (" (this model)" if m == model else "")] + cells)
        s.tables.append(("Accuracy per suite (95% Wilson interval)", Table(["model"] + suites, rows)))
        paired = _paired_rows(store, model, suites, matrix)
        if paired:
            s.tables.append(
                (
                    f"Paired per-item comparison of {model} with each other model on the same items "
                    "(exact McNemar test on the items exactly one of the two got right)",
                    Table(
                        [
                            "comparison",
                            "suite",
                            "items",
                            "both right",
                            f"{model} only",
                            "other only",
                            "neither",
                            "difference",
                            "McNemar p",
                        ],
                        paired,
                    ),
                )
            )
    else:
        s.paragraphs.append("No per-item evaluation results in the store (`pairstore ingest evals`).")
    judge = [r for r in _judge_rows(store, model) if models is None or r[0].split(" vs ", 1)[1] in models]
    if judge:
        s.tables.append(
            (
                "Blind side-by-side judging (wins-losses-ties of this model, each battle once; clean = "
                "battles neither lineage trained on)",
                Table(
                    [
                        "comparison",
                        "all",
                        "sign p",
                        "clean subset",
                        "sign p (clean)",
                        "heavy flaws (this / other)",
                    ],
                    judge,
                ),
            )
        )
    elif matrix:
        s.paragraphs.append("No blind-judge verdicts involve this model.")


def _share(kn: tuple[int, int] | None) -> str:
    """'0.4875 (0.42-0.55)': a share and its 95% Wilson interval."""
    if kn is None:
        return "-"
    lo, hi = wilson_interval(*kn)
    return f"{kn[0] / kn[1]:.4f} ({lo:.2f}-{hi:.2f})"


def _soup_groups(store: Store) -> dict[tuple[str, str], dict[float, str]]:
    """(a, b) -> {alpha: model} for soups of the same two parents (rounds and checkpoints), plus the ends."""
    groups: dict[tuple[str, str], dict[float, str]] = defaultdict(dict)
    for name, parents, alpha in store.con.execute(
        "SELECT name, parents, alpha FROM rounds WHERE kind = 'soup' AND alpha IS NOT NULL "
        "UNION SELECT name, parents, alpha FROM checkpoints WHERE kind = 'soup' AND alpha IS NOT NULL"
    ).fetchall():
        if parents and len(parents) == 2:
            groups[(parents[0], parents[1])][float(alpha)] = name
    out = {}
    for (a, b), soups in groups.items():
        if len(soups) >= 2:
            out[(a, b)] = {0.0: a, 1.0: b, **soups}
    return out


@section("dose-curve", "Dose curve", reads=(*LINEAGE_READS, "evals"))
def dose_curve(facts: ReportFacts, s: Section) -> None:
    """Each metric against alpha for soups of the same two parents, with its Wilson interval."""
    models = facts.models
    groups = {
        ab: pts
        for ab, pts in _soup_groups(facts.store).items()
        if models is None or (ab[0] in models and ab[1] in models)
    }
    suites, matrix = eval_matrix(facts.store)
    drawn = 0
    for (a, b), points in sorted(groups.items()):
        series = _dose_series(points, suites, matrix)
        if not series:
            continue
        drawn += 1
        s.images.append((f"dose_{a}_{b}.png", _dose_png(a, b, points, series)))
        s.tables.append(
            (
                f"Dose points between {a} and {b} (95% Wilson interval)",
                Table(
                    ["alpha", "model"] + list(series),
                    [
                        [number(alpha, 3), m]
                        + [_share({x: (k, n) for x, k, n in pts}.get(alpha)) for pts in series.values()]
                        for alpha, m in sorted(points.items())
                    ],
                ),
            )
        )
    if not drawn:
        s.paragraphs.append("No two soups of the same two parents with evaluations: no dose curve to draw.")
    else:
        s.paragraphs.append(
            "Each metric against alpha for soups interpolating the same two parents "
            "(alpha 0 = the first parent, 1 = the second), with its 95% Wilson interval."
        )


# A dose curve's series: label -> [(alpha, k, n)], a share of n items at each dose.
DoseSeries = dict[str, list[tuple[float, int, int]]]


def _dose_series(points: dict[float, str], suites: list[str], matrix: EvalMatrix) -> DoseSeries:
    """Accuracy and loop-flagged share per suite at each dose, where two doses or more have them."""
    series: DoseSeries = {}
    for suite in suites:
        pts = [
            (alpha, matrix[m][suite][0], matrix[m][suite][1])
            for alpha, m in sorted(points.items())
            if suite in matrix.get(m, {}) and matrix[m][suite][1]
        ]
        if len(pts) >= 2:
            series[f"{suite} accuracy"] = pts
        flags = [
            (alpha, matrix[m][suite][2], matrix[m][suite][1])
            for alpha, m in sorted(points.items())
            if suite in matrix.get(m, {}) and matrix[m][suite][1] and matrix[m][suite][2]
        ]
        if len(flags) >= 2:
            series[f"{suite} loop-flagged share"] = flags
    return series


def _dose_png(a: str, b: str, points: dict[float, str], series: DoseSeries) -> bytes:
    """The series against alpha, each share drawn with its 95% Wilson interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for label, pts in series.items():
        shares = [k / n for _, k, n in pts]
        bounds = [wilson_interval(k, n) for _, k, n in pts]
        ax.errorbar(
            [p[0] for p in pts],
            shares,
            marker="o",
            capsize=3,
            label=label,
            yerr=[
                [max(0.0, v - lo) for v, (lo, _) in zip(shares, bounds)],  # float noise at 0 and 1
                [max(0.0, hi - v) for v, (_, hi) in zip(shares, bounds)],
            ],
        )
    ax.set_xticks(
        [alpha for alpha in sorted(points)],
        [f"{alpha:g}\n{m}" for alpha, m in sorted(points.items())],
        fontsize=7,
    )
    ax.set_xlabel(f"alpha in {a} + alpha*({b} - {a})")
    ax.set_ylabel("share of items")
    ax.set_ylim(0, 1)
    ax.grid(axis="y", color="#e6e6e6")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
    ax.set_title(f"dose curve: {a} -> {b}", fontsize=9)
    return figure_png(fig)


@section("ratings", "Ratings from votes", reads=("battles", "judgments", "pairs"))
def ratings(facts: ReportFacts, s: Section) -> None:
    """Every model ranked from battles and judgments (audits.ratings), with the plot."""
    from audits.ratings import audit_ratings, ratings_png

    rep = audit_ratings(facts.store)
    if not rep.ratings:
        s.paragraphs.append("No battle or judgment names two models: nothing to rank.")
        return
    s.paragraphs.append(
        f"Bradley-Terry over {rep.games} games (battles and judgments; a tie or both-bad vote is half a win "
        f"each), Elo scale, 95% intervals from {rep.bootstrap} bootstrap rounds (seed {rep.seed})."
    )
    s.tables.append(
        (
            "Ratings",
            Table(
                ["model", "rating", "95% interval", "games", "wins"],
                [[r.model, r.rating_text, r.interval_text, r.games, f"{r.wins:g}"]
                 for r in rep.ratings],
            ),
        )
    )  # fmt: skip
    s.tables.append(
        (
            "Position bias (share of 'A is better' among decisive votes, exact binomial test against 1/2)",
            Table(
                ["votes of", "votes", "decisive", "A wins", "share A", "p"],
                [[src, p["votes"], p["decisive"], p["a_wins"], number(p["share_a"], 3),
                  number(p["p_value"], 3)] for src, p in rep.position.items()],
            ),
        )
    )  # fmt: skip
    if rep.agreement:
        s.tables.append(
            (
                "Annotator agreement on the same items (Cohen's kappa)",
                Table(
                    ["rater 1", "rater 2", "items", "agree", "kappa"],
                    [[a["rater_1"], a["rater_2"], a["items"], a["agree"], number(a["kappa"], 3)]
                     for a in rep.agreement],
                ),
            )
        )  # fmt: skip
    if rep.lengths:
        s.tables.append(
            (
                "Chosen against rejected length by source (characters)",
                Table(
                    ["source", "pairs", "chosen", "rejected", "chosen longer"],
                    [[x["source"], x["pairs"], f"{x['chosen_chars']:.0f}", f"{x['rejected_chars']:.0f}",
                      f"{x['chosen_longer']:.1%}"] for x in rep.lengths],
                ),
            )
        )  # fmt: skip
    png = ratings_png(rep)
    if png:
        s.images.append(("ratings.png", png))
