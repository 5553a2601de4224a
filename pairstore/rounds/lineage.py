"""Lineage: the chain of rounds from the base model to a named round.

    pairstore lineage sm11a
    pairstore lineage sm11a --json

Every ancestor comes before its children (a soup's `a` side before its `b`
side, the order the model card lists them), each with its kind, parents,
alpha, job and the mixtures registered for it (exported here or attached
from elsewhere) with their rows and SHA-256.

A stage is a registered round (its recipe) or a registered checkpoint (a
bundle `train merge`, `train soup` or `train dpo` made or named), so a
user's own chain base -> round -> merge -> soup connects even where no
recipe names the merge or the soup. Each stage carries `checkpoint` (the
checkpoint of that name: kind, path, evidence) and `run` (the training
evidence of the round's adapter: what ran), or None.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pairstore.errors import NotFound

if TYPE_CHECKING:
    from pairstore.store.store import Store


def _checkpoint_row(row: dict) -> dict:
    """A checkpoint as a stage row: what a recipe would say, from what was registered."""
    evidence = json.loads(row["evidence"]) if row["evidence"] else {}
    recipe = {"note": f"checkpoint registered at {row['path']}" if row["path"] else None}
    if evidence.get("method"):
        recipe["method"] = evidence["method"]  # the merge method that made it (train.merges)
    parents = [p for p in row["parents"] if p != row["name"]]
    kind = {"merge": "dpo", "adapter": "dpo"}.get(row["kind"], row["kind"])
    if row["kind"] == "merge" and evidence.get("adapter", {}).get("step") and row["round"] != row["name"]:
        recipe["adapter_step"] = evidence["adapter"]["step"]
        parents = [p for p in row["parents"]]
    return {
        "name": row["name"],
        "kind": kind,
        "parents": parents,
        "alpha": row["alpha"],
        "job_id": None,
        "recipe": json.dumps(recipe),
        "recipe_sha256": None,
    }


def _stage(row: dict, exports: list[dict]) -> dict:
    recipe = json.loads(row["recipe"])
    train = recipe.get("train") or {}
    return {
        "name": row["name"],
        "kind": row["kind"],
        "parents": list(row["parents"]),
        "alpha": row["alpha"],
        "job_id": row["job_id"],
        "max_steps": train.get("max_steps"),
        "learning_rate": train.get("learning_rate"),
        "adapter_step": recipe.get("adapter_step"),
        "model": recipe.get("model"),
        "revision": recipe.get("revision"),
        "recipe_sha256": row["recipe_sha256"],
        "note": recipe.get("note"),
        "method": recipe.get("method"),
        "mixtures": [
            {
                "kind": e["kind"],
                "path": e["path"],
                "rows": e["rows"],
                "sha256": e["sha256"],
                "export_id": e["export_id"],
            }
            for e in exports
        ],
    }


def lineage(store: Store, name: str) -> list[dict]:
    """Stages from the base model to `name`, parents first. Raises NotFound for an unknown round
    or an ancestor whose recipe is not registered."""
    rounds = {
        r["name"]: r
        for r in store.rows("SELECT name, kind, parents, alpha, job_id, recipe, recipe_sha256 FROM rounds")
    }
    checkpoints = {
        c["name"]: c
        for c in store.rows(
            "SELECT name, kind, parents, alpha, round, path, evidence::VARCHAR AS evidence FROM checkpoints "
            "ORDER BY created_at, name"
        )
    }
    for n, row in checkpoints.items():
        if n not in rounds and row["kind"] != "adapter":  # an adapter is its round's run, not a stage
            rounds[n] = _checkpoint_row(row)
    runs = _runs(checkpoints)
    if name not in rounds:
        raise NotFound(f"no round or checkpoint {name!r} (add its recipe with `pairstore round add FILE`)")
    exports: dict[str, list[dict]] = {}
    for e in store.rows(
        "SELECT export_id, round, kind, path, rows, sha256 FROM exports ORDER BY created_at, export_id"
    ):
        exports.setdefault(e["round"], []).append(e)
    order: list[str] = []
    seen: set[str] = set()

    def visit(n: str, child: str | None) -> None:
        if n in seen:
            return
        if n not in rounds:
            raise NotFound(f"round {child!r} names parent {n!r}, which is not registered")
        seen.add(n)
        for p in rounds[n]["parents"]:
            visit(p, n)
        order.append(n)

    visit(name, None)
    stages = []
    for n in order:
        st = _stage(rounds[n], exports.get(n, []))
        c = checkpoints.get(n)
        st["checkpoint"] = (
            None
            if c is None
            else {
                "kind": c["kind"],
                "path": c["path"],
                "evidence": json.loads(c["evidence"]) if c["evidence"] else None,
            }
        )
        st["run"] = runs.get(n)
        stages.append(st)
    return stages


def _runs(checkpoints: dict[str, dict]) -> dict[str, dict]:
    """round -> the training evidence of its adapter (the one registered last under that round)."""
    out: dict[str, dict] = {}
    for c in checkpoints.values():
        if c["kind"] == "adapter" and c["round"] and c["evidence"]:
            out[c["round"]] = dict(json.loads(c["evidence"]), adapter=c["name"], adapter_path=c["path"])
    return out


def describe(stage: dict) -> str:
    """One line about how a stage was made: 'so7a + 0.5*(m11a - so7a)', 'DPO from so7a', ..."""
    kind, parents = stage["kind"], stage["parents"]
    if kind == "soup" and stage.get("alpha") is not None and len(parents) == 2:
        a, b = parents
        return f"{a} + {stage['alpha']:g}*({b} - {a})"
    if kind == "soup":  # a merge of several bundles (train ties)
        return f"{stage.get('method') or 'soup'} of {', '.join(parents)}"
    if kind == "base":
        rev = f"@{stage['revision'][:12]}" if stage.get("revision") else ""
        return f"{stage.get('model') or 'base model'}{rev}"
    text = f"DPO from {parents[0]}"
    if stage.get("adapter_step"):
        return f"{parents[0]} + LoRA delta of {parents[1]} at step {stage['adapter_step']}"
    details = [
        f"{stage['max_steps']} steps" if stage.get("max_steps") else None,
        f"lr {stage['learning_rate']:g}" if stage.get("learning_rate") else None,
    ]
    shown = [d for d in details if d]
    return text + (f" ({', '.join(shown)})" if shown else "")
