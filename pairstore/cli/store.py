"""`pairstore` commands over the store itself: sql, ingest, holdout, round, export, lineage.

pairstore --db store.duckdb ingest battles battles.jsonl
pairstore holdout sample judge34 --n 34 --seed 12076
pairstore export --round m11a --out mixtures/
"""

from __future__ import annotations

import csv
import sys

import click

from audits.evals_in import ingest_evals
from pairstore.cli.base import (
    check_seed,
    echo_counts,
    echo_ingest,
    echo_json,
    echo_table,
    open_db,
    stderr_is_tty,
)
from pairstore.export.attach import attach_round
from pairstore.export.run import export_round
from pairstore.holdout.sets import (
    add_exemption,
    add_from_ids_file,
    list_sets,
    remove_member,
    sample_holdout,
    show_set,
)
from pairstore.ingest.arena import FORMATS as ARENA_FORMATS
from pairstore.ingest.arena import OTHERS as ARENA_OTHERS
from pairstore.ingest.tables import (
    ingest_battles,
    ingest_generations,
    ingest_judgments,
    ingest_pairs,
    ingest_problems,
)
from pairstore.rounds.lineage import describe, lineage
from pairstore.rounds.recipes import add_round, list_rounds, load_shipped_recipes, show_round
from pairstore.store.sql import run_sql


@click.command("sql")
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print rows as a JSON list of objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print rows as CSV.")
@click.option(
    "--write",
    is_flag=True,
    help="Open the store for writing: every statement in one transaction, all or nothing; holdout, "
    "holdout_sets, holdout_exemptions, audit_log, exports and export_rows stay as they are "
    "(default: read-only).",
)
@click.option(
    "--allow-files",
    is_flag=True,
    help="Allow COPY, ATTACH, INSTALL, LOAD and file-reading functions (default: the store only).",
)
@click.pass_context
def sql_cmd(ctx, query, as_json, as_csv, write, allow_files):
    """Run a SQL QUERY against the store and print the result."""
    with open_db(ctx, read_only=not write) as store:
        columns, rows = run_sql(store, query, write=write, allow_files=allow_files)
    if as_json:
        echo_json([dict(zip(columns, r)) for r in rows])
    elif as_csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)
    elif columns:
        echo_table(columns, rows)


@click.group("ingest")
def ingest_group():
    """Bring battles, problems, generations, pairs, judgments and evals into the store."""


@ingest_group.command("battles")
@click.argument("file", type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["native", *ARENA_FORMATS]),
    default="native",
    show_default=True,
    help="native: pairstore's battle records; arena: lmsys/chatbot_arena_conversations rows; "
    "arena55k: lmsys-arena-human-preference-55k rows (train.csv); fastchat-log: FastChat's raw vote logs "
    "(*-conv.json lines, or a folder of them), cleaned as FastChat's own cleaning does.",
)
@click.option(
    "--own-model",
    "own_models",
    multiple=True,
    metavar="NAME",
    help="arena formats: the model whose side votes are read from (repeat for several names).",
)
@click.option(
    "--others",
    type=click.Choice(ARENA_OTHERS),
    default="skip",
    show_default=True,
    help="arena formats, battles no own model plays: skip them (counted) or store them as pairs of "
    "source 'arena', the winner's answer chosen.",
)
@click.pass_context
def ingest_battles_cmd(ctx, file, fmt, own_models, others):
    """Ingest human side-by-side battles from FILE: JSONL, parquet, CSV, a Hub folder or a save_to_disk folder.

    Native record: battle_id, prompt (string or messages), own_answer, opponent_answer, vote
    (win|loss|tie|both_bad, from the own model's side), optional category, own_model,
    opponent_model, voted_at; a multi-turn battle gives turns: [{user, own, opponent}, ...].
    Public Chatbot Arena files go in as they are with --format arena or arena55k and --own-model NAME;
    a FastChat server's own vote logs with --format fastchat-log.
    """

    with open_db(ctx) as store:
        echo_ingest(
            ingest_battles(
                store, file, fmt=fmt, own_models=own_models, others=others, progress=stderr_is_tty()
            )
        )


