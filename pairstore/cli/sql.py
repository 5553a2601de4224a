"""`pairstore sql`: SQL over the store, read-only unless --write."""

from __future__ import annotations

import csv
import sys

import click

from pairstore.cli.base import (
    echo_json,
    echo_table,
    open_db,
)
from pairstore.store.sql import run_sql


@click.command("sql")
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print rows as a JSON list of objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Print rows as CSV.")
@click.option(
    "--write",
    is_flag=True,
    help="Open the store for writing: every statement in one transaction, all or nothing; holdout, "
    "holdout_sets, holdout_exemptions, audit_log, exports and export_rows stay as they are "
    "(default: read-only).",
)
@click.option(
    "--allow-files",
    is_flag=True,
    help="Allow COPY, ATTACH, INSTALL, LOAD and file-reading functions (default: the store only).",
)
@click.pass_context
def sql_cmd(ctx, query, as_json, as_csv, write, allow_files):
    """Run a SQL QUERY against the store and print the result."""
    with open_db(ctx, read_only=not write) as store:
        columns, rows = run_sql(store, query, write=write, allow_files=allow_files)
    if as_json:
        echo_json([dict(zip(columns, r)) for r in rows])
    elif as_csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)
    elif columns:
        echo_table(columns, rows)
