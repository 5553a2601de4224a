"""`pairstore demo`: the main job, end to end on bundled invented sample data.

    pairstore demo demo-run        # or: make demo

Builds a fresh store in the folder from the sample data shipped in
pairstore/sample_data/, then prints what it did and what to open next.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class DemoResult:
    out_dir: Path
    store_path: Path
    steps: list[tuple[str, str]] = field(default_factory=list)   # (step, what it did)


def sample_file(name: str) -> Path:
    import pairstore

    return Path(pairstore.__file__).parent / "sample_data" / name


def run_demo(out_dir, *, echo=print) -> DemoResult:
    from pairstore.holdout import sample_holdout
    from pairstore.ingest import ingest_battles
    from pairstore.store import open_store

    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    result = DemoResult(out_dir, out_dir / "pairstore.duckdb")

    def step(name, text):
        result.steps.append((name, text))
        echo(f"[{len(result.steps):>2}] {name}: {text}")

    with open_store(result.store_path) as store:
        r = ingest_battles(store, sample_file("battles.jsonl"))
        step("ingest battles", f"{r.added} invented battles")
        ids = sample_holdout(store, "judge34", n=34, seed=12076)
        step("holdout", f"judge34: {len(ids)} battles sampled, stratified by vote and category")
        votes = store.rows("SELECT * FROM battle_votes_by_category")
        total = sum(v["battles"] for v in votes)
        wins = sum(v["wins"] for v in votes)
        losses = sum(v["losses"] for v in votes)
        step("summary", f"{total} battles, {wins} wins, {losses} losses")
    return result
