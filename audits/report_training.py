"""The report's sections on what was trained: the lineage (what ran at each stage, with a picture), the
mixture composition per round (a chart) and token lengths with truncation."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from audits.lengths import audit_lengths, latest_exports, make_counter
from audits.report_facts import LINEAGE_READS, ReportFacts, section
from audits.report_render import Section, Table, figure_png, number
from pairstore.rounds.lineage import describe
from pairstore.store.store import Store


def run_summary(run: dict) -> str:
    """What a training run did, from its training_evidence.json: the numbers a reader checks first."""
    hp = run.get("hyperparameters") or {}
    steps = (run.get("final_metrics") or {}).get("global_step")
    parts = [
        (f"{steps} step" + ("" if steps == 1 else "s")) if steps is not None else "steps not recorded",
        f"lr {hp['learning_rate']:g}" if hp.get("learning_rate") is not None else None,
        f"LoRA rank {hp['lora_rank']}" if hp.get("lora_rank") is not None else None,
        f"global batch {hp['global_batch']}" if hp.get("global_batch") is not None else None,
        f"max length {hp['max_length']}" if hp.get("max_length") is not None else None,
        f"{run['rows']} rows" if run.get("rows") is not None else None,
        f"mixture SHA-256 {run['mixture_sha256'][:12]}" if run.get("mixture_sha256") else None,
    ]
    base = (run.get("base") or {}).get("name")
    return ("DPO+NLL LoRA" + (f" from {base}" if base else "") + ": ") + ", ".join(p for p in parts if p)


def what_ran(stage: dict) -> str:
    """How a stage was made here, from evidence; "planned (recipe)" when nothing of it ran here."""
    ck = stage.get("checkpoint")
    if stage.get("run"):
        return "ran: " + run_summary(stage["run"]) + ("; merged" if ck and ck["kind"] == "merge" else "")
    if ck is None:
        return "planned (recipe)"
    if ck["kind"] == "base":
        return f"base bundle {Path(ck['path']).name if ck.get('path') else stage['name']}" + (
            f" ({ck['path']})" if ck.get("path") else ""
        )
    if ck["kind"] == "soup":
        return f"souped here: {describe(stage)}"
    return f"{ck['kind']} registered here"


def here(stages: list[dict]) -> list[dict]:
    """The stages of the chain that exist here (a registered bundle or a training run), parents first;
    every stage when none does (a store of recipes only)."""
    real = [st for st in stages if st.get("checkpoint") or st.get("run")]
    return real or stages


def drawn_kind(stage: dict) -> str:
    """What a stage is here: a registered base bundle is a base, whatever the recipe's history calls it."""
    ck = stage.get("checkpoint")
    if ck and ck["kind"] == "base":
        return "base"
    return stage["kind"]


@section("lineage", "Lineage", reads=LINEAGE_READS)
def lineage(facts: ReportFacts, s: Section) -> None:
    """Every stage from the base model, what ran for it here and what its recipe says, with a picture."""
    model, stages = facts.model, facts.stages
    real = here(stages)
    planned = [st["name"] for st in stages if st not in real]
    s.paragraphs.append(
        f"{len(stages)} stage(s) from the base model to {model}, parents first"
        + (
            f"; {len(real)} exist here (a registered bundle or a training run), "
            f"{len(planned)} are the recipe's history, planned (recipe): {', '.join(planned)}."
            if planned
            else "."
        )
    )
    s.tables.append(
        (
            "Stages (what ran: from each checkpoint's training_evidence.json; the recipe's plan beside it)",
            Table(
                ["stage", "kind", "what ran", "recipe says", "mixtures (rows, SHA-256)"],
                [
                    [
                        st["name"],
                        drawn_kind(st),
                        what_ran(st),
                        describe(st),
                        "; ".join(
                            f"{Path(m['path']).name} ({m['rows']}, {m['sha256'][:12]})"
                            for m in st["mixtures"]
                        )
                        or "-",
                    ]
                    for st in stages
                ],
            ),
        )
    )
    s.images.append(("lineage.png", _lineagefigure_png(real)))


