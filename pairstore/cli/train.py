"""`pairstore train ...`: DPO, sampling and every merge method (the `train` extra).

Each command is built from one options dataclass (pairstore.cli.options): `train dpo` from
train.dpo_job.DpoOptions, `train sample` from train.sample.SampleOptions, and one command per registered
merge method (train.merges.registry: `train merge` is method lora, `train soup` method linear, `train
ties` method ties) from the method's options plus the publishing options every merge shares.
"""

from __future__ import annotations

import os
from typing import Any

import click
from click.core import ParameterSource

from pairstore.cli.base import as_plain, echo_counts, echo_json, echo_notes, json_option, open_db
from pairstore.cli.options import options_from, options_parameters, parameters
from pairstore.errors import NotFound
from train.dpo import train_dpo_at
from train.dpo_job import DpoOptions
from train.launch import emit_sbatch
from train.merges.registry import MethodSpec, get_method, merge, methods
from train.publish import recover_bundle
from train.sample import SampleOptions, sample


class TrainGroup(click.Group):
    """The fixed commands and one command per registered merge method, found when `train` is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *(s.command for s in methods().values())})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        try:
            return _method_command(get_method(cmd_name))
        except NotFound:
            return None


@click.group("train", cls=TrainGroup)
def train_group() -> None:
    """DPO+NLL LoRA training, sampling and merges: LoRA merge, soup, TIES (needs the `train` extra)."""


@train_group.command("dpo")
@options_parameters(DpoOptions)
@json_option
@click.pass_context
def train_dpo_cmd(ctx: click.Context, options: DpoOptions, as_json: bool) -> None:
    """Train a round's LoRA adapter with DPO + NLL on its exported mixture (exit 3 if the mixture changed)."""
    db = ctx.find_root().obj["db"]
    if options.emit_sbatch:
        with open_db(ctx, read_only=True) as store:
            path = emit_sbatch(store, options, db=db)
        if as_json:
            echo_json({"sbatch": str(path), "gpus": options.gpus})
        else:
            click.echo(f"wrote {path} ({options.gpus} GPUs); submit it with: sbatch {path}")
        return

    result = train_dpo_at(db, options)
    if as_json:
        echo_json(as_plain(result))
        return
    m = result.metrics
    click.echo(
        f"trained {result.adapter_name}: {m.get('global_step')} steps, "
        f"loss {m.get('loss', float('nan')):.4f}, "
        f"reward margin {m.get('rewards/margins', float('nan')):.4f}, "
        f"accuracy {m.get('rewards/accuracies', float('nan')):.3f} -> {result.out_dir}"
    )


@train_group.command("sample")
@options_parameters(SampleOptions)
@json_option
@click.pass_context
def train_sample_cmd(ctx: click.Context, options: SampleOptions, as_json: bool) -> None:
    """Answer items the way the bundle is served; store outputs with verdicts and loop flags."""
    with open_db(ctx) as store:
        r = sample(store, options)
    if as_json:
        echo_json(as_plain(r))
        return
    click.echo(
        f"{r.model}: {r.generations} generations for {r.items} items ({r.added} new), "
        f"loop-flagged {r.loop_flagged}"
    )
    echo_counts("verdicts", r.verdicts)
    if r.skipped:
        echo_counts("skipped", r.skipped)


# ---------------------------------------------------------------------------- merge methods


def _store_given(ctx: click.Context) -> bool:
    """Whether the command names a store: --db or PAIRSTORE_DB given, or the default store file exists."""
    root = ctx.find_root()
    return root.get_parameter_source("db") != ParameterSource.DEFAULT or os.path.exists(root.obj["db"])


def _publish_parameters(spec: MethodSpec) -> list[click.Parameter]:
    """What every merge method's command takes besides its own options: where and how it is published."""
    return [
        click.Option(
            ["--out", "out"],
            required=True,
            type=click.Path(file_okay=False, path_type=str),
            help="Output bundle folder (new, or a bundle pairstore wrote).",
        ),
        click.Option(
            ["--name", "name"],
            default=None,
            help=f"Checkpoint name to register (default: {spec.default_name}).",
        ),
        click.Option(
            ["--hash-output", "hash_output"],
            is_flag=True,
            help="Record the output shards' SHA-256 even when not registered (the inputs' always are).",
        ),
        click.Option(
            ["--no-register", "no_register"],
            is_flag=True,
            help="Do not register the checkpoint (by default it is registered when --db/PAIRSTORE_DB is "
            "given or the default store file exists).",
        ),
        click.Option(
            ["--json", "as_json"],
            is_flag=True,
            help="Print one JSON object on stdout and nothing else (docs/cli.md).",
        ),
    ]


def _and(names: list[str]) -> str:
    """Names joined for a sentence: a / a and b / a, b and c."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _method_command(spec: MethodSpec) -> click.Command:
    """`pairstore train COMMAND` of merge method `spec`: its options, then the publishing options."""

    def run(
        out: str, name: str | None, hash_output: bool, no_register: bool, as_json: bool, **values: Any
    ) -> None:
        ctx = click.get_current_context()
        options = options_from(spec.options, values, what=f"train {spec.command}")
        if _store_given(ctx) and not no_register:
            # The store is opened (and checked) before the first byte of the merge is written.
            with open_db(ctx) as store:
                echo_notes(recover_bundle(store, out))  # what a killed run left at --out, named and cleaned
                result = merge(spec, options, out, store=store, name=name, hash_output=hash_output)
        else:
            echo_notes(recover_bundle(None, out))
            result = merge(spec, options, out, name=name, hash_output=hash_output)
        if as_json:
            echo_json(as_plain(result))
            return
        click.echo(f"{result.summary} -> {out} ({result.evidence['seconds']} s)")
        if result.registered:
            click.echo(f"registered checkpoint {result.name} ({spec.kind} of {_and(result.parents)})")
        else:
            click.echo("not registered (--no-register)" if no_register else "not registered (no store given)")

    params = parameters(spec.options) + _publish_parameters(spec)
    return click.Command(
        spec.command, callback=run, params=params, help=spec.summary, epilog=f"Example: {spec.example_line()}"
    )
