"""Preparing a DPO round's training job from the store: the recipe, the hyperparameters, the checked
mixture and base. The training process (train/dpo.py, possibly under `accelerate launch` on other
machines) reads only the job file this makes; it never opens the store.

    options = DpoOptions(round="m11a", base="runs/so7a", out="runs/m11a-lora")
    job = prepare_job(store, options)      # written as runs/m11a-lora/pairstore_job.json

`DpoOptions` is `pairstore train dpo`'s one options object: every flag declared once (pairstore.options),
carried whole into the job and saved in the adapter's training evidence.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairstore.errors import BadInput, GateRefused, NotFound, PairstoreError
from pairstore.export.gate import exported_system_prompt, regate_export
from pairstore.export.paths import is_sft_file
from pairstore.keys import sha256_file
from pairstore.options import check_options, make_options, option, options_json
from pairstore.progress import NO_PROGRESS
from pairstore.progress import current as current_progress
from pairstore.rounds.recipes import TRAIN_KEYS, DpoRecipe, TrainConfig, recipe_from_json
from pairstore.store.store import Store
from train.bundle import list_shards, shard_sha256s
from train.serving import bundle_name, load_serving, registered_name

JOB_FILE = "pairstore_job.json"


@dataclass(frozen=True, kw_only=True)
class DpoOptions:
    """`pairstore train dpo`: what to train, where, and how it runs."""

    round: str = option(help="The dpo round whose export to train on.", complete="round")
    base: str = option(help="The base bundle (the round's parent, merged full weights).", path=True)
    out: str = option(help="Folder for the adapter, its checkpoints and training_evidence.json.", path=True)
    resume: bool = option(False, help="Continue from the last checkpoint-N in --out.")
    max_steps: int | None = option(None, help="Override the recipe's max_steps (smoke runs).", min=1)
    save_steps: int | None = option(
        None, help="Save a checkpoint every N steps (default: 50, or max_steps when fewer).", min=1
    )
    allow_other_base: bool = option(
        False,
        help="Train from a base bundle that is not the recipe's parent (recorded in the evidence).",
    )
    report_to: tuple[str, ...] = option(
        (),
        help="Also log to this experiment tracker through TRL (tensorboard, wandb, mlflow, ...); give it "
        "once per tracker. The loss is always logged to stderr and training_log.jsonl.",
    )
    launcher: str | None = option(
        None,
        help="Run through `accelerate launch` (multi-GPU with --num-processes).",
        choices=("accelerate",),
    )
    num_processes: int = option(
        1,
        help="World size under --launcher accelerate; gradient accumulation = global_batch / "
        "(per_device_batch x this).",
        min=1,
    )
    accelerate_config: str | None = option(
        None,
        help="zero3 | fsdp | cpu (shipped in train/configs) or a YAML path (default: zero3 with a GPU, "
        "else cpu).",
    )
    emit_sbatch: str | None = option(
        None, help="Do not train: prepare the job and write a Slurm script for it to this path.", path=True
    )
    gpus: int = option(4, help="GPUs of the Slurm job (--emit-sbatch).", min=1)
    time: str = option("04:00:00", help="Slurm time limit (--emit-sbatch).")
    partition: str | None = option(None, help="Slurm partition (--emit-sbatch).")
    name: str | None = option(None, help="Checkpoint name of the adapter (default: ROUND-lora).")
    trust_remote_code: bool = option(False, help="Allow the bundle's own Python code (off by default).")


def dpo_options(options: DpoOptions | None = None, /, **values: Any) -> DpoOptions:
    """`train dpo`'s options, checked: an object as it is, or keywords (round=..., base=..., out=...)."""
    if options is None:
        return make_options(DpoOptions, values, what="train dpo")
    if values:
        raise BadInput("train dpo: give an options object or keywords, not both")
    return check_options(options, what="train dpo")


