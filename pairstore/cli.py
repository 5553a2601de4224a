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

import json
import sys

import click

from pairstore.errors import PairstoreError


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
    from pairstore.store import open_store

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
    from pairstore.sql import run_sql

    with open_db(ctx, read_only=not write) as store:
        columns, rows = run_sql(store, query, write=write)
    if as_json:
        echo_json([dict(zip(columns, r)) for r in rows])
    elif as_csv:
        import csv

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
    from pairstore.ingest import ingest_battles

    with open_db(ctx) as store:
        _echo_ingest(ingest_battles(store, file, progress=_tty()))


@ingest_group.command("problems")
@click.option("--dataset", type=click.Choice(["gsm8k", "math"]), required=True, help="Which dataset.")
@click.option("--path", type=click.Path(dir_okay=False), help="Local parquet/JSONL in the dataset's own columns.")
@click.option("--split", default="train", show_default=True, help="Only train is accepted.")
@click.pass_context
def ingest_problems_cmd(ctx, dataset, path, split):
    """Ingest GSM8K (openai/gsm8k) or MATH (EleutherAI/hendrycks_math) train problems."""
    from pairstore.ingest import ingest_problems

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
    from pairstore.ingest import ingest_generations

    with open_db(ctx) as store:
        _echo_ingest(ingest_generations(store, file, model=model, progress=_tty()))


@ingest_group.command("pairs")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--source", required=True, help="Source name the pairs are stored under.")
@click.pass_context
def ingest_pairs_cmd(ctx, file, source):
    """Ingest preference pairs (prompt, chosen, rejected as strings or message lists) from FILE."""
    from pairstore.ingest import ingest_pairs

    with open_db(ctx) as store:
        _echo_ingest(ingest_pairs(store, file, source=source, progress=_tty()))


@ingest_group.command("judgments")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def ingest_judgments_cmd(ctx, file):
    """Ingest blind judge verdicts: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b."""
    from pairstore.ingest import ingest_judgments

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
    from pairstore.holdout import add_from_ids_file

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
    from pairstore.holdout import sample_holdout

    with open_db(ctx) as store:
        ids = sample_holdout(store, set_name, n=n, seed=seed, where=where)
    click.echo(f"{set_name}: {len(ids)} battles sampled (seed {seed})")


@holdout_group.command("list")
@click.pass_context
def holdout_list_cmd(ctx):
    """List holdout sets with their active and removed member counts."""
    from pairstore.holdout import list_sets

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
    from pairstore.holdout import show_set

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
    from pairstore.holdout import remove_member

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
    from generators.registry import resolve_families
    from generators.tasks import generate_loopfix

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
    from generators.registry import FAMILIES

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
    from miners.registry import run_miner

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


@mine_group.command("list")
def mine_list_cmd():
    """List the registered miners and their versions."""
    from miners.registry import miners

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
@_mine_json
@click.pass_context
def mine_self_repair_cmd(ctx, model, dataset, pairs_per_problem, seed, no_gold_repair, as_json):
    """Verified-correct vs wrong samples of a model on GSM8K/MATH (gold solution where all are wrong)."""
    _run_miner(ctx, "self_repair", as_json, model=model, dataset=dataset, pairs_per_problem=pairs_per_problem,
               seed=seed, gold_repair=not no_gold_repair)


@mine_group.command("loopfix")
@click.option("--model", required=True, help="The model whose generations on generated tasks are mined.")
@click.option("--per-task", default=None, type=click.IntRange(min=1),
              help="At most this many pairs per task (seeded pick; default: all).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the per-task pick.")
@_mine_json
@click.pass_context
def mine_loopfix_cmd(ctx, model, per_task, seed, as_json):
    """Wrong or looped outputs on generated tasks rejected against the canonical answer."""
    _run_miner(ctx, "loopfix", as_json, model=model, per_task=per_task, seed=seed)


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
    from audits.leaks import audit_leaks

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
    from audits.decontam import decontam

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


# ============================================================================
# section: train / eval (train)
# ============================================================================

@cli.group("train")
def train_group():
    """DPO+NLL LoRA training, merge, soup and sampling (needs the `train` extra)."""


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
              help="Streaming slice size in MiB (memory is about 6 slices).")
@click.option("--no-register", is_flag=True,
              help="Do not register the checkpoint (by default it is registered when --db/PAIRSTORE_DB is "
                   "given or the default store file exists).")
@click.pass_context
def train_soup_cmd(ctx, a_dir, b_dir, alpha, out_dir, name, a_name, b_name, slice_mb, no_register):
    """Soup two bundles with the same tensors: OUT = A + alpha*(B - A), streamed shard by shard."""
    import os
    from pathlib import Path

    from click.core import ParameterSource

    from train.soup import soup

    evidence = soup(a_dir, b_dir, alpha, out_dir, slice_bytes=slice_mb << 20)
    out = evidence["output"]
    click.echo(f"soup: {out['tensors']} tensors, {out['total_size']} bytes in {len(out['shards_sha256'])} "
               f"shard(s), alpha={alpha} -> {out_dir} ({evidence['seconds']} s)")
    root = ctx.find_root()
    given = root.get_parameter_source("db") != ParameterSource.DEFAULT or os.path.exists(root.obj["db"])
    if no_register or not given:
        click.echo("not registered (no store given)" if not no_register else "not registered (--no-register)")
        return
    from pairstore.checkpoints import register_checkpoint

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
    from train.demo import run_demo

    result = run_demo(out_dir, echo=click.echo)
    click.echo(f"\nstore: {result.store_path}")
    click.echo(f"try:   pairstore --db {result.store_path} sql \"SELECT * FROM battle_votes_by_category\"")


if __name__ == "__main__":
    main()
