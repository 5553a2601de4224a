"""The provenance report put beside a checkpoint: report.html (static, offline) and report.md.

    pairstore audit report --model sm11a --out reports/sm11a

The report opens with the verdict: the model against its incumbent on every
suite (difference, paired counts, exact McNemar p, Wilson intervals), the
blind-judge tally with its clean subset, loop rates, and the provenance line
naming every leaked held-out id and the file it is in. Stage rows say what ran
(from each round's training evidence: steps, learning rate, LoRA rank, global
batch, max length, rows, mixture SHA-256); a recipe stage never run here says
"planned (recipe)". Evaluation covers the models of the chain reported
(all_models=True for every model in the store).

Sections: lineage (a picture), mixture composition per round (a chart),
holdout status (leak audit of every registered mixture), decontamination
(13-gram overlap of the lineage's mixtures with every registered benchmark),
mixture hash check, token lengths and truncation, loop table, the verifier's stored verdicts
(correct, wrong, unknown by reason, per model and dataset), evaluation table
with blind-judge tallies, and the dose curve (alpha against each metric) where
soups of the same two parents exist. Pictures are PNGs made with matplotlib
(Agg backend): embedded as base64 in the HTML, written beside report.md. The
markdown's "Training data" and "Evaluation" sections are written to be pasted
into a model card. The store is only read.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from audits.compare import compare, paired_flips, wilson_interval
from audits.gate_audit import audit_gate, gate_audit_tables
from audits.leaks import audit_leaks
from audits.lengths import audit_lengths, latest_exports, make_counter
from audits.loop_table import loop_table
from audits.mixtures import check_mixtures
from audits.report_render import Link, Report, Section, Table, figure_png, render_html, render_markdown
from audits.verifier_audit import stored_verdicts
from pairstore.errors import NotFound
from pairstore.files import (
    atomic_write_bytes,
    folder_is_free,
    publish_folder,
    recover_folder,
    staged_folder,
    writes_into,
)
from pairstore.holdout.ngrams import arrow_query, benchmark_hits
from pairstore.progress import current as current_progress
from pairstore.rounds.lineage import describe, lineage

# -- data ------------------------------------------------------------------------


def _fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}".rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


def _lineage_stages(store, model: str) -> list[dict]:

    return lineage(store, model)


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


def _lineage_section(store, model: str, stages: list[dict]) -> Section:

    s = Section("lineage", "Lineage")
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
                        _drawn_kind(st),
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
    return s


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
        kind = _drawn_kind(st)
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
            bbox={"boxstyle": "round", "fc": colors.get(_drawn_kind(st), "#dddddd"), "ec": "black"},
        )
    ax.set_xlim(-0.9, width - 0.1)
    ax.set_ylim(-len(levels) + 0.4, 0.6)
    ax.axis("off")
    ax.set_title("lineage, base at the top (grey base, blue DPO round, orange soup)", fontsize=9)
    return figure_png(fig)


def _drawn_kind(stage: dict) -> str:
    """What a stage is here: a registered base bundle is a base, whatever the recipe's history calls it."""
    ck = stage.get("checkpoint")
    if ck and ck["kind"] == "base":
        return "base"
    return stage["kind"]


def _rows_by_source(store, export_ids: list[str]) -> dict[str, int]:
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


def _composition(store, rounds: list[str]) -> dict[str, dict[str, int]]:
    """round -> {source: rows} of its latest registered mixture."""
    latest: dict[str, list[str]] = defaultdict(list)
    for e in latest_exports(store):
        latest[e["name"]].append(e["export_id"])
    return {rnd: _rows_by_source(store, latest[rnd]) for rnd in rounds if latest.get(rnd)}


def _composition_section(comp: dict[str, dict[str, int]]) -> Section:
    s = Section("composition", "Mixture composition per round")
    if not comp:
        s.paragraphs.append("No round in this lineage has a registered mixture.")
        return s
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
    return s


def _holdout_section(store) -> tuple[Section, list]:

    s = Section("holdout", "Holdout status")
    sets = [r[0] for r in store.con.execute("SELECT set_name FROM holdout_sets ORDER BY set_name").fetchall()]
    reports: list = []
    if not sets:
        s.paragraphs.append("No holdout set is defined in this store.")
        return s, reports
    rows = []
    for name in sets:
        rep = audit_leaks(store, name)
        reports.append(rep)
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
        s.paragraphs.append(_holdout_sentence(rep))
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
    return s, reports


def leak_anchor(set_name: str, item_id: str, path: str) -> str:
    return "leak-" + "-".join(
        "".join(c if c.isalnum() else "_" for c in v) for v in (set_name, item_id, Path(path).name)
    )