@dataclass(frozen=True, kw_only=True)
class Hyperparameters(TrainConfig):
    """The recipe's [train] table with this run's overrides applied, and what follows from the world size.
    In the job file and the evidence as one flat object (to_json)."""

    world_size: int
    gradient_accumulation_steps: int
    warmup_steps: int
    overrides: dict[str, Any] = field(default_factory=dict)  # the [train] values this run replaced

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if not self.overrides:
            del out["overrides"]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Hyperparameters:
        return cls(**data)


@dataclass(frozen=True)
class TrainingJob:
    """Everything a training process needs, resolved from the store (which the trainer never opens); the
    job file is to_json() of it."""

    options: DpoOptions  # the command's options, whole (saved in the evidence)
    round: str
    recipe: dict[str, Any]  # the stored recipe JSON, as the evidence cites it
    recipe_sha256: str
    seed: int
    hyperparameters: Hyperparameters
    mixture: dict[str, Any] | None  # the export's pair file: export_id, path, sha256, rows, content_hash
    sft_mixture: dict[str, Any] | None  # its NLL-only file, the same fields
    base_bundle: str  # resolved
    base_name: str
    base_check: dict[str, Any]  # how the base was checked against the recipe's parent (check_base)
    out_dir: str  # resolved
    save_steps: int
    log_lines: bool  # a line per logging step on stderr when it is not a terminal (the CLI's, not --quiet)

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["options"] = options_json(self.options)
        out["hyperparameters"] = self.hyperparameters.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainingJob:
        return cls(
            **{
                **data,
                "options": make_options(DpoOptions, data["options"], what="the job file's options"),
                "hyperparameters": Hyperparameters.from_json(data["hyperparameters"]),
            }
        )


_EXPORT_FIELDS = ("export_id", "path", "sha256", "rows", "content_hash")


def round_recipe(store: Store, round_name: str) -> tuple[DpoRecipe, dict[str, Any]]:
    """The dpo round's recipe and its stored JSON (what the evidence cites)."""
    row = store.rows("SELECT kind, recipe, recipe_sha256 FROM rounds WHERE name = ?", [round_name])
    if not row:
        raise NotFound(f"no round named {round_name!r} (add its recipe with `pairstore round add`)")
    if row[0]["kind"] != "dpo":
        raise BadInput(f"round {round_name} is a {row[0]['kind']} round; only dpo rounds train", field="kind")
    data = json.loads(row[0]["recipe"]) if isinstance(row[0]["recipe"], str) else row[0]["recipe"]
    recipe = recipe_from_json(data, sha256=row[0]["recipe_sha256"])
    assert isinstance(recipe, DpoRecipe)
    return recipe, data


def round_mixture(store, round_name: str) -> tuple[dict | None, dict | None]:
    """The round's latest export that is not superseded: (pair file, NLL-only file), either None when the
    export has no such rows.
    Each file's bytes are checked against the registry (GateRefused when changed)."""
    rows = store.rows(
        "SELECT export_id, path, sha256, rows, content_hash FROM exports "
        "WHERE round = ? AND kind = 'export' AND superseded_at IS NULL "
        "AND created_at = (SELECT max(created_at) FROM exports WHERE round = ? AND kind = 'export' "
        "                  AND superseded_at IS NULL) "
        "ORDER BY path",
        [round_name, round_name],
    )
    if not rows:
        raise NotFound(
            f"round {round_name} has no export (run `pairstore export --round {round_name}` first)"
        )
    sft = [r for r in rows if is_sft_file(r["path"])]
    pairs = [r for r in rows if not is_sft_file(r["path"])]
    if len(pairs) > 1 or len(sft) > 1:
        raise PairstoreError(
            f"round {round_name}: the latest export registers several files of one kind: "
            + ", ".join(r["path"] for r in rows)
        )
    for r in rows:
        verify_mixture(r)
    return (pairs[0] if pairs else None), (sft[0] if sft else None)


def regate_mixture(store, pairs: dict | None, sft: dict | None) -> None:
    """Today's holdout gate on the round's exported rows (pairstore.export.gate.regate_export): GateRefused
    (exit 3) naming what changed since the export when it would now be refused."""
    mixtures = [m for m in (pairs, sft) if m is not None]
    if not mixtures:
        return
    system = next((s for s in (exported_system_prompt(m["path"]) for m in mixtures) if s is not None), None)
    regate_export(store, [m["export_id"] for m in mixtures], system)


