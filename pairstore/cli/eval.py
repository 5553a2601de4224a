"""`pairstore eval`: a bundle answers a suite greedily, scored per item into `evals` (the `train` extra).

The command is built from train.eval.EvalOptions (pairstore.cli.options) and hands it whole to run_eval."""

from __future__ import annotations

import click

from pairstore.cli.base import as_plain, echo_counts, echo_json, json_option, open_db
from pairstore.cli.options import options_parameters
from train.eval import EvalOptions, run_eval


@click.command("eval")
@options_parameters(EvalOptions)
@json_option
@click.pass_context
def eval_cmd(ctx: click.Context, options: EvalOptions, as_json: bool) -> None:
    """Evaluate a bundle on a suite greedily; per-item scores go to `evals`, items to the export gate."""
    with open_db(ctx) as store:
        r = run_eval(store, options)
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
