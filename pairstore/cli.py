"""The `pairstore` command line: thin wrappers over library functions.

Each command opens the store, calls one library function and prints its
result. The library's own exceptions become one line on stderr and the exit
status of DESIGN.md: 0 success, 2 bad usage or input, 3 refused by a gate,
1 anything else. Heavy modules are imported inside the commands, so
`pairstore --help` and the store commands start fast.

    pairstore --db store.duckdb ingest battles battles.jsonl
    pairstore sql "SELECT * FROM pairs_by_source"
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import click
from click.core import ParameterSource

from audits.compare import compare
from audits.decontam import decontam
from audits.evals_in import ingest_evals
from audits.leaks import audit_leaks
from audits.lengths import audit_lengths, make_counter
from audits.loops import LOOP_TABLE_COLUMNS, loop_table
from audits.mixtures import check_mixtures, refuse_if_changed
from audits.report import write_report
from generators.registry import FAMILIES, resolve_families
from generators.tasks import generate_loopfix
from miners.registry import miners, run_miner
from pairstore.attach import attach_round
from pairstore.checkpoints import register_checkpoint
from pairstore.demo import closing_lines, run_demo
from pairstore.errors import PairstoreError
from pairstore.export import export_round
from pairstore.holdout import (
    add_exemption,
    add_from_ids_file,
    list_sets,
    remove_member,
    sample_holdout,
    show_set,
)
from pairstore.ingest import (
    ingest_battles,
    ingest_generations,
    ingest_judgments,
    ingest_pairs,
    ingest_problems,
)
from pairstore.lineage import describe, lineage
from pairstore.recipes import add_round, list_rounds, load_shipped_recipes, show_round
from pairstore.sql import run_sql
from pairstore.store import open_store
from train.dpo import train_dpo_at
from train.eval import run_eval
from train.launch import emit_sbatch
from train.merge import merge_adapter
from train.sample import sample
from train.soup import soup


class _CliError(click.ClickException):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.exit_code = code

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


class PairstoreGroup(click.Group):
    """Turns PairstoreError (and a broken pipe) into one line and an exit status."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except PairstoreError as e:
            raise _CliError(str(e), e.exit_code) from None
        except KeyboardInterrupt:
            raise _CliError("interrupted; nothing was committed", 1) from None


def open_db(ctx: click.Context, *, read_only: bool = False):
    """The store named by --db / PAIRSTORE_DB, for one command."""

    return open_store(ctx.find_root().obj["db"], read_only=read_only)


def echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=True, default=str, ensure_ascii=False))