@ingest_group.command("problems")
@click.option("--dataset", type=click.Choice(["gsm8k", "math"]), required=True, help="Which dataset.")
@click.option(
    "--path",
    type=click.Path(),
    help="Local copy in the dataset's own columns: a JSONL, parquet or CSV file, a Hub folder or a "
    "save_to_disk folder (its train split).",
)
@click.option("--split", default="train", show_default=True, help="Only train is accepted.")
@click.pass_context
def ingest_problems_cmd(ctx, dataset, path, split):
    """Ingest GSM8K (openai/gsm8k) or MATH (EleutherAI/hendrycks_math, or MATH-500-shaped rows) train problems."""
    with open_db(ctx) as store:
        echo_ingest(ingest_problems(store, dataset, path=path, split=split, progress=stderr_is_tty()))


@ingest_group.command("generations")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model", required=True, help="Name of the model that wrote the outputs.")
@click.pass_context
def ingest_generations_cmd(ctx, file, model):
    """Ingest a model's outputs (on problems, tasks, eval items or free prompts) from FILE.

    Record: output, item_kind (problem|task|eval_item|prompt), item_id or prompt, optional
    sample_index, temperature, top_p, max_new_tokens, seed, suite, decoding.
    """

    with open_db(ctx) as store:
        echo_ingest(ingest_generations(store, file, model=model, progress=stderr_is_tty()))


@ingest_group.command("pairs")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--source", required=True, help="Source name the pairs are stored under.")
@click.pass_context
def ingest_pairs_cmd(ctx, file, source):
    """Ingest preference pairs (prompt, chosen, rejected as strings or message lists) from FILE."""
    with open_db(ctx) as store:
        echo_ingest(ingest_pairs(store, file, source=source, progress=stderr_is_tty()))


@ingest_group.command("judgments")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def ingest_judgments_cmd(ctx, file):
    """Ingest blind judge verdicts: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b."""
    with open_db(ctx) as store:
        echo_ingest(ingest_judgments(store, file, progress=stderr_is_tty()))


@ingest_group.command("evals")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model", required=True, help="The model (checkpoint name) these results belong to.")
@click.option("--suite", required=True, help="The suite name (v2, v6, lf2, gsm8k, ...).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "lm-eval"]),
    default="jsonl",
    show_default=True,
    help="jsonl: {item_id, correct|score, ...}; lm-eval: lm-evaluation-harness samples_*.jsonl.",
)
@click.option("--metric", help="lm-eval: the metric field to score (default: the first known one present).")
@click.option("--filter", "filter_name", help="lm-eval: the filter to keep (default: the first in the file).")
@click.pass_context
def ingest_evals_cmd(ctx, file, model, suite, fmt, metric, filter_name):
    """Per-item eval results (simple JSONL or lm-eval samples log) from FILE into `evals`."""
    with open_db(ctx) as store:
        result = ingest_evals(
            store, file, model=model, suite=suite, fmt=fmt, metric=metric, filter_name=filter_name
        )
    click.echo(
        f"evals {model}/{suite}: read {result['read']}, added {result['added']}, "
        f"already present {result['skipped']}"
        + (f", filter {result['filter']}" if result["filter"] else "")
        + (f"; {result['eval_items_added']} new eval item(s) held out" if result["eval_items_added"] else "")
    )


@click.group("holdout")
def holdout_group():
    """Named holdout sets that no training mixture may touch."""


@holdout_group.command("add")
@click.argument("set_name", metavar="SET")
@click.option(
    "--ids-file",
    required=True,
    type=click.Path(dir_okay=False),
    help="One battle, task or eval-item id per line.",
)
@click.pass_context
def holdout_add_cmd(ctx, set_name, ids_file):
    """Add the ids in a file to holdout SET (created if new)."""
    with open_db(ctx) as store:
        n = add_from_ids_file(store, set_name, ids_file)
    click.echo(f"{set_name}: {n} members added")