def _lineagefigure_png(stages: list[dict]) -> bytes:
    """Top to bottom: one level per generation (a stage sits below its deepest parent)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depth: dict[str, int] = {}
    for st in stages:  # parents come first; a parent not drawn (the recipe's history) does not count
        depth[st["name"]] = 1 + max((depth[p] for p in st["parents"] if p in depth), default=-1)
    levels: dict[int, list[str]] = defaultdict(list)
    for st in stages:
        levels[depth[st["name"]]].append(st["name"])
    pos = {n: (float(i), -float(d)) for d, names in levels.items() for i, n in enumerate(names)}
    width = max(len(v) for v in levels.values())
    colors = {"base": "#bbbbbb", "dpo": "#8fb0de", "soup": "#f2b58c"}
    fig, ax = plt.subplots(figsize=(max(4.0, 2.2 * width + 1.5), 0.6 * len(levels) + 0.8))
    for st in stages:
        x1, y1 = pos[st["name"]]
        for p in st["parents"]:
            if p not in pos:
                continue
            x0, y0 = pos[p]
            if y0 - y1 > 1 and x0 == x1:
                # An edge that skips a level runs beside the stages between, into the child's right side.
                ax.annotate(
                    "",
                    xy=(x1 + 0.42, y1),
                    xytext=(x0 + 0.42, y0),
                    arrowprops={"arrowstyle": "->", "color": "#c05a1a", "connectionstyle": "arc3,rad=-0.45"},
                )
            else:
                ax.annotate(
                    "",
                    xy=(x1, y1 + 0.22),
                    xytext=(x0, y0 - 0.22),
                    arrowprops={"arrowstyle": "->", "color": "#555555"},
                )
        label = st["name"]
        kind = drawn_kind(st)
        if kind == "soup" and st.get("alpha") is not None:
            label += f"  (alpha {st['alpha']:g})"
        elif kind == "dpo" and st.get("run"):
            steps = (st["run"].get("final_metrics") or {}).get("global_step")
            label += f"  ({steps} step{'' if steps == 1 else 's'})"
        elif kind == "dpo" and st.get("max_steps"):
            label += f"  ({st['max_steps']} steps planned)"
        ax.text(
            x1,
            y1,
            label,
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "fc": colors.get(drawn_kind(st), "#dddddd"), "ec": "black"},
        )
    ax.set_xlim(-0.9, width - 0.1)
    ax.set_ylim(-len(levels) + 0.4, 0.6)
    ax.axis("off")
    ax.set_title("lineage, base at the top (grey base, blue DPO round, orange soup)", fontsize=9)
    return figure_png(fig)


def rows_by_source(store: Store, export_ids: list[str]) -> dict[str, int]:
    """{source: rows} over the given registered mixtures (NLL-only rows named apart)."""
    marks = ", ".join("?" for _ in export_ids)
    counts = store.rows(
        f"""
        SELECT p.source || CASE WHEN p.kind = 'sft' THEN ' (NLL only)' ELSE '' END AS source, count(*) AS n
        FROM export_rows r JOIN pairs p USING (pair_id)
        WHERE r.export_id IN ({marks}) GROUP BY ALL ORDER BY n DESC, source""",
        export_ids,
    )
    if counts:
        return {c["source"]: int(c["n"]) for c in counts}
    rows = store.scalar(f"SELECT sum(rows) FROM exports WHERE export_id IN ({marks})", export_ids)
    return {"(rows not recorded)": int(rows or 0)}


def _composition(store: Store, rounds: list[str]) -> dict[str, dict[str, int]]:
    """round -> {source: rows} of its latest registered mixture."""
    latest: dict[str, list[str]] = defaultdict(list)
    for e in latest_exports(store):
        latest[e["name"]].append(e["export_id"])
    return {rnd: rows_by_source(store, latest[rnd]) for rnd in rounds if latest.get(rnd)}


@section("composition", "Mixture composition per round", reads=(*LINEAGE_READS, "export_rows", "pairs"))
def composition(facts: ReportFacts, s: Section) -> None:
    """Rows per source of each round's latest registered mixture, as a table and a chart."""
    comp = _composition(facts.store, facts.rounds)
    if not comp:
        s.paragraphs.append("No round in this lineage has a registered mixture.")
        return
    sources = sorted({src for c in comp.values() for src in c})
    s.tables.append(
        (
            "Rows per source (latest registered mixture of each round, NLL-only file included)",
            Table(
                ["round"] + sources + ["total"],
                [[r] + [c.get(src, 0) for src in sources] + [sum(c.values())] for r, c in comp.items()],
            ),
        )
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.5 * len(comp) + 1.5))
    left = [0] * len(comp)
    names = list(comp)
    for src in sources:
        vals = [comp[r].get(src, 0) for r in names]
        ax.barh(names, vals, left=left, label=src)
        left = [a + b for a, b in zip(left, vals)]
    from matplotlib.ticker import MaxNLocator

    ax.invert_yaxis()
    ax.set_xlabel("rows")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    # Beside the bars, never over them.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
    ax.set_title("mixture composition per round", fontsize=9)
    s.images.append(("composition.png", figure_png(fig)))


@section("lengths", "Lengths", reads=(*LINEAGE_READS, "export_rows", "pairs"))
def lengths(facts: ReportFacts, s: Section) -> None:
    """Token counts of the lineage's mixtures and what the max length each round trained with cuts off."""
    store, max_lengths = facts.store, facts.max_lengths
    have = {r[0] for r in store.con.execute("SELECT DISTINCT round FROM exports").fetchall()}
    mine = [r for r in facts.rounds if r in have]
    if not mine:
        s.paragraphs.append("No round in this lineage has a registered mixture to measure.")
        return
    rep = audit_lengths(
        store, counter=make_counter(store, tokenizer=facts.tokenizer), rounds=mine, max_lengths=max_lengths
    )
    ran = ", ".join(f"{r} {n}" for r, n in sorted(max_lengths.items()) if r in mine)
    s.paragraphs.append(
        f"Token counts: {rep.counter}. A side is truncated when prompt + that side exceeds "
        "the max_length it was trained with ("
        + (f"what the training run used: {ran}; " if ran else "")
        + "the recipe's otherwise); a truncated chosen answer trains the NLL term on a fragment."
    )
    s.tables.append(
        (
            "Per round",
            Table(
                [
                    "round",
                    "rows",
                    "max_length",
                    "prompt p50/p95/max",
                    "chosen p50/p95/max",
                    "rejected p50/p95/max",
                    "rows truncated",
                    "chosen truncated",
                ],
                [
                    [
                        r.round,
                        r.rows,
                        r.max_length or "-",
                        *(
                            "/".join(number(r.stats[k][q], 1) for q in ("median", "p95", "max"))
                            for k in ("prompt", "chosen", "rejected")
                        ),
                        f"{r.truncated_rows} ({r.truncated_share:.1%})",
                        f"{r.truncated_chosen} ({r.truncated_chosen_share:.1%})",
                    ]
                    for r in rep.rounds
                ],
            ),
        )
    )
    s.paragraphs += rep.notes
