"""`pairstore export`: a round's mixture through the holdout gate into parquet and evidence."""

from __future__ import annotations

import click

from pairstore.cli.base import (
    as_plain,
    cli_progress,
    complete,
    echo_counts,
    echo_json,
    json_option,
    open_db,
)
from pairstore.export.run import export_round


@click.command("export")
@click.option(
    "--round",
    "round_name",
    required=True,
    help="The round whose mixture to export.",
    shell_complete=complete("round"),
)
@click.option(
    "--out",
    "out_dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for NAME.parquet, NAME.sft.parquet and NAME.training_evidence.json.",
)
@click.option(
    "--bundle",
    type=click.Path(file_okay=False),
    help='Parent bundle folder whose system_prompt.txt a recipe with system_prompt = "bundle" uses.',
)
@click.option(
    "--system-prompt-file",
    type=click.Path(dir_okay=False),
    help='A system_prompt.txt to use for system_prompt = "bundle" (instead of --bundle).',
)
@click.option(
    "--replace",
    is_flag=True,
    help="Overwrite registered files in --out that would get other bytes (their registration is marked "
    "superseded); without it such an export is refused.",
)
@click.option(
    "--drop-held-out",
    is_flag=True,
    help="Drop the pairs the holdout gate finds held-out text in (named in the evidence) instead of "
    "refusing the export; the gate checks what is left again.",
)
@json_option
@click.pass_context
def export_cmd(
    ctx: click.Context,
    round_name: str,
    out_dir: str,
    bundle: str | None,
    system_prompt_file: str | None,
    replace: bool,
    drop_held_out: bool,
    as_json: bool,
) -> None:
    """Write a round's mixture through the holdout gate (exit 3 and nothing written on a hit)."""
    with open_db(ctx) as store:
        r = export_round(
            store,
            round_name,
            out_dir,
            bundle=bundle,
            system_prompt_file=system_prompt_file,
            replace=replace,
            drop_held_out=drop_held_out,
            progress=cli_progress(ctx),
        )
    if as_json:
        echo_json(as_plain(r))
        return
    for note in r.notes:
        click.echo(f"note: {note}")
    if r.superseded:
        click.echo(f"superseded: {', '.join(r.superseded)}")
    for info in r.files.values():
        click.echo(f"{info.path}: {info.rows} rows, sha256 {info.sha256}")
    click.echo(f"{r.evidence_path}")
    echo_counts("rows by source", r.rows_by_source)
    for b in r.blocks:
        if b["note"]:
            click.echo(f"note: block {b['source']}: {b['note']}")
    if r.gate is not None and r.gate.dropped_held_out:
        pairs = {d["pair_id"] for d in r.gate.dropped_held_out}
        click.echo(f"gate: dropped {len(pairs)} pair(s) holding held-out text:")
        for d in r.gate.dropped_held_out:
            blocks = ", ".join(f"block {b['block']} ({b['source']})" for b in d["blocks"])
            click.echo(f"  pair {d['pair_id']} in {blocks}: {d['set']}/{d['item_id']} ({d['how']})")
    if r.gate is not None and r.gate.exempted:
        click.echo(f"gate: passed with {len(r.gate.exempted)} exempted hit(s)")
    for note in r.gate.notes if r.gate is not None else []:
        click.echo(f"note: {note}")
