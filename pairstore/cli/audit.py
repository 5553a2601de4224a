"""`pairstore audit ...`: the read-only analyses and the report.

pairstore audit leaks --holdout judge34 --json
pairstore audit report --model sm11a --out report
pairstore audit verifier --model so7a --json
"""

from __future__ import annotations

import click

from audits.compare import compare
from audits.decontam import decontam, load_benchmark
from audits.gate_audit import audit_gate, gate_audit_tables
from audits.leaks import audit_leaks
from audits.lengths import audit_lengths, make_counter
from audits.loop_table import LOOP_TABLE_COLUMNS, loop_table
from audits.mixtures import FAILING, check_mixtures, refuse_if_changed
from audits.report import write_report
from audits.verifier_audit import audit_verifier_file, audit_verifier_store
from pairstore.cli.base import (
    as_plain,
    complete,
    echo_json,
    echo_rows,
    echo_table,
    json_option,
    listing_options,
    open_db,
)
from pairstore.holdout.ngrams import register_benchmark


@click.group("audit")
def audit_group() -> None:
    """Read-only analyses: leaks, decontamination, mixtures, the gate itself, lengths, loops, compare,
    verifier, report."""


@audit_group.command("leaks")
@click.option(
    "--holdout",
    "holdout",
    required=True,
    help="The holdout set to look for.",
    shell_complete=complete("holdout"),
)
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (the contract in docs/design.md)."
)
@click.pass_context
def audit_leaks_cmd(ctx: click.Context, holdout: str, files: tuple[str, ...], as_json: bool) -> None:
    """Which holdout members each FILE holds (none given: every registered mixture).

    A FILE is parquet, Arrow, JSON lines, a JSON array or CSV (also .gz or .zst), in any layout: every
    string of every record is read, whatever its column. Exits 0 with the report even when it finds leaks; the
    export gate is what refuses."""

    with open_db(ctx, read_only=True) as store:
        report = audit_leaks(store, holdout, list(files) or None)
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(f"holdout {report.name}: {report.size} members, {report.clean} clean, {report.leaked} leaked")
    echo_table(
        ["file", "rows", "leaked", "near", "sha256"],
        [
            (f.path, f.rows, len(f.leaked_ids), len(f.near_ids), (f.sha256 or "missing")[:16])
            for f in report.files
        ],
    )
    for f in report.files:
        if f.leaked_ids or f.near_ids:
            click.echo(
                f"{f.path}: leaked {', '.join(f.leaked_ids) or '-'}; near {', '.join(f.near_ids) or '-'}"
            )
        if f.note:
            click.echo(f"{f.path}: {f.note}")


@audit_group.command("gate")
@click.option("--set", "set_name", default=None, help="Only this holdout set's members (default: every set).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the transformations' choices.")
@click.option("--limit", default=None, type=click.IntRange(min=1), help="At most this many members (seeded).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def audit_gate_cmd(
    ctx: click.Context, set_name: str | None, seed: int, limit: int | None, as_json: bool
) -> None:
    """How well the holdout gate finds the store's own members in disguise: recall per transformation,
    false refusals of near neighbours (another number, another content word), and what it cannot catch."""
    with open_db(ctx, read_only=True) as store:
        result = audit_gate(store, set_name=set_name, seed=seed, limit=limit)
    if as_json:
        echo_json(result.as_dict())
        return
    cols, rows, mcols, mrows = gate_audit_tables(result)
    click.echo(f"{result.members} member(s), seed {result.seed}")
    echo_table(cols, rows)
    echo_table(mcols, mrows)
    click.echo(result.skipped_line())
    click.echo("not caught by string matching (docs/design.md): " + "; ".join(result.uncaught))


