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


# ============================================================================
# section: holdout (store)
# ============================================================================

@cli.group("holdout")
def holdout_group():
    """Named holdout sets that no training mixture may touch."""


# ============================================================================
# section: generate (generators)
# ============================================================================

@cli.group("generate")
def generate_group():
    """Generate synthetic tasks with gold answers computed by code."""


# ============================================================================
# section: mine (miners)
# ============================================================================

@cli.group("mine")
def mine_group():
    """Mine preference pairs from what the store holds."""


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


# ============================================================================
# section: train / eval (train)
# ============================================================================

@cli.group("train")
def train_group():
    """DPO+NLL LoRA training, merge, soup and sampling (needs the `train` extra)."""


# ============================================================================
# section: demo
# ============================================================================


if __name__ == "__main__":
    main()