def echo_table(columns: list[str], rows: list[tuple]) -> None:
    """A plain aligned text table."""
    cells = [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


def echo_counts(title: str, counts: dict) -> None:
    """'title: a=1, b=2' — kept/dropped tallies of ingests and miners."""
    body = ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"
    click.echo(f"{title}: {body}")


@click.group(cls=PairstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", envvar="PAIRSTORE_DB", default="pairstore.duckdb", show_default=True,
              help="The store file (or set PAIRSTORE_DB).")
@click.version_option(package_name="pairstore")
@click.pass_context
def cli(ctx, db):
    """pairstore: preference pairs, holdout gate and provenance for DPO rounds."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


def main(argv=None):
    cli.main(args=argv, prog_name="pairstore")


# ============================================================================
# section: sql (store)
# ============================================================================

@cli.command("sql")
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print rows as a JSON list of objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print rows as CSV.")
@click.option("--write", is_flag=True, help="Open the store for writing (default: read-only).")
@click.pass_context
def sql_cmd(ctx, query, as_json, as_csv, write):
    """Run a SQL QUERY against the store and print the result."""

    with open_db(ctx, read_only=not write) as store:
        columns, rows = run_sql(store, query, write=write)
    if as_json:
        echo_json([dict(zip(columns, r)) for r in rows])
    elif as_csv:

        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)
    elif columns:
        echo_table(columns, rows)


# ============================================================================
# section: ingest (store)
# ============================================================================

@cli.group("ingest")
def ingest_group():
    """Bring battles, problems, generations, pairs, judgments and evals into the store."""


def _tty() -> bool:
    return sys.stderr.isatty()


def _echo_ingest(result) -> None:
    skipped = ", ".join(f"{k}={v}" for k, v in sorted(result.skipped.items()))
    click.echo(f"{result.kind}: read {result.read}, added {result.added}" + (f", skipped {skipped}" if skipped else ""))


@ingest_group.command("battles")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def ingest_battles_cmd(ctx, file):
    """Ingest human side-by-side battles from a JSONL or parquet FILE.

    Record: battle_id, prompt (string or messages), own_answer, opponent_answer, vote
    (win|loss|tie|both_bad, from the own model's side), optional category, own_model,
    opponent_model, voted_at; a multi-turn battle gives turns: [{user, own, opponent}, ...].
    """

    with open_db(ctx) as store:
        _echo_ingest(ingest_battles(store, file, progress=_tty()))


@ingest_group.command("problems")
@click.option("--dataset", type=click.Choice(["gsm8k", "math"]), required=True, help="Which dataset.")
@click.option("--path", type=click.Path(dir_okay=False), help="Local parquet/JSONL in the dataset's own columns.")
@click.option("--split", default="train", show_default=True, help="Only train is accepted.")
@click.pass_context
def ingest_problems_cmd(ctx, dataset, path, split):
    """Ingest GSM8K (openai/gsm8k) or MATH (EleutherAI/hendrycks_math) train problems."""

    with open_db(ctx) as store:
        _echo_ingest(ingest_problems(store, dataset, path=path, split=split, progress=_tty()))


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
        _echo_ingest(ingest_generations(store, file, model=model, progress=_tty()))


@ingest_group.command("pairs")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--source", required=True, help="Source name the pairs are stored under.")
@click.pass_context
def ingest_pairs_cmd(ctx, file, source):
    """Ingest preference pairs (prompt, chosen, rejected as strings or message lists) from FILE."""

    with open_db(ctx) as store:
        _echo_ingest(ingest_pairs(store, file, source=source, progress=_tty()))


@ingest_group.command("judgments")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def ingest_judgments_cmd(ctx, file):
    """Ingest blind judge verdicts: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b."""

    with open_db(ctx) as store:
        _echo_ingest(ingest_judgments(store, file, progress=_tty()))


# ============================================================================
# section: holdout (store)
# ============================================================================

@cli.group("holdout")
def holdout_group():
    """Named holdout sets that no training mixture may touch."""


@holdout_group.command("add")
@click.argument("set_name", metavar="SET")
@click.option("--ids-file", required=True, type=click.Path(dir_okay=False),
              help="One battle, task or eval-item id per line.")
@click.pass_context
def holdout_add_cmd(ctx, set_name, ids_file):
    """Add the ids in a file to holdout SET (created if new)."""

    with open_db(ctx) as store:
        n = add_from_ids_file(store, set_name, ids_file)
    click.echo(f"{set_name}: {n} members added")


@holdout_group.command("sample")
@click.argument("set_name", metavar="SET")
@click.option("--n", type=int, required=True, help="How many battles.")
@click.option("--seed", type=int, required=True, help="Sampling seed.")
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
    echo_table(["set", "active", "removed", "method", "seed"],
               [(r["set_name"], r["active"], r["removed"], r["method"], r["seed"]) for r in rows])


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
        echo_table(["item_id", "kind", "status", "match_key", "reason"],
                   [(r["item_id"], r["item_kind"], r["status"], r["match_key"], r["removed_reason"]) for r in rows])


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


# ============================================================================
# section: generate (generators)
# ============================================================================

@cli.group("generate")
def generate_group():
    """Generate synthetic tasks with gold answers computed by code."""


@generate_group.command("loopfix")
@click.option("--n", "n", type=click.IntRange(min=0), required=True, help="How many tasks to generate.")
@click.option("--seed", type=int, required=True, help="Seed: the same seed and options give the same tasks.")
@click.option("--families", default=None,
              help="Comma-separated family names (default: all; see `pairstore generate families`).")
@click.option("--suite", default=None,
              help="Write the tasks as this evaluation suite: eval_items plus a holdout set of that name. "
                   "Without it the tasks are for training and avoid every held-out task key.")
@click.option("--difficulty", type=click.IntRange(1, 3), default=None,
              help="Fix the difficulty level (1 easy .. 3 hard); default: drawn per task.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def generate_loopfix_cmd(ctx, n, seed, families, suite, difficulty, as_json):
    """Generate loop-fix tasks (letter/word counts, division, digit sums, ...) into the store."""

    names = resolve_families(families)  # an unknown family fails before the store is opened
    with open_db(ctx) as store:
        summary = generate_loopfix(store, n, seed, names, suite, difficulty=difficulty)
    if as_json:
        echo_json(summary.to_dict())
        return
    echo_table(["family", "tasks"], list(summary.families.items()))
    echo_counts(f"{'suite ' + suite if suite else 'training'} (seed {seed})",
                {"tasks_inserted": summary.tasks_inserted, "tasks_existing": summary.tasks_existing,
                 "eval_items_inserted": summary.eval_items_inserted, "holdout_added": summary.holdout_added,
                 "excluded_keys": summary.excluded_keys})


@generate_group.command("families")
def generate_families_cmd():
    """List the task families: modes, phrasings per mode and difficulty levels."""

    rows = [(f.name, ", ".join(f"{m} ({len(p)})" for m, p in f.phrasings.items()), f.difficulty_help)
            for f in FAMILIES.values()]
    echo_table(["family", "modes (phrasings)", "difficulty"], rows)


# ============================================================================
# section: mine (miners)
# ============================================================================

@cli.group("mine")
def mine_group():
    """Mine preference pairs from what the store holds."""


def _run_miner(ctx, name: str, as_json: bool, **options) -> None:
    """Open the store, run the registered miner `name`, print kept and dropped by reason."""

    with open_db(ctx) as store:
        result = run_miner(store, name, **options)
    if as_json:
        echo_json(result.as_dict())
        return
    click.echo(f"{result.miner} v{result.version}: kept {result.kept} new pairs "
               f"({len(result.pair_ids)} produced, {result.new_origins} new origins)")
    if result.by_source:
        echo_counts("by source", dict(result.by_source))
    echo_counts("dropped", dict(result.dropped))
    if result.stats:
        echo_counts("looked at", dict(result.stats))


_mine_json = click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
_mine_workers = click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
                             help="Processes that verify and scan; more helps on idle cores only. "
                                  "The result does not depend on it.")


@mine_group.command("list")
def mine_list_cmd():
    """List the registered miners and their versions."""

    echo_table(["miner", "version", "what"], [(s.name, s.version, s.summary) for s in miners().values()])


@mine_group.command("battle")
@click.option("--where", default=None, help="Only battles matching this SQL condition over `battles`.")
@_mine_json
@click.pass_context
def mine_battle_cmd(ctx, where, as_json):
    """Pairs from battle votes: win → own chosen, loss → opponent chosen; holdout battles skipped."""
    _run_miner(ctx, "battle", as_json, where=where)


@mine_group.command("self-repair")
@click.option("--model", required=True, help="The model whose sampled generations are mined.")
@click.option("--dataset", required=True, type=click.Choice(["gsm8k", "math"]), help="Problems of this dataset.")
@click.option("--pairs-per-problem", default=1, show_default=True, type=click.IntRange(min=1),
              help="At most this many pairs per problem.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the pair selection.")
@click.option("--no-gold-repair", is_flag=True,
              help="Do not use the reference solution where every sample is wrong.")
@_mine_workers
@_mine_json
@click.pass_context
def mine_self_repair_cmd(ctx, model, dataset, pairs_per_problem, seed, no_gold_repair, workers, as_json):
    """Verified-correct vs wrong samples of a model on GSM8K/MATH (gold solution where all are wrong)."""
    _run_miner(ctx, "self_repair", as_json, model=model, dataset=dataset, pairs_per_problem=pairs_per_problem,
               seed=seed, gold_repair=not no_gold_repair, workers=workers)


@mine_group.command("loopfix")
@click.option("--model", required=True, help="The model whose generations on generated tasks are mined.")
@click.option("--per-task", default=None, type=click.IntRange(min=1),
              help="At most this many pairs per task (seeded pick; default: all).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the per-task pick.")
@_mine_workers
@_mine_json
@click.pass_context
def mine_loopfix_cmd(ctx, model, per_task, seed, workers, as_json):
    """Wrong or looped outputs on generated tasks rejected against the canonical answer."""
    _run_miner(ctx, "loopfix", as_json, model=model, per_task=per_task, seed=seed, workers=workers)


@mine_group.command("style")
@click.option("--model", default=None, help="Only this model's generations (default: all models).")
@click.option("--from-pairs", is_flag=True, help="Fix the chosen side of stored pairs instead of generations.")
@click.option("--source", default=None, help="With --from-pairs: only pairs of this source.")
@_mine_json
@click.pass_context
def mine_style_cmd(ctx, model, from_pairs, source, as_json):
    """Hedging tails removed and final-answer lines fixed: fixed answer chosen, original rejected."""
    _run_miner(ctx, "style", as_json, model=model, from_pairs=from_pairs, source=source)


@mine_group.command("ultrafeedback")
@click.option("--path", default=None, type=click.Path(),
              help="Local parquet/JSONL file or folder of the dataset (offline); default: the Hub.")
@click.option("--limit", default=None, type=click.IntRange(min=1), help="Keep a seeded sample of N rows.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the --limit sample.")
@click.option("--split", default="train_prefs", show_default=True, help="The dataset split.")
@_mine_json
@click.pass_context
def mine_ultrafeedback_cmd(ctx, path, limit, seed, split, as_json):
    """Import HuggingFaceH4/ultrafeedback_binarized preference pairs (source 'ultrafeedback')."""
    _run_miner(ctx, "ultrafeedback", as_json, path=path, limit=limit, seed=seed, split=split)


@mine_group.command("compliance")
@click.argument("file", type=click.Path())
@_mine_json
@click.pass_context
def mine_compliance_cmd(ctx, file, as_json):
    """Import handcrafted compliance pairs and NLL rows from a JSONL/parquet FILE."""
    _run_miner(ctx, "compliance", as_json, path=file)


# ============================================================================
# section: round / export / lineage (recipes and export)
# ============================================================================

@cli.group("round")
def round_group():
    """Round recipes: add, list, show, attach past mixtures."""


@round_group.command("add")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--shipped", is_flag=True, help="Add every recipe shipped under pairstore/recipes/ (parents first).")
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
            click.echo(f"{'added' if added else 'unchanged'}: {recipe.name} ({recipe.kind}, "
                       f"sha256 {recipe.sha256[:12]})")


@round_group.command("list")
@click.pass_context
def round_list_cmd(ctx):
    """List registered rounds with kind, parents, alpha, job and exports."""

    with open_db(ctx, read_only=True) as store:
        rows = list_rounds(store)
    echo_table(["name", "kind", "parents", "alpha", "job", "exports", "sha256"],
               [(r["name"], r["kind"], r["parents"], r["alpha"], r["job_id"], r["exports"], r["sha256"])
                for r in rows])


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
    echo_counts("rows", {"matched": r.matched, "new pairs": r.added, **{f"dropped {k}": v
                                                                        for k, v in r.dropped.items()}})


@cli.command("export")
@click.option("--round", "round_name", required=True, help="The round whose mixture to export.")
@click.option("--out", "out_dir", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Folder for NAME.parquet, NAME.sft.parquet and NAME.training_evidence.json.")
@click.option("--bundle", type=click.Path(file_okay=False),
              help="Parent bundle folder whose system_prompt.txt a recipe with system_prompt = \"bundle\" uses.")
@click.option("--system-prompt-file", type=click.Path(dir_okay=False),
              help="A system_prompt.txt to use for system_prompt = \"bundle\" (instead of --bundle).")
@click.pass_context
def export_cmd(ctx, round_name, out_dir, bundle, system_prompt_file):
    """Write a round's mixture through the holdout gate (exit 3 and nothing written on a hit)."""

    with open_db(ctx) as store:
        r = export_round(store, round_name, out_dir, bundle=bundle, system_prompt_file=system_prompt_file)
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


@cli.command("lineage")
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


@holdout_group.command("exempt")
@click.argument("set_name", metavar="SET")
@click.argument("item_id")
@click.argument("pair_id")
@click.option("--reason", required=True, help="Why this pair may train although it matches the member (logged).")
@click.pass_context
def holdout_exempt_cmd(ctx, set_name, item_id, pair_id, reason):
    """Let PAIR_ID through the export gate for member ITEM_ID of SET (logged; listed in evidence)."""

    with open_db(ctx) as store:
        added = add_exemption(store, set_name, item_id, pair_id, reason=reason)
    click.echo(f"{'exempted' if added else 'already exempted'}: pair {pair_id} for {set_name}/{item_id}")


# ============================================================================
# section: audit (audits)
# ============================================================================

@cli.group("audit")
def audit_group():
    """Read-only analyses: leaks, decontamination, mixtures, lengths, loops, compare, report."""


@audit_group.command("leaks")
@click.option("--holdout", "holdout", required=True, help="The holdout set to look for.")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the DESIGN.md JSON object.")
@click.pass_context
def audit_leaks_cmd(ctx, holdout, files, as_json):
    """Which holdout members each pair FILE holds (none given: every registered mixture).

    Exits 0 with the report even when it finds leaks; the export gate is what refuses."""

    with open_db(ctx, read_only=True) as store:
        report = audit_leaks(store, holdout, list(files) or None)
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(f"holdout {report.name}: {report.size} members, {report.clean} clean, {report.leaked} leaked")
    echo_table(["file", "rows", "leaked", "near", "sha256"],
               [(f.path, f.rows, len(f.leaked_ids), len(f.near_ids), (f.sha256 or "missing")[:16])
                for f in report.files])
    for f in report.files:
        if f.leaked_ids or f.near_ids:
            click.echo(f"{f.path}: leaked {', '.join(f.leaked_ids) or '-'}; near {', '.join(f.near_ids) or '-'}")
        if f.note:
            click.echo(f"{f.path}: {f.note}")


@audit_group.command("decontam")
@click.option("--benchmark", required=True, help="Name of the benchmark (e.g. gsm8k-test).")
@click.option("--path", "path", required=True, type=click.Path(dir_okay=False),
              help="Local test-split file: JSONL or parquet (GSM8K, MATH, MMLU, IFEval fields) or MMLU CSV.")
@click.option("--n", "n", default=13, show_default=True, type=click.IntRange(1, 64),
              help="Words per n-gram (13 as in lm-evaluation-harness; 8 is stricter).")
@click.option("--format", "fmt", type=click.Choice(["gsm8k", "math", "mmlu", "ifeval", "text"]),
              help="Benchmark record format (default: detected from the fields).")
@click.option("--all-pairs", is_flag=True, help="Check every pair in the store, not only registered mixtures.")
@click.option("--register", is_flag=True, help="Also store the benchmark so the export gate checks it.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_decontam_cmd(ctx, benchmark, path, n, fmt, all_pairs, register, as_json):
    """Word n-gram overlap between training text and a benchmark's test items."""

    with open_db(ctx, read_only=not register) as store:
        report = decontam(store, benchmark, path, n=n, fmt=fmt, all_pairs=all_pairs, register=register)
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(f"benchmark {report.benchmark}: {report.items} items ({report.items_without_ngrams} shorter than "
               f"{report.n} words), {report.training_rows} training rows, {report.contaminated_rows} "
               f"contaminated, {report.contaminated_items} items matched"
               + ("; registered for the export gate" if report.registered else ""))
    if report.rows:
        echo_table(["source", "round", "row", "pair_id", "item", "shared", "item text"],
                   [(r.source, r.round, r.row_index, (r.pair_id or "")[:12], r.item_id, r.shared_ngrams,
                     r.item_text[:60].replace("\n", " ")) for r in report.rows])
    for note in report.notes:
        click.echo(f"note: {note}")


@audit_group.command("mixtures")
@click.option("--json", "as_json", is_flag=True, help="Print every check as JSON.")
@click.pass_context
def audit_mixtures_cmd(ctx, as_json):
    """Recompute the SHA-256 of every registered mixture and bundle evidence; exit 3 naming any change."""

    with open_db(ctx, read_only=True) as store:
        checks = check_mixtures(store)
    if as_json:
        echo_json([c.as_dict() for c in checks])
    else:
        echo_table(["status", "what", "owner", "path", "sha256"],
                   [(c.status, c.what, c.owner, c.path, (c.actual or "-")[:16]) for c in checks])
        bad = sum(c.status != "ok" for c in checks)
        click.echo(f"{len(checks)} file(s) checked, {bad} changed or missing")
    refuse_if_changed(checks)


@audit_group.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--suite", help="The eval suite to compare accuracy on (omit for judgments only).")
@click.option("--holdout", help="Count only judged battles of this holdout set.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.pass_context
def audit_compare_cmd(ctx, a, b, suite, holdout, as_json):
    """Model A against B: accuracy with Wilson intervals, paired flips and McNemar; blind-judge tallies."""

    with open_db(ctx, read_only=True) as store:
        c = compare(store, a, b, suite=suite, holdout=holdout)
    if as_json:
        echo_json(c.as_dict())
        return
    if c.accuracy_a is not None:
        echo_table(["model", "suite", "items", "correct", "accuracy", "95% Wilson"],
                   [(m.model, c.suite, m.items, m.correct, f"{m.accuracy:.4f}",
                     f"[{m.wilson_low:.3f}, {m.wilson_high:.3f}]") for m in (c.accuracy_a, c.accuracy_b)])
        f = c.flips
        click.echo(f"paired on {f.items} items: {a} right / {b} wrong {f.a_only}, {b} right / {a} wrong "
                   f"{f.b_only}; exact McNemar p = {f.mcnemar_p:.4g}")
    for label, t in (("all judged battles", c.judge_all), ("clean subset", c.judge_clean)):
        click.echo(f"blind judge, {label} ({t.battles}): {a} {t.a_wins} - {b} {t.b_wins} - ties {t.ties}; "
                   f"sign test p = {t.sign_p:.4g}; heavy flaws {a} {t.heavy_flaws_a}, {b} {t.heavy_flaws_b}")


@audit_group.command("report")
@click.option("--model", required=True, help="The round (model) to report on.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for report.html, report.md and the PNG charts.")
@click.option("--tokenizer", type=click.Path(file_okay=False),
              help="A bundle directory whose tokenizer counts lengths (default: chars/4 estimate).")
@click.pass_context
def audit_report_cmd(ctx, model, out_dir, tokenizer):
    """Write the provenance report (static HTML with embedded charts, and markdown) for MODEL."""

    with open_db(ctx, read_only=True) as store:
        result = write_report(store, model, out_dir, tokenizer=tokenizer)
    click.echo(f"wrote {result['html']} and {result['md']} ({len(result['images'])} chart(s), "
               f"{len(result['sections'])} sections)")


@audit_group.command("lengths")
@click.option("--tokenizer", type=click.Path(file_okay=False), help="A bundle directory whose tokenizer counts.")
@click.option("--model", help="A registered checkpoint whose bundle tokenizer counts.")
@click.option("--round", "rounds", multiple=True, help="Only this round (repeatable; default: every round).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_lengths_cmd(ctx, tokenizer, model, rounds, as_json):
    """Token lengths of prompt/chosen/rejected per round and the share max_length truncates.

    Without --tokenizer or --model, tokens are estimated as ceil(characters / 4)."""

    with open_db(ctx, read_only=True) as store:
        report = audit_lengths(store, counter=make_counter(store, tokenizer=tokenizer, model=model),
                               rounds=list(rounds) or None)
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(f"counted with {report.counter}")
    echo_table(["round", "rows", "max_len", "prompt p50/p95/max", "chosen p50/p95/max", "rejected p50/p95/max",
                "truncated", "chosen truncated"],
               [(r.round, r.rows, r.max_length,
                 *("/".join(f"{r.stats[k][s]:g}" for s in ("median", "p95", "max"))
                   for k in ("prompt", "chosen", "rejected")),
                 f"{r.truncated_rows} ({r.truncated_share:.1%})",
                 f"{r.truncated_chosen} ({r.truncated_chosen_share:.1%})") for r in report.rounds])
    for note in report.notes:
        click.echo(f"note: {note}")


@audit_group.command("loops")
@click.option("--model", help="Only this model's generations (default: every model).")
@click.option("--suite", help="Only this suite's generations (default: every suite, and none).")
@click.option("--rescan", is_flag=True, help="Scan every output now instead of reading the stored loop flags.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON list.")
@click.pass_context
def audit_loops_cmd(ctx, model, suite, rescan, as_json):
    """Repetition loops per model and suite: outputs, flagged, catastrophic, empty, average length.

    The model card's loop table over `generations` (audits.loops: flagged = repeated word 6/10-gram,
    cycle or tail loop; catastrophic = a cycle repeated 100 times or more)."""

    with open_db(ctx, read_only=True) as store:
        rows = loop_table(store, model=model, suite=suite, rescan=rescan)
    if as_json:
        echo_json(rows)
    elif rows:
        echo_table(list(LOOP_TABLE_COLUMNS), [tuple(r[c] for c in LOOP_TABLE_COLUMNS) for r in rows])
    else:
        click.echo("no generations in the store")


@ingest_group.command("evals")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model", required=True, help="The model (checkpoint name) these results belong to.")
@click.option("--suite", required=True, help="The suite name (v2, v6, lf2, gsm8k, ...).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "lm-eval"]), default="jsonl", show_default=True,
              help="jsonl: {item_id, correct|score, ...}; lm-eval: lm-evaluation-harness samples_*.jsonl.")
@click.option("--metric", help="lm-eval: the metric field to score (default: the first known one present).")
@click.option("--filter", "filter_name", help="lm-eval: the filter to keep (default: the first in the file).")
@click.pass_context
def ingest_evals_cmd(ctx, file, model, suite, fmt, metric, filter_name):
    """Per-item eval results (simple JSONL or lm-eval samples log) from FILE into `evals`."""

    with open_db(ctx) as store:
        result = ingest_evals(store, file, model=model, suite=suite, fmt=fmt, metric=metric,
                              filter_name=filter_name)
    click.echo(f"evals {model}/{suite}: read {result['read']}, added {result['added']}, "
               f"already present {result['skipped']}" + (f", filter {result['filter']}" if result["filter"] else ""))


# ============================================================================
# section: train / eval (train)
# ============================================================================

@cli.group("train")
def train_group():
    """DPO+NLL LoRA training, merge, soup and sampling (needs the `train` extra)."""


@cli.command("eval")
@click.option("--model", "bundle", required=True, type=click.Path(file_okay=False, path_type=str),
              help="The bundle to evaluate.")
@click.option("--suite", required=True,
              help="Suite name: gsm8k / math (with --path to the test file), a suite in eval_items, or any name "
                   "with --path FILE.")
@click.option("--path", default=None, type=click.Path(dir_okay=False, path_type=str),
              help="JSONL/parquet of the suite: GSM8K columns (question, answer), MATH columns (problem, "
                   "solution), or {id?, prompt, gold?, kind?}.")
@click.option("--n", type=int, default=None, help="Only the first N items.")
@click.option("--max-new-tokens", type=int, default=None, help="Override the bundle's max_new_tokens.")
@click.option("--engine", type=click.Choice(["auto", "transformers", "vllm"]), default="auto", show_default=True,
              help="auto: vLLM when installed with a GPU, else transformers.")
@click.option("--name", "model_name", default=None,
              help="Model name for the scores (default: the bundle's checkpoint name).")
@click.option("--trust-remote-code", is_flag=True, help="Allow the bundle's own Python code (off by default).")
@click.pass_context
def eval_cmd(ctx, bundle, suite, path, n, max_new_tokens, engine, model_name, trust_remote_code):
    """Evaluate a bundle on a suite greedily; per-item scores go to `evals`, items to the export gate."""

    with open_db(ctx) as store:
        r = run_eval(store, bundle, suite, model_name, path=path, n=n, max_new_tokens=max_new_tokens,
                     engine=engine, trust_remote_code=trust_remote_code)
    acc = "n/a" if r.accuracy is None else f"{r.accuracy:.4f} ({r.correct}/{r.scored})"
    click.echo(f"{r.model} on {r.suite}: {r.items} items, accuracy {acc}, loop-flagged {r.loop_flagged} "
               f"({r.loop_catastrophic} catastrophic), empty {r.empty}, mean length {r.mean_output_len:.1f} tokens")
    if r.skipped:
        echo_counts("skipped", r.skipped)


@train_group.command("dpo")
@click.option("--round", "round_name", required=True, help="The dpo round whose export to train on.")
@click.option("--base", "base", required=True, type=click.Path(file_okay=False, path_type=str),
              help="The base bundle (the round's parent, merged full weights).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Folder for the adapter, its checkpoints and training_evidence.json.")
@click.option("--resume", is_flag=True, help="Continue from the last checkpoint-N in --out.")
@click.option("--max-steps", type=int, default=None, help="Override the recipe's max_steps (smoke runs).")
@click.option("--save-steps", type=int, default=None,
              help="Save a checkpoint every N steps (default: 50, or max_steps when fewer).")
@click.option("--launcher", type=click.Choice(["accelerate"]), default=None,
              help="Run through `accelerate launch` (multi-GPU with --num-processes).")
@click.option("--num-processes", type=int, default=1, show_default=True,
              help="World size under --launcher accelerate; gradient accumulation = global_batch / "
                   "(per_device_batch x this).")
@click.option("--accelerate-config", default=None,
              help="zero3 | fsdp | cpu (shipped in train/configs) or a YAML path (default: zero3 with a GPU, "
                   "else cpu).")
@click.option("--emit-sbatch", "sbatch_path", default=None, type=click.Path(dir_okay=False, path_type=str),
              help="Do not train: prepare the job and write a Slurm script for it to this path.")
@click.option("--gpus", type=int, default=4, show_default=True, help="GPUs of the Slurm job (--emit-sbatch).")
@click.option("--time", "time_limit", default="04:00:00", show_default=True,
              help="Slurm time limit (--emit-sbatch).")
@click.option("--partition", default=None, help="Slurm partition (--emit-sbatch).")
@click.option("--name", default=None, help="Checkpoint name of the adapter (default: ROUND-lora).")
@click.option("--trust-remote-code", is_flag=True, help="Allow the bundle's own Python code (off by default).")
@click.pass_context
def train_dpo_cmd(ctx, round_name, base, out_dir, resume, max_steps, save_steps, launcher, num_processes,
                  accelerate_config, sbatch_path, gpus, time_limit, partition, name, trust_remote_code):
    """Train a round's LoRA adapter with DPO + NLL on its exported mixture (exit 3 if the mixture changed)."""
    db = ctx.find_root().obj["db"]
    if sbatch_path:

        with open_db(ctx, read_only=True) as store:
            path = emit_sbatch(store, round_name, base, out_dir, sbatch_path, db=db, gpus=gpus,
                               config=accelerate_config or "zero3", time_limit=time_limit, partition=partition,
                               max_steps=max_steps, trust_remote_code=trust_remote_code, adapter_name=name)
        click.echo(f"wrote {path} ({gpus} GPUs); submit it with: sbatch {path}")
        return

    result = train_dpo_at(db, round_name, base, out_dir, resume=resume, world_size=num_processes,
                          max_steps=max_steps, save_steps=save_steps, launcher=launcher,
                          accelerate_config=accelerate_config, trust_remote_code=trust_remote_code,
                          adapter_name=name)
    m = result.metrics
    click.echo(f"trained {result.adapter_name}: {m.get('global_step')} steps, loss {m.get('loss', float('nan')):.4f}, "
               f"reward margin {m.get('rewards/margins', float('nan')):.4f}, "
               f"accuracy {m.get('rewards/accuracies', float('nan')):.3f} -> {result.out_dir}")


@train_group.command("merge")
@click.option("--base", "base", required=True, type=click.Path(file_okay=False, path_type=str),
              help="The bundle the adapter was trained on.")
@click.option("--adapter", required=True, type=click.Path(file_okay=False, path_type=str),
              help="The adapter folder, or one of its checkpoint-N folders.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Output bundle folder.")
@click.option("--name", default=None,
              help="Checkpoint name (default: the round, or ROUND-stepN for an intermediate checkpoint).")
@click.option("--max-shard-mb", type=int, default=2048, show_default=True, help="Largest output shard in MiB.")
@click.option("--trust-remote-code", is_flag=True, help="Allow the bundle's own Python code (off by default).")
@click.pass_context
def train_merge_cmd(ctx, base, adapter, out_dir, name, max_shard_mb, trust_remote_code):
    """Merge a LoRA adapter into full weights: a bundle with the base's serving files."""

    with open_db(ctx) as store:
        result = merge_adapter(base, adapter, out_dir, store=store, name=name, max_shard_bytes=max_shard_mb << 20,
                               trust_remote_code=trust_remote_code)
    click.echo(f"merged {result.merged_modules} LoRA modules ({result.method}) -> {result.out_dir}; "
               f"registered checkpoint {result.name}")


@train_group.command("sample")
@click.option("--model", "bundle", required=True, type=click.Path(file_okay=False, path_type=str),
              help="The bundle to answer with.")
@click.option("--items", required=True, help="gsm8k | math (train problems) | tasks | a JSONL/parquet of "
                                             "{id?, prompt, gold?, kind?}.")
@click.option("--n", type=int, default=None, help="Only the first N items.")
@click.option("--samples", type=int, default=1, show_default=True, help="Answers per item.")
@click.option("--temperature", type=float, default=0.0, show_default=True, help="0 = greedy.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed (per item: hash of seed, id).")
@click.option("--repetition-penalty", type=float, default=None,
              help="Decoding knob (default: the bundle's serving_config decoding, else off).")
@click.option("--no-repeat-ngram-size", type=int, default=None,
              help="Decoding knob (default: the bundle's serving_config decoding, else off).")
@click.option("--max-new-tokens", type=int, default=None, help="Override the bundle's max_new_tokens.")
@click.option("--engine", type=click.Choice(["auto", "transformers", "vllm"]), default="auto", show_default=True,
              help="auto: vLLM when installed with a GPU, else transformers.")
@click.option("--name", "model_name", default=None,
              help="Model name for the generations (default: the bundle's checkpoint name).")
@click.option("--trust-remote-code", is_flag=True, help="Allow the bundle's own Python code (off by default).")
@click.pass_context
def train_sample_cmd(ctx, bundle, items, n, samples, temperature, seed, repetition_penalty, no_repeat_ngram_size,
                     max_new_tokens, engine, model_name, trust_remote_code):
    """Answer items the way the bundle is served; store outputs with verdicts and loop flags."""

    decoding = {"repetition_penalty": repetition_penalty, "no_repeat_ngram_size": no_repeat_ngram_size}
    with open_db(ctx) as store:
        r = sample(store, bundle, items, n=n, samples=samples, temperature=temperature, seed=seed,
                   decoding=decoding, model_name=model_name, max_new_tokens=max_new_tokens, engine=engine,
                   trust_remote_code=trust_remote_code)
    click.echo(f"{r.model}: {r.generations} generations for {r.items} items ({r.added} new), "
               f"loop-flagged {r.loop_flagged}")
    echo_counts("verdicts", r.verdicts)
    if r.skipped:
        echo_counts("skipped", r.skipped)


@train_group.command("soup")
@click.argument("a_dir", metavar="A", type=click.Path(file_okay=False, path_type=str))
@click.argument("b_dir", metavar="B", type=click.Path(file_okay=False, path_type=str))
@click.option("--alpha", type=float, required=True, help="Weight of B: out = A + alpha*(B - A).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Output bundle folder (new or empty).")
@click.option("--name", default=None, help="Checkpoint name to register (default: the output folder's name).")
@click.option("--a-name", default=None, help="Checkpoint name of A (default: A's folder name).")
@click.option("--b-name", default=None, help="Checkpoint name of B (default: B's folder name).")
@click.option("--slice-mb", type=int, default=16, show_default=True,
              help="Streaming slice size in MiB (memory is about 11 slices plus the interpreter).")
@click.option("--hash-output", is_flag=True,
              help="Also record the output shards' SHA-256 in the evidence (the inputs' are always recorded).")
@click.option("--no-register", is_flag=True,
              help="Do not register the checkpoint (by default it is registered when --db/PAIRSTORE_DB is "
                   "given or the default store file exists).")
@click.pass_context
def train_soup_cmd(ctx, a_dir, b_dir, alpha, out_dir, name, a_name, b_name, slice_mb, hash_output, no_register):
    """Soup two bundles with the same tensors: OUT = A + alpha*(B - A), streamed shard by shard."""



    evidence = soup(a_dir, b_dir, alpha, out_dir, slice_bytes=slice_mb << 20, hash_output=hash_output)
    out = evidence["output"]
    click.echo(f"soup: {out['tensors']} tensors, {out['total_size']} bytes in {len(out['shards'])} "
               f"shard(s), alpha={alpha} -> {out_dir} ({evidence['seconds']} s)")
    root = ctx.find_root()
    given = root.get_parameter_source("db") != ParameterSource.DEFAULT or os.path.exists(root.obj["db"])
    if no_register or not given:
        click.echo("not registered (no store given)" if not no_register else "not registered (--no-register)")
        return

    name = name or Path(out_dir).resolve().name
    parents = [a_name or Path(a_dir).resolve().name, b_name or Path(b_dir).resolve().name]
    with open_db(ctx) as store:
        register_checkpoint(store, name, "soup", parents, alpha=alpha, path=str(Path(out_dir).resolve()),
                            evidence=evidence)
    click.echo(f"registered checkpoint {name} (soup of {parents[0]} and {parents[1]})")


# ============================================================================
# section: demo
# ============================================================================

@cli.command("demo")
@click.argument("out_dir", default="demo-run", type=click.Path(file_okay=False))
def demo_cmd(out_dir):
    """Run the end-to-end demo on bundled invented sample data into OUT_DIR."""

    result = run_demo(out_dir, echo=click.echo)
    for line in closing_lines(result):
        click.echo(line)


if __name__ == "__main__":
    main()