@audit_group.command("decontam")
@click.option("--benchmark", required=True, help="Name of the benchmark (e.g. gsm8k-test).")
@click.option(
    "--path",
    "path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Local test-split file: JSONL or parquet (GSM8K, MATH, MMLU, IFEval fields), MMLU CSV, or an "
    "lm-evaluation-harness samples_*.jsonl.",
)
@click.option(
    "--n",
    "n",
    default=13,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Words per n-gram (13 as in lm-evaluation-harness; 8 is stricter).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["gsm8k", "math", "mmlu", "ifeval", "text", "lm-eval"]),
    help="Benchmark record format (default: detected from the fields).",
)
@click.option(
    "--all-pairs", is_flag=True, help="Check every pair in the store, not only registered mixtures."
)
@click.option("--register", is_flag=True, help="Also store the benchmark so the export gate checks it.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_decontam_cmd(
    ctx: click.Context,
    benchmark: str,
    path: str,
    n: int,
    fmt: str | None,
    all_pairs: bool,
    register: bool,
    as_json: bool,
) -> None:
    """Word n-gram overlap between training text and a benchmark's test items."""
    with open_db(ctx, read_only=not register) as store:
        items = load_benchmark(path, fmt)
        report = decontam(store, benchmark, items, n=n, all_pairs=all_pairs, registered=register)
        if register:  # the audit itself is read-only: the gate's owner stores the benchmark
            register_benchmark(store, benchmark, [(it.item_id, it.text) for it in items], n=n)
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(
        f"benchmark {report.benchmark}: {report.items} items ({report.items_without_ngrams} shorter than "
        f"{report.n} words), {report.training_rows} training rows, {report.contaminated_rows} "
        f"contaminated, {report.contaminated_items} items matched"
        + ("; registered for the export gate" if report.registered else "")
    )
    if report.rows:
        echo_table(
            ["source", "round", "row", "pair_id", "item", "shared", "item text"],
            [
                (
                    r.source,
                    r.round,
                    r.row_index,
                    (r.pair_id or "")[:12],
                    r.item_id,
                    r.shared_ngrams,
                    r.item_text[:60].replace("\n", " "),
                )
                for r in report.rows
            ],
        )
    for note in report.notes:
        click.echo(f"note: {note}")


@audit_group.command("mixtures")
@listing_options
@click.pass_context
def audit_mixtures_cmd(ctx: click.Context, output: str) -> None:
    """Recompute the SHA-256 of every registered mixture and bundle evidence, and run today's holdout gate on
    every round's latest export; exit 3 naming any change, or any mixture the gate would now refuse."""
    with open_db(ctx, read_only=True) as store:
        checks = check_mixtures(store, gate=True)
    for c in checks:
        if c.registered_path:
            click.echo(
                f"warning: {c.registered_path} is not there; checked {c.path} beside the store instead "
                "(the store was moved with its files)",
                err=True,
            )
    echo_rows(
        output,
        ["status", "what", "owner", "path", "sha256"],
        [
            (c.status, c.what, c.owner, c.path, (c.actual or "-")[:16] if output == "table" else c.actual)
            for c in checks
        ],
        json_rows=[c.as_dict() for c in checks],
    )
    if output == "table":
        bad = sum(c.status in FAILING for c in checks)
        click.echo(f"{len(checks)} file(s) checked, {bad} changed or missing")
    refuse_if_changed(checks)


