"""`pairstore ingest ...`: battles, problems, generations, pairs, judgments and eval
results into the store."""

from __future__ import annotations

import click

from audits.loops import scan, scan_many
from pairstore.cli.base import (
    check_seed,
    cli_progress,
    echo_counts,
    echo_ingest,
    echo_json,
    json_option,
    open_db,
)
from pairstore.ingest.arena import OTHERS as ARENA_OTHERS
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.compliance import import_compliance
from pairstore.ingest.evals import ingest_evals
from pairstore.ingest.formats import format_names, formats_of
from pairstore.ingest.generations import ITEM_KINDS, ingest_generations
from pairstore.ingest.judgments import ingest_judgments
from pairstore.ingest.pairs import ingest_pairs
from pairstore.ingest.problems import ingest_problems
from pairstore.ingest.ultrafeedback import ULTRAFEEDBACK_SPLIT, import_ultrafeedback
from pairstore.tables.pairs import PairsResult


@click.group("ingest")
def ingest_group() -> None:
    """Bring battles, problems, generations, pairs, judgments, evals and pair datasets into the store."""


def format_help(table: str) -> str:
    """Each format of `table` and what it reads, from the declarations (pairstore.ingest.formats)."""
    return " ".join(f"{f.name}: {f.summary}" for f in formats_of(table))


