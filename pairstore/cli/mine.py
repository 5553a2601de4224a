"""`pairstore generate` and `pairstore mine`: generated tasks and the miners.

pairstore generate loopfix --n 140 --seed 12077
pairstore mine battle
"""

from __future__ import annotations

import click

from miners.registry import miners, run_miner
from pairstore.cli.base import check_seed, echo_counts, echo_json, echo_table, json_option, open_db


@click.group("mine")
def mine_group():
    """Mine preference pairs from what the store holds."""


def _run_miner(ctx, name: str, as_json: bool, **options) -> None:
    """Open the store, run the registered miner `name`, print kept and dropped by reason."""
    with open_db(ctx) as store:
        result = run_miner(store, name, **options)
    if as_json:
        echo_json(result.as_dict())
        return
    click.echo(
        f"{result.miner} v{result.version}: kept {result.kept} new pairs "
        f"({len(result.pair_ids)} produced, {result.new_origins} new origins)"
    )
    if result.by_source:
        echo_counts("by source", dict(result.by_source))
    echo_counts("dropped", dict(result.dropped))
    if result.stats:
        echo_counts("looked at", dict(result.stats))


_mine_json = click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
_mine_workers = click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Processes that verify and scan; more helps on idle cores only. The result does not depend on it.",
)


@mine_group.command("list")
@json_option
def mine_list_cmd(as_json):
    """List the registered miners and their versions."""
    if as_json:
        echo_json([{"miner": s.name, "version": s.version, "what": s.summary} for s in miners().values()])
        return
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
@click.option(
    "--dataset", required=True, type=click.Choice(["gsm8k", "math"]), help="Problems of this dataset."
)
@click.option(
    "--pairs-per-problem",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="At most this many pairs per problem.",
)
@click.option(
    "--seed", callback=check_seed, default=0, show_default=True, type=int, help="Seed of the pair selection."
)
@click.option(
    "--no-gold-repair", is_flag=True, help="Do not use the reference solution where every sample is wrong."
)
@_mine_workers
@_mine_json
@click.pass_context
def mine_self_repair_cmd(ctx, model, dataset, pairs_per_problem, seed, no_gold_repair, workers, as_json):
    """Verified-correct vs wrong samples of a model on GSM8K/MATH (gold solution where all are wrong)."""
    _run_miner(
        ctx,
        "self_repair",
        as_json,
        model=model,
        dataset=dataset,
        pairs_per_problem=pairs_per_problem,
        seed=seed,
        gold_repair=not no_gold_repair,
        workers=workers,
    )


@mine_group.command("loopfix")
@click.option("--model", required=True, help="The model whose generations on generated tasks are mined.")
@click.option(
    "--per-task",
    default=None,
    type=click.IntRange(min=1),
    help="At most this many pairs per task (seeded pick; default: all).",
)
@click.option(
    "--seed", callback=check_seed, default=0, show_default=True, type=int, help="Seed of the per-task pick."
)
@_mine_workers
@_mine_json
@click.pass_context
def mine_loopfix_cmd(ctx, model, per_task, seed, workers, as_json):
    """Wrong or looped outputs on generated tasks rejected against the canonical answer."""
    _run_miner(ctx, "loopfix", as_json, model=model, per_task=per_task, seed=seed, workers=workers)


@mine_group.command("style")
@click.option("--model", default=None, help="Only this model's generations (default: all models).")
@click.option(
    "--from-pairs", is_flag=True, help="Fix the chosen side of stored pairs instead of generations."
)
@click.option("--source", default=None, help="With --from-pairs: only pairs of this source.")
@_mine_json
@click.pass_context
def mine_style_cmd(ctx, model, from_pairs, source, as_json):
    """Hedging tails removed and final-answer lines fixed: fixed answer chosen, original rejected."""
    _run_miner(ctx, "style", as_json, model=model, from_pairs=from_pairs, source=source)


@mine_group.command("ultrafeedback")
@click.option(
    "--path",
    default=None,
    type=click.Path(),
    help="Local parquet/JSONL file or folder of the dataset (offline); default: the Hub.",
)
@click.option("--limit", default=None, type=click.IntRange(min=1), help="Keep a seeded sample of N rows.")
@click.option(
    "--seed", callback=check_seed, default=0, show_default=True, type=int, help="Seed of the --limit sample."
)
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
