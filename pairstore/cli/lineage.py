"""`pairstore lineage`: the chain of rounds from the base model to a named round."""

from __future__ import annotations

import click

from pairstore.cli.base import (
    complete,
    echo_json,
    open_db,
)
from pairstore.rounds.lineage import describe, lineage


@click.command("lineage")
@click.argument("name", shell_complete=complete("round"))
@click.option("--json", "as_json", is_flag=True, help="Print the chain as JSON.")
@click.pass_context
def lineage_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
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
