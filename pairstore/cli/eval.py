"""`pairstore eval`: a bundle answers a suite greedily, scored per item into `evals` (the `train` extra)."""

from __future__ import annotations

import click

from pairstore.cli.base import (
    as_plain,
    echo_counts,
    echo_json,
    generation_options,
    json_option,
    open_db,
    trust_remote_code_option,
)
from train.eval import run_eval


@click.command("eval")
@click.option(
    "--model",
    "bundle",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="The bundle to evaluate.",
)
@click.option(
    "--suite",
    required=True,
    help="Suite name: gsm8k / math (with --path to the test file), a suite in eval_items, or any name "
    "with --path FILE.",
)
@click.option(
    "--path",
    default=None,
    type=click.Path(path_type=str),
    help="The suite's items: a JSONL, parquet or CSV file, or a Hub or save_to_disk folder (its test "
    "split), in GSM8K columns (question, answer), MATH or MATH-500 columns (problem, solution, "
    "answer?), or {id?, prompt, gold?, kind?}.",
)
@click.option("--n", type=int, default=None, help="Only the first N items.")
@generation_options
@click.option(
    "--name",
    "model_name",
    default=None,
    help="Model name for the scores (default: the bundle's checkpoint name).",
)
@trust_remote_code_option
@json_option
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    bundle: str,
    suite: str,
    path: str | None,
    n: int | None,
    max_new_tokens: int | None,
    engine: str,
    model_name: str | None,
    trust_remote_code: bool,
    as_json: bool,
) -> None:
    """Evaluate a bundle on a suite greedily; per-item scores go to `evals`, items to the export gate."""
    with open_db(ctx) as store:
        r = run_eval(
            store,
            bundle,
            suite,
            model_name,
            path=path,
            n=n,
            max_new_tokens=max_new_tokens,
            engine=engine,
            trust_remote_code=trust_remote_code,
        )
    if as_json:
        echo_json(as_plain(r))
        return
    acc = "n/a" if r.accuracy is None else f"{r.accuracy:.4f} ({r.correct}/{r.scored})"
    click.echo(
        f"{r.model} on {r.suite}: {r.items} items, accuracy {acc}, loop-flagged {r.loop_flagged} "
        f"({r.loop_catastrophic} catastrophic), empty {r.empty}, mean length {r.mean_output_len:.1f} tokens"
    )
    if r.skipped:
        echo_counts("skipped", r.skipped)