def verify_mixture(mixture: dict) -> None:
    path = Path(mixture["path"])
    if not path.is_file():
        raise GateRefused(f"mixture {path} registered for this round is missing; re-export it")
    actual = sha256_file(path)
    if actual != mixture["sha256"]:
        raise GateRefused(
            f"mixture {path} was changed after export: SHA-256 {actual} differs from the "
            f"registered {mixture['sha256']}; refusing to train on it"
        )


def train_hyperparameters(
    train: TrainConfig,
    round_name: str,
    *,
    world_size: int,
    max_steps: int | None,
    overrides: dict | None = None,
) -> Hyperparameters:
    """The recipe's [train] table with `max_steps` / `overrides` applied (recorded in the evidence), checked
    against the world size."""
    overrides = dict(overrides or {})
    if max_steps is not None:
        overrides["max_steps"] = int(max_steps)
    unknown = sorted(set(overrides) - set(TRAIN_KEYS))
    if unknown:
        raise BadInput(f"unknown training override {unknown[0]!r}", field=f"train.{unknown[0]}")
    train = dataclasses.replace(train, **overrides)
    if world_size < 1:
        raise BadInput(f"world size must be at least 1, got {world_size}", field="world_size")
    per_step = train.per_device_batch * world_size
    if per_step < 1 or train.global_batch % per_step:
        raise BadInput(
            f"round {round_name}: global_batch {train.global_batch} is not a multiple of per_device_batch "
            f"{train.per_device_batch} x world size {world_size}",
            field="train.global_batch",
        )
    tm = train.target_modules
    if not (tm == "all-linear" or (isinstance(tm, list) and tm and all(isinstance(x, str) for x in tm))):
        raise BadInput(
            f"target_modules must be 'all-linear' or a list of module names, got {tm!r}",
            field="train.target_modules",
        )
    return Hyperparameters(
        **dataclasses.asdict(train),
        world_size=world_size,
        gradient_accumulation_steps=train.global_batch // per_step,
        warmup_steps=math.ceil(train.max_steps * train.warmup_ratio),
        overrides=dict(sorted(overrides.items())),
    )


def _recorded_shards(evidence: dict[str, Any] | None) -> dict[str, str] | None:
    """The shard SHA-256s a checkpoint's evidence records for its own weights (a merge's, a soup's)."""
    if not evidence:
        return None
    output = evidence.get("output")
    if isinstance(output, dict) and output.get("shards_sha256"):
        return output["shards_sha256"]
    return evidence.get("shard_sha256") or None


def _same_weights(
    base_bundle: str | Path, parent_path: str | None, recorded: dict[str, str] | None
) -> bool | None:
    """Whether the base bundle holds the parent's weights, by shard SHA-256 (sizes first, so a different
    bundle is told without reading it); None when neither the parent's files nor its evidence can say."""
    base_sizes = {p.name: p.stat().st_size for p in list_shards(base_bundle)}
    parent = Path(parent_path) if parent_path else None
    if parent is not None and parent.is_dir():
        if base_sizes != {p.name: p.stat().st_size for p in list_shards(parent)}:
            return False
        return shard_sha256s(base_bundle) == (recorded or shard_sha256s(parent))
    if recorded:
        return set(base_sizes) == set(recorded) and shard_sha256s(base_bundle) == recorded
    return None


