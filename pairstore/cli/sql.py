"""`pairstore sql`: SQL over the store, read-only unless --write."""

from __future__ import annotations

import click

from pairstore.cli.base import echo_rows, listing_options, open_db
from pairstore.store.sql import run_sql


@click.command("sql")
@click.argument("query")
@listing_options
@click.option(
    "--write",
    is_flag=True,
    help="Open the store for writing: every statement in one transaction, all or nothing. New tables "
    "and views go in schema scratch (CREATE TABLE scratch.x ...); no macros or functions, no ALTER, DROP "
    "or COMMENT of pairstore's objects, the tables the gate and the audits read stay as they are, and a "
    "pair's or an origin's key stays on one row (default: read-only).",
)
@click.option(
    "--allow-files",
    is_flag=True,
    help="Allow COPY, ATTACH, INSTALL, LOAD and file-reading functions (default: the store only).",
)
@click.pass_context
def sql_cmd(ctx: click.Context, query: str, output: str, write: bool, allow_files: bool) -> None:
    """Run a SQL QUERY against the store and print the result."""
    with open_db(ctx, read_only=not write) as store:
        columns, rows = run_sql(store, query, write=write, allow_files=allow_files)
    if columns or output == "json":
        echo_rows(output, columns, rows)