def leaked_items(reports) -> list[dict]:
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


def _holdout_sentence(rep) -> str:
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


def _pair_texts(store, rounds: list[str]):

    con = store.con
    con.register("_rep_rounds", pa.table({"round": pa.array(rounds, pa.string())}))
    try:
        return arrow_query(
            con,
            """
            SELECT DISTINCT e.round, r.row_index, p.pair_id,
                   array_to_string(list_transform(p.prompt, lambda m: m.content), chr(10)) \
|| chr(10) || p.chosen
                   || coalesce(chr(10) || p.rejected, '') AS text
            FROM export_rows r JOIN exports e USING (export_id) JOIN pairs p USING (pair_id)
            WHERE e.round IN (SELECT round FROM _rep_rounds)
            ORDER BY e.round, r.row_index""",
        )
    finally:
        con.unregister("_rep_rounds")


def _decontam_section(store, rounds: list[str]) -> tuple[Section, list[list]]:

    s = Section("decontamination", "Decontamination")
    benches = store.rows(
        "SELECT benchmark, n, count(*) AS items FROM benchmark_refs GROUP BY ALL ORDER BY benchmark"
    )
    if not benches:
        s.paragraphs.append(
            "No benchmark is registered (`pairstore audit decontam --register`), so no n-gram "
            "check against benchmark test items was possible."
        )
        return s, []
    texts = _pair_texts(store, rounds)
    rows = []
    for n in sorted({b["n"] for b in benches}):
        tbl = pa.table({"row_index": pa.array(range(texts.num_rows), pa.int64()), "text": texts["text"]})
        hits = benchmark_hits(store, tbl, n=n)
        for b in (b for b in benches if b["n"] == n):
            mine = [(r, i) for r, bn, i in hits if bn == b["benchmark"]]
            rounds_hit = sorted({texts["round"][r].as_py() for r, _ in mine})
            rows.append(
                [
                    b["benchmark"],
                    b["items"],
                    n,
                    texts.num_rows,
                    len({r for r, _ in mine}),
                    len({i for _, i in mine}),
                    ", ".join(rounds_hit) or "-",
                ]
            )
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
    return s, rows


def _hash_section(store) -> tuple[Section, list]:

    s = Section("mixture-hashes", "Mixture hash check")
    checks = check_mixtures(store)
    if not checks:
        s.paragraphs.append("No registered mixture or bundle evidence to check.")
        return s, checks
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
    return s, checks


def _gate_audit_section(store) -> Section:
    """`pairstore audit gate` on the store's own members: recall per transformation, false refusals."""
    s = Section("gate-audit", "Holdout gate self-check")
    if not store.scalar("SELECT count(*) FROM holdout WHERE removed_at IS NULL"):
        s.paragraphs.append("No active holdout member: nothing to measure.")
        return s
    result = audit_gate(store, limit=1000)
    cols, rows, mcols, mrows = gate_audit_tables(result)
    s.paragraphs.append(
        f"{result.members} active member(s), each disguised by every transformation (seed {result.seed}) and "
        "run through the export gate's matcher. Not caught by string matching: "
        + "; ".join(result.uncaught)
        + "."
    )
    s.tables.append(("Recall per transformation", Table(cols, rows)))
    s.tables.append(("Near neighbours refused (false refusals)", Table(mcols, mrows)))
    return s


