"""The Click tree of `pairstore`: the root group, its global options and every command group.

The entry point is pairstore.cli.main (pairstore/cli/__init__.py), which loads this module."""

from __future__ import annotations

import click

from pairstore.cli.audit import audit_group
from pairstore.cli.base import PairstoreGroup, quiet_libraries
from pairstore.cli.demo import demo_cmd
from pairstore.cli.eval import eval_cmd
from pairstore.cli.export import export_cmd
from pairstore.cli.generate import generate_group
from pairstore.cli.holdout import holdout_group
from pairstore.cli.ingest import ingest_group
from pairstore.cli.lineage import lineage_cmd
from pairstore.cli.mine import mine_group
from pairstore.cli.round import round_group
from pairstore.cli.sql import sql_cmd
from pairstore.cli.train import train_group
from pairstore.cli.votes import judge_cmd, ratings_cmd, serve_cmd
from pairstore.progress import for_terminal, reporting


@click.group(cls=PairstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="PAIRSTORE_DB",
    default="pairstore.duckdb",
    show_default=True,
    help="The store file (or set PAIRSTORE_DB).",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    envvar="PAIRSTORE_QUIET",
    help="No progress bars or stage lines on stderr (errors still print; or set PAIRSTORE_QUIET=1).",
)
@click.version_option(package_name="pairstore")
@click.pass_context
def cli(ctx: click.Context, db: str, quiet: bool) -> None:
    """pairstore: preference pairs, holdout gate and provenance for DPO rounds.

    --db and --quiet go before or after the subcommand."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db
    ctx.obj["quiet"] = quiet
    # Every library call under the command reports to this (pairstore.progress.current): stderr only.
    ctx.with_resource(reporting(for_terminal(quiet=quiet)))
    ctx.with_resource(quiet_libraries(quiet))


for command in (
    sql_cmd,
    ingest_group,
    holdout_group,
    generate_group,
    mine_group,
    round_group,
    export_cmd,
    lineage_cmd,
    audit_group,
    train_group,
    eval_cmd,
    demo_cmd,
):
    cli.add_command(command)
audit_group.add_command(ratings_cmd)
cli.add_command(serve_cmd)
cli.add_command(judge_cmd)
