"""`pairstore train ...`: DPO, merge, sampling and soup (the `train` extra)."""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.core import ParameterSource

from pairstore.cli.base import (
    as_plain,
    check_seed,
    complete,
    echo_counts,
    echo_json,
    echo_notes,
    generation_options,
    json_option,
    open_db,
    trust_remote_code_option,
)
from pairstore.rounds.checkpoints import checkpoint_name, register_folder
from train.dpo import train_dpo_at
from train.launch import emit_sbatch
from train.merge import merge_adapter
from train.publish import recover_bundle
from train.sample import sample
from train.soup import soup


@click.group("train")
def train_group():
    """DPO+NLL LoRA training, merge, soup and sampling (needs the `train` extra)."""


@train_group.command("dpo")
@click.option(
    "--round",
    "round_name",
    required=True,
    help="The dpo round whose export to train on.",
    shell_complete=complete("round"),
)
@click.option(
    "--base",
    "base",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="The base bundle (the round's parent, merged full weights).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="Folder for the adapter, its checkpoints and training_evidence.json.",
)
@click.option("--resume", is_flag=True, help="Continue from the last checkpoint-N in --out.")
@click.option("--max-steps", type=int, default=None, help="Override the recipe's max_steps (smoke runs).")
@click.option(
    "--save-steps",
    type=int,
    default=None,
    help="Save a checkpoint every N steps (default: 50, or max_steps when fewer).",
)
@click.option(
    "--launcher",
    type=click.Choice(["accelerate"]),
    default=None,
    help="Run through `accelerate launch` (multi-GPU with --num-processes).",
)
@click.option(
    "--num-processes",
    type=int,
    default=1,
    show_default=True,
    help="World size under --launcher accelerate; gradient accumulation = global_batch / "
    "(per_device_batch x this).",
)
@click.option(
    "--accelerate-config",
    default=None,
    help="zero3 | fsdp | cpu (shipped in train/configs) or a YAML path (default: zero3 with a GPU, "
    "else cpu).",
)
@click.option(
    "--emit-sbatch",
    "sbatch_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=str),
    help="Do not train: prepare the job and write a Slurm script for it to this path.",
)
@click.option("--gpus", type=int, default=4, show_default=True, help="GPUs of the Slurm job (--emit-sbatch).")
@click.option(
    "--time", "time_limit", default="04:00:00", show_default=True, help="Slurm time limit (--emit-sbatch)."
)
@click.option("--partition", default=None, help="Slurm partition (--emit-sbatch).")
@click.option("--name", default=None, help="Checkpoint name of the adapter (default: ROUND-lora).")
@trust_remote_code_option
@json_option
@click.pass_context
def train_dpo_cmd(
    ctx,
    round_name,
    base,
    out_dir,
    resume,
    max_steps,
    save_steps,
    launcher,
    num_processes,
    accelerate_config,
    sbatch_path,
    gpus,
    time_limit,
    partition,
    name,
    trust_remote_code,
    as_json,
):
    """Train a round's LoRA adapter with DPO + NLL on its exported mixture (exit 3 if the mixture changed)."""
    db = ctx.find_root().obj["db"]
    if sbatch_path:
        with open_db(ctx, read_only=True) as store:
            path = emit_sbatch(
                store,
                round_name,
                base,
                out_dir,
                sbatch_path,
                db=db,
                gpus=gpus,
                config=accelerate_config or "zero3",
                time_limit=time_limit,
                partition=partition,
                max_steps=max_steps,
                trust_remote_code=trust_remote_code,
                adapter_name=name,
            )
        if as_json:
            echo_json({"sbatch": str(path), "gpus": gpus})
        else:
            click.echo(f"wrote {path} ({gpus} GPUs); submit it with: sbatch {path}")
        return

    result = train_dpo_at(
        db,
        round_name,
        base,
        out_dir,
        resume=resume,
        world_size=num_processes,
        max_steps=max_steps,
        save_steps=save_steps,
        launcher=launcher,
        accelerate_config=accelerate_config,
        trust_remote_code=trust_remote_code,
        adapter_name=name,
    )
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


@train_group.command("merge")
@click.option(
    "--base",
    "base",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="The bundle the adapter was trained on.",
)
@click.option(
    "--adapter",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="The adapter folder, or one of its checkpoint-N folders.",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="Output bundle folder.",
)
@click.option(
    "--name",
    default=None,
    help="Checkpoint name (default: the round, or ROUND-stepN for an intermediate checkpoint).",
)
@click.option(
    "--base-name",
    default=None,
    help="Checkpoint name of the base (default: the name it is registered under, else the name the "
    "adapter's training recorded, else its folder's).",
)
@click.option(
    "--max-shard-mb", type=int, default=2048, show_default=True, help="Largest output shard in MiB."
)
@trust_remote_code_option
@json_option
@click.pass_context
def train_merge_cmd(ctx, base, adapter, out_dir, name, base_name, max_shard_mb, trust_remote_code, as_json):
    """Merge a LoRA adapter into full weights: a bundle with the base's serving files."""
    with open_db(ctx) as store:
        echo_notes(recover_bundle(store, out_dir))  # what a killed run left at --out, named and cleaned
        result = merge_adapter(
            base,
            adapter,
            out_dir,
            store=store,
            name=name,
            base_name=base_name,
            max_shard_bytes=max_shard_mb << 20,
            trust_remote_code=trust_remote_code,
        )
    if as_json:
        echo_json(as_plain(result))
        return
    click.echo(
        f"merged {result.merged_modules} LoRA modules ({result.method}) -> {result.out_dir}; "
        f"registered checkpoint {result.name}"
    )


