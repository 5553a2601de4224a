"""`pairstore holdout ...`: holdout sets, their members, removals and exemptions."""

from __future__ import annotations

import click

from pairstore.cli.base import (
    check_seed,
    complete,
    echo_json,
    echo_rows,
    echo_table,
    json_option,
    listing_options,
    open_db,
)
from pairstore.holdout.sets import (
    add_exemption,
    add_from_ids_file,
    add_from_texts_file,
    list_sets,
    remove_member,
    sample_holdout,
    show_set,
)
from pairstore.normalize import normalization_version
from pairstore.store.rekey import key_versions, rekey_every_table


@click.group("holdout")
def holdout_group() -> None:
    """Named holdout sets that no training mixture may touch."""


@holdout_group.command("add")
@click.argument("set_name", metavar="SET")
@click.option(
    "--ids-file",
    type=click.Path(dir_okay=False),
    help="One battle, task or eval-item id per line.",
)
@click.option(
    "--texts-file",
    type=click.Path(dir_okay=False),
    help='Texts to hold out: JSONL of {"text": ..., "id": ...} (id optional), or .txt, one text a line.',
)
@json_option
@click.pass_context
def holdout_add_cmd(
    ctx: click.Context, set_name: str, ids_file: str | None, texts_file: str | None, as_json: bool
) -> None:
    """Add the ids or the texts in a file to holdout SET (created if new), in one transaction."""
    if (ids_file is None) == (texts_file is None):
        raise click.UsageError("give one of --ids-file or --texts-file")
    with open_db(ctx) as store:
        if ids_file is not None:
            n = add_from_ids_file(store, set_name, ids_file)
        else:
            assert texts_file is not None  # one of the two, checked above
            n = add_from_texts_file(store, set_name, texts_file)
    if as_json:
        echo_json({"set": set_name, "added": n})
        return
    click.echo(f"{set_name}: {n} members added")


@holdout_group.command("sample")
@click.argument("set_name", metavar="SET")
@click.option("--n", type=int, required=True, help="How many battles.")
@click.option("--seed", callback=check_seed, type=int, required=True, help="Sampling seed.")
@click.option("--where", help="SQL filter over battles to sample from.")
@json_option
@click.pass_context
def holdout_sample_cmd(
    ctx: click.Context, set_name: str, n: int, seed: int, where: str | None, as_json: bool
) -> None:
    """Sample N battles into SET, stratified by vote and category (deterministic under --seed)."""
    with open_db(ctx) as store:
        ids = sample_holdout(store, set_name, n=n, seed=seed, where=where)
    if as_json:
        echo_json({"set": set_name, "seed": seed, "sampled": ids})
        return
    click.echo(f"{set_name}: {len(ids)} battles sampled (seed {seed})")


@holdout_group.command("list")
@listing_options
@click.pass_context
def holdout_list_cmd(ctx: click.Context, output: str) -> None:
    """List holdout sets with their active and removed member counts."""
    with open_db(ctx, read_only=True) as store:
        rows = list_sets(store)
    echo_rows(
        output,
        ["set", "active", "removed", "method", "seed"],
        [(r["set_name"], r["active"], r["removed"], r["method"], r["seed"]) for r in rows],
        json_rows=rows,
    )


@holdout_group.command("show")
@click.argument("set_name", metavar="SET", shell_complete=complete("holdout"))
@listing_options
@click.pass_context
def holdout_show_cmd(ctx: click.Context, set_name: str, output: str) -> None:
    """Show the members of SET, their status and history (every removal and re-add)."""
    with open_db(ctx, read_only=True) as store:
        rows = show_set(store, set_name)
    echo_rows(
        output,
        ["item_id", "kind", "status", "match_key", "reason", "history"],
        [
            (
                r["item_id"],
                r["item_kind"],
                r["status"],
                r["match_key"],
                r["removed_reason"],
                "; ".join(
                    f"{h['action']} {h['at'][:19]}" + (f" ({h['reason']})" if h["reason"] else "")
                    for h in r["history"]
                ),
            )
            for r in rows
        ],
        json_rows=rows,
    )


@holdout_group.command("remove")
@click.argument("set_name", metavar="SET", shell_complete=complete("holdout"))
@click.argument("item_id", metavar="ID")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@json_option
@click.pass_context
def holdout_remove_cmd(ctx: click.Context, set_name: str, item_id: str, reason: str, as_json: bool) -> None:
    """Remove member ID from SET (logged with the reason; the row is kept as 'removed')."""
    with open_db(ctx) as store:
        remove_member(store, set_name, item_id, reason=reason)
    if as_json:
        echo_json({"set": set_name, "removed": item_id, "reason": reason})
        return
    click.echo(f"{set_name}: removed {item_id}")


@holdout_group.command("exempt")
@click.argument("set_name", metavar="SET", shell_complete=complete("holdout"))
@click.argument("item_id")
@click.argument("pair_id")
@click.option(
    "--reason", required=True, help="Why this pair may train although it matches the member (logged)."
)
@json_option
@click.pass_context
def holdout_exempt_cmd(
    ctx: click.Context, set_name: str, item_id: str, pair_id: str, reason: str, as_json: bool
) -> None:
    """Let PAIR_ID through the export gate for member ITEM_ID of SET (logged; listed in evidence)."""
    with open_db(ctx) as store:
        added = add_exemption(store, set_name, item_id, pair_id, reason=reason)
    if as_json:
        echo_json({"set": set_name, "item_id": item_id, "pair_id": pair_id, "added": added})
        return
    click.echo(f"{'exempted' if added else 'already exempted'}: pair {pair_id} for {set_name}/{item_id}")


@holdout_group.command("rekey")
@click.option(
    "--all", "every", is_flag=True, help="Re-key every table, not only those another normalization keyed."
)
@json_option
@click.pass_context
def holdout_rekey_cmd(ctx: click.Context, every: bool, as_json: bool) -> None:
    """Re-key match keys for this pairstore's normalization (every write command re-keys stale ones)."""
    with open_db(ctx) as store:  # opening for writing re-keys every stale table
        counts = rekey_every_table(store.con) if every else {}
        rows = key_versions(store.con)
    if as_json:
        echo_json({"normalization": normalization_version(), "rekeyed": counts, "tables": rows})
        return
    click.echo(f"normalization: {normalization_version()}")
    echo_table(["table", "current", "keyed_at"], [(r["table"], r["current"], r["keyed_at"]) for r in rows])