def _lengths_section(store, rounds: list[str], tokenizer: str | None, max_lengths: dict[str, int]) -> Section:

    s = Section("lengths", "Lengths")
    have = {r[0] for r in store.con.execute("SELECT DISTINCT round FROM exports").fetchall()}
    mine = [r for r in rounds if r in have]
    if not mine:
        s.paragraphs.append("No round in this lineage has a registered mixture to measure.")
        return s
    rep = audit_lengths(
        store, counter=make_counter(store, tokenizer=tokenizer), rounds=mine, max_lengths=max_lengths
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
                            "/".join(_fmt(r.stats[k][q], 1) for q in ("median", "p95", "max"))
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
    return s


def _normalize_loop_table(result) -> Table:
    """loop_table's result (list of dicts / dataclasses, or (columns, rows)) as a Table."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], (list, tuple)):
        return Table(list(result[0]), [list(r) for r in result[1]])
    rows = [asdict(r) if is_dataclass(r) and not isinstance(r, type) else dict(r) for r in result]
    cols = list(rows[0]) if rows else ["model", "suite"]
    return Table(cols, [[r.get(c) for c in cols] for r in rows])


def _loops_section(store, models: set[str] | None) -> Section:

    s = Section("loops", "Loop table")
    result = [r for r in loop_table(store) if models is None or r["model"] in models]
    for r in result:
        if r.get("suite") is None:
            r["suite"] = "(no suite: samples)"
    table = _normalize_loop_table(result)
    if not table.rows:
        s.paragraphs.append("No scanned outputs in the store (generations or evals with loop flags).")
        return s
    s.paragraphs.append(
        "Repetition scanner (audits.loops) per model and suite: flagged outputs (repeated "
        "n-gram, cycle or tail loop), catastrophic loops (100x+ repetition), empty responses."
    )
    s.tables.append(("Loops per model and suite", table))
    return s


def _eval_matrix(store, models: list[str] | None = None) -> tuple[list[str], dict[str, dict[str, tuple]]]:
    rows = store.rows("""
        SELECT model, suite, count(*) AS n, count(*) FILTER (coalesce(correct, score >= 0.5)) AS k,
               count(*) FILTER (loop_flagged) AS flagged, count(*) FILTER (empty) AS empty
        FROM evals GROUP BY ALL ORDER BY model, suite""")
    suites = sorted({r["suite"] for r in rows})
    out: dict[str, dict[str, tuple]] = defaultdict(dict)
    for r in rows:
        if models is None or r["model"] in models:
            out[r["model"]][r["suite"]] = (r["k"], r["n"], r["flagged"], r["empty"])
    return suites, out


def _paired_rows(store, model: str, suites: list[str], matrix) -> list[list]:
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


def _judge_rows(store, model: str) -> list[list]:

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


def _evaluation_section(store, model: str, models: list[str] | None) -> Section:
    s = Section("evaluation", "Evaluation")
    suites, matrix = _eval_matrix(store, models)
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
    return s


def _share(kn: tuple[int, int] | None) -> str:
    """'0.4875 (0.42-0.55)': a share and its 95% Wilson interval."""
    if kn is None:
        return "-"
    lo, hi = wilson_interval(*kn)
    return f"{kn[0] / kn[1]:.4f} ({lo:.2f}-{hi:.2f})"


def _soup_groups(store) -> dict[tuple[str, str], dict[float, str]]:
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


def _dose_section(store, models: list[str] | None) -> Section:
    s = Section("dose-curve", "Dose curve")
    groups = {
        ab: pts
        for ab, pts in _soup_groups(store).items()
        if models is None or (ab[0] in models and ab[1] in models)
    }
    suites, matrix = _eval_matrix(store)
    drawn = 0
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for (a, b), points in sorted(groups.items()):
        # label -> [(alpha, k, n)]: a share of n items at each dose, drawn with its 95% Wilson interval.
        series: dict[str, list[tuple[float, int, int]]] = {}
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
        if not series:
            continue
        drawn += 1
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
        s.images.append((f"dose_{a}_{b}.png", figure_png(fig)))
        s.tables.append(
            (
                f"Dose points between {a} and {b} (95% Wilson interval)",
                Table(
                    ["alpha", "model"] + list(series),
                    [
                        [_fmt(alpha, 3), m]
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
    return s


def _ratings_section(store) -> Section:
    """Every model ranked from battles and judgments (audits.ratings), with the plot."""
    from audits.ratings import audit_ratings, ratings_png

    s = Section("ratings", "Ratings from votes")
    rep = audit_ratings(store)
    if not rep.ratings:
        s.paragraphs.append("No battle or judgment names two models: nothing to rank.")
        return s
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
                [[src, p["votes"], p["decisive"], p["a_wins"], _fmt(p["share_a"], 3), _fmt(p["p_value"], 3)]
                 for src, p in rep.position.items()],
            ),
        )
    )  # fmt: skip
    if rep.agreement:
        s.tables.append(
            (
                "Annotator agreement on the same items (Cohen's kappa)",
                Table(
                    ["rater 1", "rater 2", "items", "agree", "kappa"],
                    [[a["rater_1"], a["rater_2"], a["items"], a["agree"], _fmt(a["kappa"], 3)]
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
    return s


# -- assembly --------------------------------------------------------------------


def _verdicts_section(store, models: list[str]) -> Section:
    s = Section("verdicts", "Verifier verdicts")
    columns, rows = stored_verdicts(store, models)
    if not rows:
        s.paragraphs.append("No verified generations of the lineage's models in the store.")
        return s
    s.paragraphs.append(
        "The answer verifier's stored verdicts on the lineage's models' generations: only correct and "
        "wrong become training pairs; unknowns are dropped by reason (`pairstore audit verifier` runs "
        "it afresh against math-verify)."
    )
    s.tables.append(("Verdicts per model and dataset", Table(columns, rows)))
    return s


def chain_models(stages: list[dict]) -> list[str]:
    """The models of a chain: every stage's name, in lineage order."""
    return [st["name"] for st in stages]


def default_incumbent(store, model: str, stages: list[dict]) -> str | None:
    """The model's nearest ancestor with evaluations, first parents first (a soup's `a`, a round's parent)."""
    by_name = {st["name"]: st for st in stages}
    evaluated = {r[0] for r in store.con.execute("SELECT DISTINCT model FROM evals").fetchall()}
    frontier, seen = list(by_name[model]["parents"]), {model}
    while frontier:
        name = frontier.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name in evaluated:
            return name
        frontier += list(by_name.get(name, {}).get("parents", []))
    return None


def _share_text(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.4f} ({lo:.2f}-{hi:.2f})"


def _summary_section(store, model: str, incumbent: str | None, leak_reports) -> tuple[Section, list[dict]]:
    """The verdict: is the candidate better than the incumbent, how sure, and did anything leak."""
    s = Section("summary", "Verdict")
    verdict: list[dict[str, Any]] = []
    if incumbent is None:
        s.paragraphs.append(f"No evaluated ancestor of {model} to compare it with.")
    else:
        suites, matrix = _eval_matrix(store, [model, incumbent])
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
            better = (
                ("better" if diff > 0 else "worse") if significant and diff else "no significant difference"
            )
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
    return s, verdict


def build_report(
    store,
    model: str,
    *,
    tokenizer: str | None = None,
    incumbent: str | None = None,
    all_models: bool = False,
) -> Report:
    """Every section's data, tables and pictures for `model` (a registered round or checkpoint).

    `incumbent`: what the verdict compares the model with (default: its nearest evaluated ancestor).
    `all_models`: Evaluation, loop table and dose curve cover every model in the store, not only the
    chain's."""
    stages = _lineage_stages(store, model)
    rounds = [st["name"] for st in stages]
    models = None if all_models else chain_models(stages)
    if incumbent is None:
        incumbent = default_incumbent(store, model, stages)
    elif not store.scalar("SELECT count(*) FROM evals WHERE model = ?", [incumbent]):
        raise NotFound(f"no evaluations of the incumbent {incumbent!r}")
    max_lengths = {
        st["name"]: st["run"]["hyperparameters"]["max_length"]
        for st in stages
        if st.get("run") and (st["run"].get("hyperparameters") or {}).get("max_length")
    }
    with current_progress().stage(f"audit report {model}: sections", total=8, unit="sections") as stage:
        comp = _composition(store, rounds)
        lineage_s = _lineage_section(store, model, stages)
        comp_s = _composition_section(comp)
        stage.advance(2)
        holdout_s, leak_reports = _holdout_section(store)
        stage.advance()
        summary_s, _ = _summary_section(store, model, incumbent, leak_reports)
        stage.advance()
        decon_s, decon_rows = _decontam_section(store, rounds)
        stage.advance()
        hash_s, checks = _hash_section(store)
        stage.advance()
        loops_s = _loops_section(store, None if models is None else set(models))
        stage.advance()
        eval_s = _evaluation_section(store, model, models)
        stage.advance()
    sections = [
        summary_s,
        lineage_s,
        comp_s,
        holdout_s,
        _gate_audit_section(store),
        decon_s,
        hash_s,
        _lengths_section(store, rounds, tokenizer, max_lengths),
        loops_s,
        _verdicts_section(store, rounds),
        eval_s,
        _dose_section(store, models),
        _ratings_section(store),
    ]
    training = _training_data_md(store, stages, leak_reports, decon_rows, checks)
    evaluation = _evaluation_md(eval_s, loops_s, leak_reports)
    return Report(model, sections, training, evaluation)


def _training_data_md(store, stages, leak_reports, decon_rows, checks) -> str:
    lines = ["## Training data", ""]
    for st in stages:
        if st["kind"] == "soup":
            continue
        for m in st["mixtures"]:
            parts = _rows_by_source(store, [m["export_id"]])
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
        lines += [_holdout_sentence(rep), ""]
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


def _evaluation_md(eval_s: Section, loops_s: Section, leak_reports) -> str:
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


def _only_a_report(out: Path) -> bool:
    """`out` is free, or holds nothing but an earlier report's files."""
    if folder_is_free(out):
        return True
    return out.is_dir() and all(
        p.is_file() and (p.name in ("report.md", "report.html") or p.suffix == ".png") for p in out.iterdir()
    )


def write_report(
    store,
    model: str,
    out_dir,
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
