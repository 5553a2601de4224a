"""`pairstore generate ...`: loop-fix tasks with computed gold answers, for training
or as a held-out suite."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from generators.registry import family_listing, family_specs, resolve_families
from generators.tasks import generate_loopfix
from pairstore.cli.base import (
    check_seed,
    echo_counts,
    echo_json,
    echo_rows,
    echo_table,
    listing_options,
    open_db,
)

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


def complete_families(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion of --families: the declared names not typed yet, after the comma-separated ones."""
    from click.shell_completion import CompletionItem

    typed, comma, last = incomplete.rpartition(",")
    done = set(typed.split(","))
    return [
        CompletionItem(f"{typed}{comma}{name}")
        for name in family_specs()
        if name.startswith(last) and name not in done
    ]


@click.group("generate")
def generate_group() -> None:
    """Generate synthetic tasks with gold answers computed by code."""


@generate_group.command("loopfix")
@click.option("--n", "n", type=click.IntRange(min=0), required=True, help="How many tasks to generate.")
@click.option(
    "--seed",
    callback=check_seed,
    type=int,
    required=True,
    help="Seed: the same seed and options give the same tasks.",
)
@click.option(
    "--families",
    default=None,
    help="Comma-separated family names (default: the families `pairstore generate families` marks "
    "default, the loop-fix families).",
    shell_complete=complete_families,
)
@click.option(
    "--suite",
    default=None,
    help="Write the tasks as this evaluation suite: eval_items plus a holdout set of that name. "
    "Without it the tasks are for training and avoid every held-out task key.",
)
@click.option(
    "--difficulty",
    type=click.IntRange(1, 3),
    default=None,
    help="Fix the difficulty level (1 easy .. 3 hard); default: drawn per task.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def generate_loopfix_cmd(
    ctx: click.Context,
    n: int,
    seed: int,
    families: str | None,
    suite: str | None,
    difficulty: int | None,
    as_json: bool,
) -> None:
    """Generate loop-fix tasks (letter/word counts, division, digit sums, ...) into the store."""
    names = resolve_families(families)  # an unknown family fails before the store is opened
    with open_db(ctx) as store:
        summary = generate_loopfix(store, n, seed, names, suite, difficulty=difficulty)
    if as_json:
        echo_json(summary.to_dict())
        return
    echo_table(["family", "tasks"], list(summary.families.items()))
    echo_counts(
        f"{'suite ' + suite if suite else 'training'} (seed {seed})",
        {
            "tasks_inserted": summary.tasks_inserted,
            "tasks_existing": summary.tasks_existing,
            "eval_items_inserted": summary.eval_items_inserted,
            "holdout_added": summary.holdout_added,
            "excluded_keys": summary.excluded_keys,
        },
    )


@generate_group.command("families")
@listing_options
def generate_families_cmd(output: str) -> None:
    """List the task families as declared: version, modes (phrasings), levels, gold and whether default."""
    columns, rows, objects = family_listing()
    echo_rows(output, columns, rows, json_rows=objects)
