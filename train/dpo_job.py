"""Preparing a DPO round's training job from the store: the recipe, the hyperparameters, the checked
mixture. The training process (train/dpo.py, possibly under `accelerate launch` on other machines)
reads only the job file this makes; it never opens the store.

    # written as runs/m11a-lora/pairstore_job.json:
    job = prepare_job(store, "m11a", "runs/so7a", "runs/m11a-lora")
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
from pairstore.rounds.recipes import TRAIN_KEYS, DpoRecipe, TrainConfig, recipe_from_json
from pairstore.store.store import Store
from train.bundle import list_shards
from train.serving import bundle_name, load_serving, registered_name

JOB_FILE = "pairstore_job.json"


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

    round: str
    recipe: dict[str, Any]  # the stored recipe JSON, as the evidence cites it
    recipe_sha256: str
    seed: int
    hyperparameters: Hyperparameters
    mixture: dict[str, Any] | None  # the export's pair file: export_id, path, sha256, rows, content_hash
    sft_mixture: dict[str, Any] | None  # its NLL-only file, the same fields
    base_bundle: str
    base_name: str
    out_dir: str
    resume: bool
    save_steps: int
    trust_remote_code: bool

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["hyperparameters"] = self.hyperparameters.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainingJob:
        return cls(**{**data, "hyperparameters": Hyperparameters.from_json(data["hyperparameters"])})


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


def base_checkpoint_name(store: Store, base_bundle, recipe: DpoRecipe) -> str:
    """The base bundle's registered name; it must be the recipe's parent."""
    parent = recipe.parent
    name = registered_name(store, base_bundle)
    if name is not None:
        if parent and name != parent:
            raise BadInput(
                f"base bundle {base_bundle} is checkpoint {name}, but the recipe trains from {parent}",
                field="parent",
            )
        return name
    return parent or bundle_name(store, base_bundle)


def prepare_job(
    store,
    round_name: str,
    base_bundle,
    out_dir,
    *,
    resume: bool = False,
    world_size: int = 1,
    max_steps: int | None = None,
    save_steps: int | None = None,
    trust_remote_code: bool = False,
    overrides: dict | None = None,
) -> TrainingJob:
    """Everything a training process needs, resolved from the store (which the trainer never opens)."""

    recipe, recipe_json = round_recipe(store, round_name)
    hp = train_hyperparameters(
        recipe.train, round_name, world_size=world_size, max_steps=max_steps, overrides=overrides
    )
    pairs, sft = round_mixture(store, round_name)
    regate_mixture(store, pairs, sft)  # the gate again, against the holdout as it is now
    load_serving(
        base_bundle, trust_remote_code=trust_remote_code
    )  # template/tokenizer/generation mismatch: fail now

    list_shards(base_bundle)
    return TrainingJob(
        round=round_name,
        recipe=recipe_json,
        recipe_sha256=recipe.sha256,
        seed=recipe.seed,
        hyperparameters=hp,
        mixture=None if pairs is None else {k: pairs[k] for k in _EXPORT_FIELDS},
        sft_mixture=None if sft is None else {k: sft[k] for k in _EXPORT_FIELDS},
        base_bundle=str(Path(base_bundle).resolve()),
        base_name=base_checkpoint_name(store, base_bundle, recipe),
        out_dir=str(Path(out_dir).resolve()),
        resume=bool(resume),
        save_steps=int(save_steps) if save_steps else max(1, min(50, hp.max_steps)),
        trust_remote_code=bool(trust_remote_code),
    )