def check_base(store: Store, options: DpoOptions, recipe: DpoRecipe) -> tuple[str, dict[str, Any]]:
    """The base bundle's checkpoint name and how it was checked against the recipe's parent: registered
    under the parent's name, or the same weights (shard SHA-256) as the parent's registered bundle. A base
    that is another checkpoint, other weights, or cannot be told is BadInput (exit 2) naming both, unless
    `allow_other_base`, which is recorded."""
    base, parent = options.base, recipe.parent
    registered = registered_name(store, base)
    if not parent:
        return registered or bundle_name(store, base), {"recipe_parent": None, "check": "no parent"}
    if registered == parent:
        return parent, {"recipe_parent": parent, "check": "registered as the parent"}
    row = store.rows("SELECT path, evidence::VARCHAR AS evidence FROM checkpoints WHERE name = ?", [parent])
    if registered is None and (not row or not row[0]["path"]):
        # The parent has no bundle here yet: this one is registered as it (train.dpo.register_adapter).
        return parent, {
            "recipe_parent": parent,
            "check": "the parent had no bundle; this one registered as it",
        }
    if registered is not None:
        differs = f"base bundle {base} is checkpoint {registered}, not {parent}"
    else:
        evidence = json.loads(row[0]["evidence"]) if row[0]["evidence"] else None
        same = _same_weights(base, row[0]["path"], _recorded_shards(evidence))
        if same:
            return parent, {"recipe_parent": parent, "check": f"the same weights as {parent} (shard SHA-256)"}
        differs = (
            f"base bundle {base} is not {parent}: "
            + ("its weights differ from" if same is False else "nothing can compare it with")
            + f" {parent}'s bundle at {row[0]['path']}"
        )
    if not options.allow_other_base:
        raise BadInput(
            f"{differs}, the parent round {options.round} trains from; give {parent}'s bundle as --base, "
            "or --allow-other-base to train from this one",
            field="base",
        )
    return registered or bundle_name(store, base), {
        "recipe_parent": parent,
        "check": f"allowed by --allow-other-base: {differs}",
        "allow_other_base": True,
    }


def prepare_job(store: Store, options: DpoOptions, *, overrides: dict[str, Any] | None = None) -> TrainingJob:
    """Everything a training process needs, resolved from the store (which the trainer never opens).
    `overrides` replaces [train] values for this run (the demo's small batch); they are recorded in the
    evidence's hyperparameters."""
    options = dpo_options(options)
    recipe, recipe_json = round_recipe(store, options.round)
    world_size = options.gpus if options.emit_sbatch else options.num_processes
    hp = train_hyperparameters(
        recipe.train, options.round, world_size=world_size, max_steps=options.max_steps, overrides=overrides
    )
    pairs, sft = round_mixture(store, options.round)
    regate_mixture(store, pairs, sft)  # the gate again, against the holdout as it is now
    # template/tokenizer/generation mismatch: fail now
    load_serving(options.base, trust_remote_code=options.trust_remote_code)
    list_shards(options.base)
    check_report_to(options.report_to)
    base_name, base_check = check_base(store, options, recipe)
    return TrainingJob(
        options=options,
        round=options.round,
        recipe=recipe_json,
        recipe_sha256=recipe.sha256,
        seed=recipe.seed,
        hyperparameters=hp,
        mixture=None if pairs is None else {k: pairs[k] for k in _EXPORT_FIELDS},
        sft_mixture=None if sft is None else {k: sft[k] for k in _EXPORT_FIELDS},
        base_bundle=str(Path(options.base).resolve()),
        base_name=base_name,
        base_check=base_check,
        out_dir=str(Path(options.out).resolve()),
        save_steps=options.save_steps or max(1, min(50, hp.max_steps)),
        log_lines=current_progress() is not NO_PROGRESS,
    )


def check_report_to(trackers: tuple[str, ...]) -> None:
    """Each --report-to is an integration transformers knows and whose package is installed here."""
    if not trackers:
        return
    from transformers.integrations.integration_utils import (
        INTEGRATION_TO_CALLBACK,
        get_available_reporting_integrations,
    )

    available = set(get_available_reporting_integrations())
    for name in trackers:
        if name not in INTEGRATION_TO_CALLBACK:
            raise BadInput(
                f"unknown --report-to {name!r} (transformers knows: {', '.join(INTEGRATION_TO_CALLBACK)})",
                field="report_to",
            )
        if name not in available:
            raise BadInput(
                f"--report-to {name} needs its package installed (pip install {name})", field="report_to"
            )
