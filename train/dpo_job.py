"""Preparing a DPO round's training job from the store: the recipe, the hyperparameters, the checked
mixture. The training process (train/dpo.py, possibly under `accelerate launch` on other machines)
reads only the job file this makes; it never opens the store.

    job = prepare_job(store, "m11a", "runs/so7a", "runs/m11a-lora")     # written as runs/m11a-lora/pairstore_job.json
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pairstore.errors import BadInput, GateRefused, NotFound, PairstoreError
from pairstore.export.paths import is_sft_file
from pairstore.keys import sha256_file
from train.bundle import list_shards
from train.serving import bundle_name, load_serving, registered_name

JOB_FILE = "pairstore_job.json"
TRAIN_KEYS = (
    "beta",
    "sft_weight",
    "lora_rank",
    "lora_alpha",
    "lora_dropout",
    "target_modules",
    "learning_rate",
    "lr_scheduler",
    "warmup_ratio",
    "max_steps",
    "global_batch",
    "per_device_batch",
    "max_length",
)
_EXPORT_FIELDS = ("export_id", "path", "sha256", "rows", "content_hash")


def round_recipe(store, round_name: str) -> dict:
    row = store.rows("SELECT kind, recipe, recipe_sha256 FROM rounds WHERE name = ?", [round_name])
    if not row:
        raise NotFound(f"no round named {round_name!r} (add its recipe with `pairstore round add`)")
    if row[0]["kind"] != "dpo":
        raise BadInput(f"round {round_name} is a {row[0]['kind']} round; only dpo rounds train", field="kind")
    recipe = json.loads(row[0]["recipe"]) if isinstance(row[0]["recipe"], str) else row[0]["recipe"]
    return {"recipe": recipe, "recipe_sha256": row[0]["recipe_sha256"]}


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
    recipe: dict, round_name: str, *, world_size: int, max_steps: int | None, overrides: dict | None = None
) -> dict:
    """The recipe's [train] table, checked, with `max_steps` / `overrides` applied (recorded in the evidence)."""
    train = recipe.get("train")
    if not isinstance(train, dict):
        raise BadInput(f"round {round_name}: recipe has no [train] table", field="train")
    missing = [k for k in TRAIN_KEYS if k not in train]
    if missing:
        raise BadInput(f"round {round_name}: recipe [train] lacks {missing[0]}", field=f"train.{missing[0]}")
    hp = {k: train[k] for k in TRAIN_KEYS}
    overrides = dict(overrides or {})
    if max_steps is not None:
        overrides["max_steps"] = int(max_steps)
    unknown = sorted(set(overrides) - set(TRAIN_KEYS))
    if unknown:
        raise BadInput(f"unknown training override {unknown[0]!r}", field=f"train.{unknown[0]}")
    hp.update(overrides)
    if overrides:
        hp["overrides"] = dict(sorted(overrides.items()))
    if world_size < 1:
        raise BadInput(f"world size must be at least 1, got {world_size}", field="world_size")
    per_step = int(hp["per_device_batch"]) * world_size
    if per_step < 1 or int(hp["global_batch"]) % per_step:
        raise BadInput(
            f"round {round_name}: global_batch {hp['global_batch']} is not a multiple of per_device_batch "
            f"{hp['per_device_batch']} x world size {world_size}",
            field="train.global_batch",
        )
    hp["world_size"] = world_size
    hp["gradient_accumulation_steps"] = int(hp["global_batch"]) // per_step
    hp["warmup_steps"] = math.ceil(int(hp["max_steps"]) * float(hp["warmup_ratio"]))
    tm = hp["target_modules"]
    if not (tm == "all-linear" or (isinstance(tm, list) and tm and all(isinstance(x, str) for x in tm))):
        raise BadInput(
            f"target_modules must be 'all-linear' or a list of module names, got {tm!r}",
            field="train.target_modules",
        )
    return hp


def base_checkpoint_name(store, base_bundle, recipe: dict) -> str:
    """The base bundle's registered name; it must be the recipe's parent when the recipe names one."""
    parent = recipe.get("parent")
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
) -> dict:
    """Everything a training process needs, resolved from the store (which the trainer never opens)."""

    r = round_recipe(store, round_name)
    recipe = r["recipe"]
    hp = train_hyperparameters(
        recipe, round_name, world_size=world_size, max_steps=max_steps, overrides=overrides
    )
    pairs, sft = round_mixture(store, round_name)
    load_serving(
        base_bundle, trust_remote_code=trust_remote_code
    )  # template/tokenizer/generation mismatch: fail now

    list_shards(base_bundle)
    steps = int(hp["max_steps"])
    return {
        "round": round_name,
        "recipe": recipe,
        "recipe_sha256": r["recipe_sha256"],
        "seed": int(recipe.get("seed") or 0),
        "hyperparameters": hp,
        "mixture": None if pairs is None else {k: pairs[k] for k in _EXPORT_FIELDS},
        "sft_mixture": None if sft is None else {k: sft[k] for k in _EXPORT_FIELDS},
        "base_bundle": str(Path(base_bundle).resolve()),
        "base_name": base_checkpoint_name(store, base_bundle, recipe),
        "out_dir": str(Path(out_dir).resolve()),
        "resume": bool(resume),
        "save_steps": int(save_steps) if save_steps else max(1, min(50, steps)),
        "trust_remote_code": bool(trust_remote_code),
    }