@ingest_group.command("battles")
@click.argument("file", type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(format_names("battles")),
    default="native",
    show_default=True,
    help=format_help("battles"),
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
@json_option
@click.pass_context
def ingest_battles_cmd(
    ctx: click.Context, file: str, fmt: str, own_models: tuple[str, ...], others: str, as_json: bool
) -> None:
    """Ingest human side-by-side battles from FILE: JSONL, parquet, CSV, a Hub folder \
or a save_to_disk folder.

    Native record: battle_id, prompt (string or messages), own_answer, opponent_answer, vote
    (win|loss|tie|both_bad, from the own model's side), optional category, own_model,
    opponent_model, voted_at; a multi-turn battle gives turns: [{user, own, opponent}, ...].
    Public Chatbot Arena files go in as they are with --format arena or arena55k and --own-model NAME;
    a FastChat server's own vote logs with --format fastchat-log.
    """

    with open_db(ctx) as store:
        echo_ingest(
            ingest_battles(
                store, file, fmt=fmt, own_models=own_models, others=others, progress=cli_progress(ctx)
            ),
            as_json,
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
@json_option
@click.pass_context
def ingest_problems_cmd(
    ctx: click.Context, dataset: str, path: str | None, split: str, as_json: bool
) -> None:
    """Ingest GSM8K (openai/gsm8k) or MATH (EleutherAI/hendrycks_math, or MATH-500-shaped rows) \
train problems."""
    with open_db(ctx) as store:
        echo_ingest(
            ingest_problems(store, dataset, path=path, split=split, progress=cli_progress(ctx)), as_json
        )


@ingest_group.command("generations")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model", required=True, help="Name of the model that wrote the outputs.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(format_names("generations")),
    default="native",
    show_default=True,
    help=format_help("generations"),
)
@click.option(
    "--item-kind",
    type=click.Choice(ITEM_KINDS),
    help="What the outputs answer, for records that do not say (default: the format's; native records "
    "without item_kind and item_id are free prompts).",
)
@click.option("--suite", help="The eval suite of eval items, for records that do not name one.")
@json_option
@click.pass_context
def ingest_generations_cmd(
    ctx: click.Context,
    file: str,
    model: str,
    fmt: str,
    item_kind: str | None,
    suite: str | None,
    as_json: bool,
) -> None:
    """Ingest a model's outputs (on problems, tasks, eval items or free prompts) from FILE.

    Native record: output, item_kind (problem|task|eval_item|prompt), item_id or the question as prompt
    (the stored item with its match key), optional sample_index, temperature, top_p, max_new_tokens, seed,
    suite, decoding.
    """

    with open_db(ctx) as store:
        echo_ingest(
            ingest_generations(
                store,
                file,
                model=model,
                fmt=fmt,
                item_kind=item_kind,
                suite=suite,
                progress=cli_progress(ctx),
            ),
            as_json,
        )


@ingest_group.command("pairs")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--source", required=True, help="Source name the pairs are stored under.")
@json_option
@click.pass_context
def ingest_pairs_cmd(ctx: click.Context, file: str, source: str, as_json: bool) -> None:
    """Ingest preference pairs (prompt, chosen, rejected as strings or message lists) from FILE."""
    with open_db(ctx) as store:
        echo_ingest(ingest_pairs(store, file, source=source, progress=cli_progress(ctx)), as_json)


@ingest_group.command("judgments")
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
@click.pass_context
def ingest_judgments_cmd(ctx: click.Context, file: str, as_json: bool) -> None:
    """Ingest blind judge verdicts: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b."""
    with open_db(ctx) as store:
        echo_ingest(ingest_judgments(store, file, progress=cli_progress(ctx)), as_json)


@ingest_group.command("evals")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model", required=True, help="The model (checkpoint name) these results belong to.")
@click.option("--suite", required=True, help="The suite name (v2, v6, lf2, gsm8k, ...).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(format_names("evals")),
    default="jsonl",
    show_default=True,
    help=format_help("evals"),
)
@click.option("--metric", help="lm-eval: the metric field to score (default: the first known one present).")
@click.option("--filter", "filter_name", help="lm-eval: the filter to keep (default: the first in the file).")
@json_option
@click.pass_context
def ingest_evals_cmd(
    ctx: click.Context,
    file: str,
    model: str,
    suite: str,
    fmt: str,
    metric: str | None,
    filter_name: str | None,
    as_json: bool,
) -> None:
    """Per-item eval results (simple JSONL or lm-eval samples log) from FILE into `evals`."""
    with open_db(ctx) as store:
        # The domain's repetition scanner judges each output: the core ingest takes it as a function.
        result = ingest_evals(
            store,
            file,
            model=model,
            suite=suite,
            scan=scan,
            scan_many=scan_many,
            fmt=fmt,
            metric=metric,
            filter_name=filter_name,
            progress=cli_progress(ctx),
        )
    if as_json:
        echo_json(result)
        return
    click.echo(
        f"evals {model}/{suite}: read {result.read}, added {result.added}, "
        f"already present {result.skipped}"
        + (f", filter {result.filter}" if result.filter else "")
        + (f"; {result.eval_items_added} new eval item(s) held out" if result.eval_items_added else "")
    )


def echo_pairs_result(result: PairsResult) -> None:
    """What a run that writes pairs did (a dataset import here, a miner in `pairstore mine`)."""
    click.echo(
        f"{result.miner} v{result.version}: kept {result.kept} new pairs "
        f"({result.produced} produced, {result.new_origins} new origins)"
    )
    if result.by_source:
        echo_counts("by source", dict(result.by_source))
    echo_counts("dropped", dict(result.dropped))
    if result.stats:
        echo_counts("looked at", dict(result.stats))


_json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")


@ingest_group.command("ultrafeedback")
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
@click.option("--split", default=ULTRAFEEDBACK_SPLIT, show_default=True, help="The dataset split.")
@_json_option
@click.pass_context
def ingest_ultrafeedback_cmd(
    ctx: click.Context, path: str | None, limit: int | None, seed: int, split: str, as_json: bool
) -> None:
    """Import HuggingFaceH4/ultrafeedback_binarized preference pairs (source 'ultrafeedback')."""
    with open_db(ctx) as store:
        result = import_ultrafeedback(store, path=path, limit=limit, seed=seed, split=split)
    if as_json:
        echo_json(result.as_dict())
    else:
        echo_pairs_result(result)


@ingest_group.command("compliance")
@click.argument("file", type=click.Path())
@_json_option
@click.pass_context
def ingest_compliance_cmd(ctx: click.Context, file: str, as_json: bool) -> None:
    """Import handcrafted compliance pairs and NLL rows from a JSONL/parquet FILE."""
    with open_db(ctx) as store:
        result = import_compliance(store, path=file)
    if as_json:
        echo_json(result.as_dict())
    else:
        echo_pairs_result(result)