@audit_group.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--suite", help="The eval suite to compare accuracy on (omit for judgments only).")
@click.option(
    "--holdout", help="Count only judged battles of this holdout set.", shell_complete=complete("holdout")
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.pass_context
def audit_compare_cmd(
    ctx: click.Context, a: str, b: str, suite: str | None, holdout: str | None, as_json: bool
) -> None:
    """Model A against B: accuracy with Wilson intervals, paired flips and McNemar; blind-judge tallies."""
    with open_db(ctx, read_only=True) as store:
        c = compare(store, a, b, suite=suite, holdout=holdout)
    if as_json:
        echo_json(c.as_dict())
        return
    if c.accuracy_a is not None:
        assert c.accuracy_b is not None and c.flips is not None  # compare sets all three or none
        echo_table(
            ["model", "suite", "items", "correct", "accuracy", "95% Wilson"],
            [
                (
                    m.model,
                    c.suite,
                    m.items,
                    m.correct,
                    f"{m.accuracy:.4f}",
                    f"[{m.wilson_low:.3f}, {m.wilson_high:.3f}]",
                )
                for m in (c.accuracy_a, c.accuracy_b)
            ],
        )
        f = c.flips
        click.echo(
            f"paired on {f.items} items: {a} right / {b} wrong {f.a_only}, {b} right / {a} wrong "
            f"{f.b_only}; exact McNemar p = {f.mcnemar_p:.4g}"
        )
    for label, t in (("all judged battles", c.judge_all), ("clean subset", c.judge_clean)):
        click.echo(
            f"blind judge, {label} ({t.battles}): {a} {t.a_wins} - {b} {t.b_wins} - ties {t.ties}; "
            f"sign test p = {t.sign_p:.4g}; heavy flaws {a} {t.heavy_flaws_a}, {b} {t.heavy_flaws_b}"
        )


@audit_group.command("report")
@click.option("--model", required=True, help="The round or checkpoint (model) to report on.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for report.html, report.md and the PNG charts.",
)
@click.option(
    "--tokenizer",
    type=click.Path(file_okay=False),
    help="A bundle directory whose tokenizer counts lengths (default: chars/4 estimate).",
)
@click.option(
    "--incumbent",
    default=None,
    help="The model the verdict compares MODEL with (default: its nearest evaluated ancestor).",
)
@click.option(
    "--all-models",
    is_flag=True,
    help="Evaluation, loop table and dose curve over every model in the store, not only MODEL's chain.",
)
@json_option
@click.pass_context
def audit_report_cmd(
    ctx: click.Context,
    model: str,
    out_dir: str,
    tokenizer: str | None,
    incumbent: str | None,
    all_models: bool,
    as_json: bool,
) -> None:
    """Write the provenance report (static HTML with embedded charts, and markdown) for MODEL: the
    verdict against the incumbent first, then what ran, the data and the evaluations."""
    if tokenizer is not None:
        from train.bundle import refuse_remote_code

        refuse_remote_code(tokenizer)  # before the store opens and anything loads the folder
    with open_db(ctx, read_only=True) as store:
        result = write_report(
            store, model, out_dir, tokenizer=tokenizer, incumbent=incumbent, all_models=all_models
        )
    if as_json:
        echo_json(as_plain(result))
        return
    click.echo(
        f"wrote {result['html']} and {result['md']} ({len(result['images'])} chart(s), "
        f"{len(result['sections'])} sections)"
    )


@audit_group.command("lengths")
@click.option(
    "--tokenizer", type=click.Path(file_okay=False), help="A bundle directory whose tokenizer counts."
)
@click.option("--model", help="A registered checkpoint whose bundle tokenizer counts.")
@click.option("--round", "rounds", multiple=True, help="Only this round (repeatable; default: every round).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_lengths_cmd(
    ctx: click.Context, tokenizer: str | None, model: str | None, rounds: tuple[str, ...], as_json: bool
) -> None:
    """Token lengths of prompt/chosen/rejected per round and the share max_length truncates.

    Without --tokenizer or --model, tokens are estimated as ceil(characters / 4)."""

    from train.bundle import refuse_remote_code

    with open_db(ctx, read_only=True) as store:
        counter = make_counter(store, tokenizer=tokenizer, model=model, check_folder=refuse_remote_code)
        report = audit_lengths(store, counter=counter, rounds=list(rounds) or None)
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(f"counted with {report.counter}")
    echo_table(
        [
            "round",
            "rows",
            "max_len",
            "prompt p50/p95/max",
            "chosen p50/p95/max",
            "rejected p50/p95/max",
            "truncated",
            "chosen truncated",
        ],
        [
            (
                r.round,
                r.rows,
                r.max_length,
                *(
                    "/".join(f"{r.stats[k][s]:g}" for s in ("median", "p95", "max"))
                    for k in ("prompt", "chosen", "rejected")
                ),
                f"{r.truncated_rows} ({r.truncated_share:.1%})",
                f"{r.truncated_chosen} ({r.truncated_chosen_share:.1%})",
            )
            for r in report.rounds
        ],
    )
    for note in report.notes:
        click.echo(f"note: {note}")


@audit_group.command("loops")
@click.option("--model", help="Only this model's generations (default: every model).")
@click.option("--suite", help="Only this suite's generations (default: every suite, and none).")
@click.option(
    "--rescan", is_flag=True, help="Scan every output now instead of reading the stored loop flags."
)
@listing_options
@click.pass_context
def audit_loops_cmd(
    ctx: click.Context, model: str | None, suite: str | None, rescan: bool, output: str
) -> None:
    """Repetition loops per model and suite: outputs, flagged, catastrophic, empty, average length.

    The model card's loop table over `generations` (audits.loops: flagged = repeated word 6/10-gram,
    cycle or tail loop; catastrophic = a cycle repeated 100 times or more)."""

    with open_db(ctx, read_only=True) as store:
        rows = loop_table(store, model=model, suite=suite, rescan=rescan)
    if rows or output != "table":
        echo_rows(
            output,
            list(LOOP_TABLE_COLUMNS),
            [tuple(r[c] for c in LOOP_TABLE_COLUMNS) for r in rows],
            json_rows=rows,
        )
    else:
        click.echo("no generations in the store")


@audit_group.command("verifier")
@click.option(
    "--model", default=None, help="Audit this model's stored generations (problems, tasks, eval items)."
)
@click.option(
    "--path",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="Audit a file instead: records with pred (or output), gold, kind, optional dataset and equal/label.",
)
@click.option(
    "--examples", default=3, show_default=True, type=click.IntRange(0, 100), help="Examples per kind of case."
)
@click.option("--json", "as_json", is_flag=True, help="Print the audit as one JSON object.")
@click.pass_context
def audit_verifier_cmd(
    ctx: click.Context, model: str | None, path: str | None, examples: int, as_json: bool
) -> None:
    """What the miners would do: our verdicts (correct / wrong / unknown by reason) and math-verify's,
    per dataset, with the disagreements. Read-only; math-verify runs about 30 rows a second."""
    if (model is None) == (path is None):
        raise click.UsageError("give exactly one of --model and --path")
    if path is not None:
        audit = audit_verifier_file(path, examples)
    else:
        assert model is not None  # exactly one of the two, checked above
        with open_db(ctx, read_only=True) as store:
            audit = audit_verifier_store(store, model, examples)
    if as_json:
        echo_json(audit.as_dict())
        return
    click.echo(f"verifier audit: {audit.source}")
    echo_table(
        ["dataset", "rows", "correct", "wrong", "unknown", "coverage", "mv correct", "mv wrong", "disagree"],
        [
            (
                d.dataset,
                d.rows,
                d.ours["correct"],
                d.ours["wrong"],
                d.ours["unknown"],
                f"{d.coverage:.1%}",
                d.math_verify["correct"],
                d.math_verify["wrong"],
                d.disagreements,
            )
            for d in audit.datasets
        ],
    )
    for d in audit.datasets:
        if d.unknown_reasons:
            click.echo(
                f"{d.dataset}: unknown by reason: "
                + ", ".join(f"{r} {n}" for r, n in d.unknown_reasons.most_common())
            )
        if d.labelled:
            click.echo(
                f"{d.dataset}: against {d.labelled} labels: ours {d.ours_wrong_definite} wrong definite "
                f"({d.ours_right_called_wrong} right answers called wrong), "
                f"math-verify {d.math_verify_wrong} wrong "
                f"({d.math_verify_right_called_wrong} right answers called wrong)"
            )
        for e in d.examples:
            tail = e.output_tail.replace("\n", "\\n")
            click.echo(
                f"  {e.row}: ours {e.ours} ({e.our_answer!r}), math-verify {e.math_verify}, "
                f"gold {e.gold!r}: ...{tail}"
            )