@train_group.command("sample")
@click.option(
    "--model",
    "bundle",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="The bundle to answer with.",
)
@click.option(
    "--items",
    required=True,
    help="gsm8k | math (train problems) | tasks | a JSONL/parquet of {id?, prompt, gold?, kind?}.",
)
@click.option("--n", type=int, default=None, help="Only the first N items.")
@click.option("--samples", type=int, default=1, show_default=True, help="Answers per item.")
@click.option("--temperature", type=float, default=0.0, show_default=True, help="0 = greedy.")
@click.option(
    "--seed",
    callback=check_seed,
    type=int,
    default=0,
    show_default=True,
    help="Sampling seed (per item: hash of seed, id).",
)
@click.option(
    "--repetition-penalty",
    type=float,
    default=None,
    help="Decoding knob (default: the bundle's serving_config decoding, else off).",
)
@click.option(
    "--no-repeat-ngram-size",
    type=int,
    default=None,
    help="Decoding knob (default: the bundle's serving_config decoding, else off).",
)
@generation_options
@click.option(
    "--name",
    "model_name",
    default=None,
    help="Model name for the generations (default: the bundle's checkpoint name).",
)
@trust_remote_code_option
@json_option
@click.pass_context
def train_sample_cmd(
    ctx,
    bundle,
    items,
    n,
    samples,
    temperature,
    seed,
    repetition_penalty,
    no_repeat_ngram_size,
    max_new_tokens,
    engine,
    model_name,
    trust_remote_code,
    as_json,
):
    """Answer items the way the bundle is served; store outputs with verdicts and loop flags."""
    decoding = {"repetition_penalty": repetition_penalty, "no_repeat_ngram_size": no_repeat_ngram_size}
    with open_db(ctx) as store:
        r = sample(
            store,
            bundle,
            items,
            n=n,
            samples=samples,
            temperature=temperature,
            seed=seed,
            decoding=decoding,
            model_name=model_name,
            max_new_tokens=max_new_tokens,
            engine=engine,
            trust_remote_code=trust_remote_code,
        )
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


@train_group.command("soup")
@click.argument("a_dir", metavar="A", type=click.Path(file_okay=False, path_type=str))
@click.argument("b_dir", metavar="B", type=click.Path(file_okay=False, path_type=str))
@click.option("--alpha", type=float, required=True, help="Weight of B: out = A + alpha*(B - A).")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=str),
    help="Output bundle folder (new or empty).",
)
@click.option("--name", default=None, help="Checkpoint name to register (default: the output folder's name).")
@click.option(
    "--a-name",
    default=None,
    help="Checkpoint name of A (default: the name A is registered under, else its folder's).",
)
@click.option(
    "--b-name",
    default=None,
    help="Checkpoint name of B (default: the name B is registered under, else its folder's).",
)
@click.option(
    "--slice-mb",
    type=int,
    default=16,
    show_default=True,
    help="Streaming slice size in MiB (memory is about 11 slices plus the interpreter).",
)
@click.option(
    "--hash-output",
    is_flag=True,
    help="Also record the output shards' SHA-256 in the evidence (the inputs' are always recorded).",
)
@click.option(
    "--no-register",
    is_flag=True,
    help="Do not register the checkpoint (by default it is registered when --db/PAIRSTORE_DB is "
    "given or the default store file exists).",
)
@json_option
@click.pass_context
def train_soup_cmd(
    ctx, a_dir, b_dir, alpha, out_dir, name, a_name, b_name, slice_mb, hash_output, no_register, as_json
):
    """Soup two bundles with the same tensors: OUT = A + alpha*(B - A), streamed shard by shard."""

    root = ctx.find_root()
    given = root.get_parameter_source("db") != ParameterSource.DEFAULT or os.path.exists(root.obj["db"])
    register = given and not no_register
    name = name or Path(out_dir).resolve().name
    parents = [a_name or Path(a_dir).resolve().name, b_name or Path(b_dir).resolve().name]
    options = {"slice_bytes": slice_mb << 20, "hash_output": hash_output}
    if register:
        # The store is opened (and checked) before the first byte of the soup is written.
        with open_db(ctx) as store:
            echo_notes(recover_bundle(store, out_dir))  # what a killed run left at --out, named and cleaned
            # One name per checkpoint: the parents by the names their folders are registered under.
            parents = [checkpoint_name(store, a_dir, a_name), checkpoint_name(store, b_dir, b_name)]
            evidence = soup(a_dir, b_dir, alpha, out_dir, store=store, name=name, parents=parents, **options)
            for folder, parent in zip((a_dir, b_dir), parents):  # after the soup: a refusal changes nothing
                register_folder(store, folder, parent)
    else:
        echo_notes(recover_bundle(None, out_dir))
        evidence = soup(a_dir, b_dir, alpha, out_dir, **options)
    if as_json:
        echo_json({"evidence": evidence, "registered": name if register else None})
        return
    out = evidence["output"]
    click.echo(
        f"soup: {out['tensors']} tensors, {out['total_size']} bytes in {len(out['shards'])} "
        f"shard(s), alpha={alpha} -> {out_dir} ({evidence['seconds']} s)"
    )
    if register:
        click.echo(f"registered checkpoint {name} (soup of {parents[0]} and {parents[1]})")
    else:
        click.echo("not registered (no store given)" if not no_register else "not registered (--no-register)")