@holdout_group.command("sample")
@click.argument("set_name", metavar="SET")
@click.option("--n", type=int, required=True, help="How many battles.")
@click.option("--seed", callback=check_seed, type=int, required=True, help="Sampling seed.")
@click.option("--where", help="SQL filter over battles to sample from.")
@click.pass_context
def holdout_sample_cmd(ctx, set_name, n, seed, where):
    """Sample N battles into SET, stratified by vote and category (deterministic under --seed)."""
    with open_db(ctx) as store:
        ids = sample_holdout(store, set_name, n=n, seed=seed, where=where)
    click.echo(f"{set_name}: {len(ids)} battles sampled (seed {seed})")


@holdout_group.command("list")
@click.pass_context
def holdout_list_cmd(ctx):
    """List holdout sets with their active and removed member counts."""
    with open_db(ctx, read_only=True) as store:
        rows = list_sets(store)
    echo_table(
        ["set", "active", "removed", "method", "seed"],
        [(r["set_name"], r["active"], r["removed"], r["method"], r["seed"]) for r in rows],
    )


@holdout_group.command("show")
@click.argument("set_name", metavar="SET")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def holdout_show_cmd(ctx, set_name, as_json):
    """Show the members of SET and their status."""
    with open_db(ctx, read_only=True) as store:
        rows = show_set(store, set_name)
    if as_json:
        echo_json(rows)
    else:
        echo_table(
            ["item_id", "kind", "status", "match_key", "reason"],
            [(r["item_id"], r["item_kind"], r["status"], r["match_key"], r["removed_reason"]) for r in rows],
        )


@holdout_group.command("remove")
@click.argument("set_name", metavar="SET")
@click.argument("item_id", metavar="ID")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@click.pass_context
def holdout_remove_cmd(ctx, set_name, item_id, reason):
    """Remove member ID from SET (logged with the reason; the row is kept as 'removed')."""
    with open_db(ctx) as store:
        remove_member(store, set_name, item_id, reason=reason)
    click.echo(f"{set_name}: removed {item_id}")


@holdout_group.command("exempt")
@click.argument("set_name", metavar="SET")
@click.argument("item_id")
@click.argument("pair_id")
@click.option(
    "--reason", required=True, help="Why this pair may train although it matches the member (logged)."
)
@click.pass_context
def holdout_exempt_cmd(ctx, set_name, item_id, pair_id, reason):
    """Let PAIR_ID through the export gate for member ITEM_ID of SET (logged; listed in evidence)."""
    with open_db(ctx) as store:
        added = add_exemption(store, set_name, item_id, pair_id, reason=reason)
    click.echo(f"{'exempted' if added else 'already exempted'}: pair {pair_id} for {set_name}/{item_id}")


@click.group("round")
def round_group():
    """Round recipes: add, list, show, attach past mixtures."""


@round_group.command("add")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--shipped", is_flag=True, help="Add every recipe shipped under pairstore/recipes/ (parents first)."
)
@click.pass_context
def round_add_cmd(ctx, files, shipped):
    """Register recipe FILES (TOML) as rounds; the same file again changes nothing."""
    if not files and not shipped:
        raise click.UsageError("give recipe FILES or --shipped")
    with open_db(ctx) as store:
        if shipped:
            echo_counts("shipped recipes", {k: len(v) for k, v in load_shipped_recipes(store).items()})
        for path in files:
            recipe, added = add_round(store, path)
            click.echo(
                f"{'added' if added else 'unchanged'}: {recipe.name} ({recipe.kind}, "
                f"sha256 {recipe.sha256[:12]})"
            )


@round_group.command("list")
@click.pass_context
def round_list_cmd(ctx):
    """List registered rounds with kind, parents, alpha, job and exports."""
    with open_db(ctx, read_only=True) as store:
        rows = list_rounds(store)
    echo_table(
        ["name", "kind", "parents", "alpha", "job", "exports", "sha256"],
        [
            (r["name"], r["kind"], r["parents"], r["alpha"], r["job_id"], r["exports"], r["sha256"])
            for r in rows
        ],
    )


