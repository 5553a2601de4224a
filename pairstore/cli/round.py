"""`pairstore round ...`: recipes registered as rounds, and mixtures made elsewhere attached to them."""

from __future__ import annotations

from typing import Any

import click

from pairstore.cli.base import (
    as_plain,
    complete,
    echo_counts,
    echo_json,
    echo_rows,
    json_option,
    listing_options,
    open_db,
)
from pairstore.export.attach import attach_round
from pairstore.rounds.recipes import add_rounds, list_rounds, load_shipped_recipes, show_round


@click.group("round")
def round_group() -> None:
    """Round recipes: add, list, show, attach past mixtures."""


@round_group.command("add")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--shipped", is_flag=True, help="Add every recipe shipped under pairstore/recipes/ (parents first)."
)
@click.option(
    "--check",
    is_flag=True,
    help="Check the FILES (keys, parents, each [[mix]] where bound against pairs) and add nothing.",
)
@json_option
@click.pass_context
def round_add_cmd(
    ctx: click.Context, files: tuple[str, ...], shipped: bool, check: bool, as_json: bool
) -> None:
    """Register recipe FILES (TOML) as rounds, all or nothing: every mistake of every file is reported and
    then nothing is added. A parent may be among the FILES. The same file again changes nothing. Each
    [[mix]] block's where is bound against the store's pairs first, so a wrong column never takes a name."""
    if not files and not shipped:
        raise click.UsageError("give recipe FILES or --shipped")
    if check and shipped:
        raise click.UsageError("--check takes recipe FILES, not --shipped")
    report: dict[str, Any] = {"shipped": None, "rounds": []}
    if check:
        with open_db(ctx, read_only=True) as store:
            for recipe, _ in add_rounds(store, list(files), check_only=True):
                report["rounds"].append({"name": recipe.name, "kind": recipe.kind, "sha256": recipe.sha256})
                if not as_json:
                    click.echo(f"ok: {recipe.name} ({recipe.kind}, sha256 {recipe.sha256[:12]}); not added")
        if as_json:
            echo_json(report)
        return
    with open_db(ctx) as store:
        if shipped:
            report["shipped"] = load_shipped_recipes(store)
            if not as_json:
                echo_counts("shipped recipes", {k: len(v) for k, v in report["shipped"].items()})
        for recipe, added in add_rounds(store, list(files)) if files else []:
            entry = {"name": recipe.name, "kind": recipe.kind, "sha256": recipe.sha256, "added": added}
            report["rounds"].append(entry)
            if not as_json:
                click.echo(
                    f"{'added' if added else 'unchanged'}: {recipe.name} ({recipe.kind}, "
                    f"sha256 {recipe.sha256[:12]})"
                )
    if as_json:
        echo_json(report)


@round_group.command("list")
@listing_options
@click.pass_context
def round_list_cmd(ctx: click.Context, output: str) -> None:
    """List registered rounds with kind, parents, alpha, job and exports."""
    with open_db(ctx, read_only=True) as store:
        rows = list_rounds(store)
    echo_rows(
        output,
        ["name", "kind", "parents", "alpha", "job", "exports", "sha256"],
        [
            (r["name"], r["kind"], r["parents"], r["alpha"], r["job_id"], r["exports"], r["sha256"])
            for r in rows
        ],
        json_rows=rows,
    )


@round_group.command("show")
@click.argument("name", shell_complete=complete("round"))
@click.option("--toml", "as_toml", is_flag=True, help="Print the recipe's TOML text as registered.")
@json_option
@click.pass_context
def round_show_cmd(ctx: click.Context, name: str, as_toml: bool, as_json: bool) -> None:
    """Show round NAME: the stored recipe (JSON), its SHA-256 and its registered mixtures."""
    with open_db(ctx, read_only=True) as store:
        info = show_round(store, name)
    if as_toml and not as_json:
        click.echo(info["toml"], nl=False)
    else:
        echo_json({k: v for k, v in info.items() if k != "toml"})


@round_group.command("attach")
@click.argument("name", shell_complete=complete("round"))
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
@click.pass_context
def round_attach_cmd(ctx: click.Context, name: str, file: str, as_json: bool) -> None:
    """Register FILE (parquet/JSONL pairs made elsewhere) as round NAME's training data (not gated)."""
    with open_db(ctx) as store:
        r = attach_round(store, name, file)
    if as_json:
        echo_json(as_plain(r))
        return
    if r.already:
        click.echo(f"already attached to {name}: {r.path} ({r.rows} rows, sha256 {r.sha256[:12]})")
        return
    click.echo(f"attached to {name}: {r.path} ({r.rows} rows, sha256 {r.sha256[:12]}, export {r.export_id})")
    echo_counts(
        "rows",
        {"matched": r.matched, "new pairs": r.added, **{f"dropped {k}": v for k, v in r.dropped.items()}},
    )
