"""The shipped sample battles: what the demo's leak story counts on."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

from pairstore.holdout.matching import candidate_table, find_holdout_hits
from pairstore.holdout.sets import add_members, resolve_ids
from pairstore.ingest.battles import ingest_battles

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(str(resources.files("pairstore") / "sample_data" / "battles.jsonl"))


def test_the_script_writes_the_shipped_file_byte_for_byte(tmp_path):
    out = tmp_path / "battles.jsonl"
    code = (
        "import runpy, sys, pathlib; g = runpy.run_path(sys.argv[1], run_name='sample');"
        "g['OUT'] = pathlib.Path(sys.argv[2]); g['main'].__globals__['OUT'] = g['OUT']; g['main']()"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "scripts" / "make_sample_battles.py"), str(out)], check=True
    )
    assert out.read_bytes() == SAMPLE.read_bytes()


def test_every_battle_is_found_only_by_its_own_texts(store):
    """All 120 battles held out: each battle's texts (every turn, both answers), under no id, hit only
    the battles that ask the same first question: no answer or follow-up of one battle stands in another."""
    ingest_battles(store, SAMPLE)
    battles = store.rows(
        "SELECT battle_id, prompt, own_answers, opponent_answers FROM battles ORDER BY battle_id"
    )
    ids = [(n, b["battle_id"]) for n, b in enumerate(battles, 1)]
    add_members(store, "all", resolve_ids(store, ids, "sample"))
    cands = candidate_table(
        (i, None, [], [dict(m) for m in b["prompt"]], None, [*b["own_answers"], *b["opponent_answers"]])
        for i, b in enumerate(battles)
    )
    found: dict[str, set] = {}
    for h in find_holdout_hits(store, cands, set_name="all"):
        found.setdefault(battles[h.row_index]["battle_id"], set()).add(h.item_id)
    firsts = {}
    for b in battles:
        first = next(m["content"] for m in b["prompt"] if m["role"] == "user")
        firsts.setdefault(first, set()).add(b["battle_id"])
    for b in battles:
        first = next(m["content"] for m in b["prompt"] if m["role"] == "user")
        assert b["battle_id"] in found[b["battle_id"]]
        assert found[b["battle_id"]] <= firsts[first], b["battle_id"]