@round_group.command("show")
@click.argument("name")
@click.option("--toml", "as_toml", is_flag=True, help="Print the recipe's TOML text as registered.")
@click.pass_context
def round_show_cmd(ctx, name, as_toml):
    """Show round NAME: the stored recipe (JSON), its SHA-256 and its registered mixtures."""
    with open_db(ctx, read_only=True) as store:
        info = show_round(store, name)
    if as_toml:
        click.echo(info["toml"], nl=False)
    else:
        echo_json({k: v for k, v in info.items() if k != "toml"})


@round_group.command("attach")
@click.argument("name")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def round_attach_cmd(ctx, name, file):
    """Register FILE (parquet/JSONL pairs made elsewhere) as round NAME's training data (not gated)."""
    with open_db(ctx) as store:
        r = attach_round(store, name, file)
    if r.already:
        click.echo(f"already attached to {name}: {r.path} ({r.rows} rows, sha256 {r.sha256[:12]})")
        return
    click.echo(f"attached to {name}: {r.path} ({r.rows} rows, sha256 {r.sha256[:12]}, export {r.export_id})")
    echo_counts(
        "rows",
        {"matched": r.matched, "new pairs": r.added, **{f"dropped {k}": v for k, v in r.dropped.items()}},
    )


@click.command("export")
@click.option("--round", "round_name", required=True, help="The round whose mixture to export.")
@click.option(
    "--out",
    "out_dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for NAME.parquet, NAME.sft.parquet and NAME.training_evidence.json.",
)
@click.option(
    "--bundle",
    type=click.Path(file_okay=False),
    help='Parent bundle folder whose system_prompt.txt a recipe with system_prompt = "bundle" uses.',
)
@click.option(
    "--system-prompt-file",
    type=click.Path(dir_okay=False),
    help='A system_prompt.txt to use for system_prompt = "bundle" (instead of --bundle).',
)
@click.option(
    "--replace",
    is_flag=True,
    help="Overwrite registered files in --out that would get other bytes (their registration is marked "
    "superseded); without it such an export is refused.",
)
@click.pass_context
def export_cmd(ctx, round_name, out_dir, bundle, system_prompt_file, replace):
    """Write a round's mixture through the holdout gate (exit 3 and nothing written on a hit)."""
    with open_db(ctx) as store:
        r = export_round(
            store, round_name, out_dir, bundle=bundle, system_prompt_file=system_prompt_file, replace=replace
        )
    for note in r.notes:
        click.echo(f"note: {note}")
    if r.superseded:
        click.echo(f"superseded: {', '.join(r.superseded)}")
    for info in r.files.values():
        click.echo(f"{info['path']}: {info['rows']} rows, sha256 {info['sha256']}")
    click.echo(f"{r.evidence_path}")
    echo_counts("rows by source", r.rows_by_source)
    for b in r.blocks:
        if b["note"]:
            click.echo(f"note: block {b['source']}: {b['note']}")
    if r.gate.get("exempted"):
        click.echo(f"gate: passed with {len(r.gate['exempted'])} exempted hit(s)")
    for note in r.gate.get("notes", []):
        click.echo(f"note: {note}")


@click.command("lineage")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the chain as JSON.")
@click.pass_context
def lineage_cmd(ctx, name, as_json):
    """Print the chain of rounds from the base model to NAME, with mixtures where registered."""
    with open_db(ctx, read_only=True) as store:
        stages = lineage(store, name)
    if as_json:
        echo_json(stages)
        return
    for i, s in enumerate(stages, start=1):
        job = f"  job {s['job_id']}" if s["job_id"] else ""
        click.echo(f"{i:>2}. {s['name']:<8} {s['kind']:<5} {describe(s)}{job}")
        for m in s["mixtures"]:
            click.echo(f"      mixture ({m['kind']}): {m['path']}  {m['rows']} rows  sha256 {m['sha256']}")
