"""A gate refusal you can act on: per hit the [[mix]] block, the source, the file and line, the held-out
member and its text; `export --drop-held-out` drops exactly the refused pairs, records them in the
evidence and the folder's card, and the result passes the gate again."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from pairstore.export.gate import regate_export
from pairstore.holdout.sets import add_members
from pairstore.store.store import open_store
from tests.holdout.test_gate import member

HELD = {
    "h1": "What is the capital of Peru, and why was it founded on that river?",
    "h2": "Which three temples in Kyoto show the best maple leaves in late autumn?",
}


def question(i: int) -> str:
    return f"Clean question {i}: what is the boiling point of water at an altitude of {i} km?"


@pytest.fixture
def leaky(run_cli, tmp_path, write_jsonl, dpo_recipe):
    """A store with two pair files (sources `web` and `forum`), the forum file holding the two held-out
    prompts on lines 3 and 5, a holdout set `judge` of them, and a round `rw` of two [[mix]] blocks."""
    web = [{"prompt": question(i), "chosen": f"Good {i}.", "rejected": f"Bad {i}."} for i in range(4)]
    forum = [{"prompt": question(10 + i), "chosen": f"Fine {i}.", "rejected": f"Poor {i}."} for i in range(5)]
    forum[2]["prompt"] = HELD["h1"]
    forum[4]["prompt"] = HELD["h2"].upper()  # a disguise the gate still finds
    web_file = write_jsonl(tmp_path / "web.jsonl", web)
    assert run_cli("ingest", "pairs", web_file, "--source", "web").exit_code == 0
    forum_file = write_jsonl(tmp_path / "forum.jsonl", forum)
    assert run_cli("ingest", "pairs", forum_file, "--source", "forum").exit_code == 0
    store = open_store(tmp_path / "store.duckdb")
    add_members(store, "judge", [member(k, v) for k, v in HELD.items()])
    store.close()
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    blocks = ['source = "web"', 'source = "forum"\nupsample = 2']
    (tmp_path / "rw.toml").write_text(dpo_recipe("rw", blocks=blocks))
    assert run_cli("round", "add", tmp_path / "base.toml", tmp_path / "rw.toml").exit_code == 0
    return tmp_path


def test_a_refusal_names_block_source_file_line_member_and_text(leaky, run_cli):
    res = run_cli("export", "--round", "rw", "--out", leaky / "out")
    assert res.exit_code == 3, res.output
    lines = {m.group(1): m.group(0) for m in re.finditer(r"^  judge (h\d) .*$", res.output, re.M)}
    assert set(lines) == {"h1", "h2"}
    assert "[[mix]] block 2 (source forum)" in lines["h1"]
    assert re.search(r"from \S*forum\.jsonl:3\b", lines["h1"]) and re.search(r"forum\.jsonl:5\b", lines["h2"])
    assert '"what is the capital of peru' in lines["h1"].lower()
    assert "--drop-held-out" in res.output
    assert not (leaky / "out").exists()


def test_drop_held_out_drops_exactly_the_refused_pairs_and_says_so(leaky, run_cli):
    refused = run_cli("export", "--round", "rw", "--out", leaky / "out")
    refused_pairs = set(re.findall(r"^  judge h\d pair (\S+) ", refused.output, re.M))
    assert len(refused_pairs) == 2

    res = run_cli("export", "--round", "rw", "--out", leaky / "out", "--drop-held-out")
    assert res.exit_code == 0, res.output
    assert "dropped 2 pair(s) holding held-out text" in res.output

    rows = pq.read_table(leaky / "out" / "rw.parquet").to_pylist()
    prompts = [r["prompt"][-1]["content"] for r in rows]
    assert len(rows) == 4 + 2 * 3  # web's 4 once, forum's 3 clean pairs twice
    assert not any(p.lower() in {h.lower() for h in HELD.values()} for p in prompts)

    evidence = json.loads((leaky / "out" / "rw.training_evidence.json").read_text())
    dropped = evidence["gate"]["dropped_held_out"]
    assert {d["pair_id"] for d in dropped} == refused_pairs
    assert {(d["set"], d["item_id"]) for d in dropped} == {("judge", "h1"), ("judge", "h2")}
    assert all(d["blocks"] == [{"block": 2, "source": "forum"}] for d in dropped)
    assert [b["dropped"] for b in evidence["blocks"]] == [0, 2]
    card = (leaky / "out" / "README.md").read_text()
    assert "dropped as held out" in card and "| 2 |" in card

    store = open_store(leaky / "store.duckdb", read_only=True)
    ids = [i for (i,) in store.con.execute("SELECT export_id FROM exports").fetchall()]
    assert regate_export(store, ids).hits == []  # the result passes the gate again
    store.close()


def test_a_system_prompt_holding_held_out_text_cannot_be_dropped(leaky, run_cli, dpo_recipe):
    (leaky / "rs.toml").write_text(
        dpo_recipe("rs", system=f'system_prompt = "{HELD["h1"]}"', blocks=['source = "web"'])
    )
    assert run_cli("round", "add", leaky / "rs.toml").exit_code == 0
    res = run_cli("export", "--round", "rs", "--out", leaky / "out", "--drop-held-out")
    assert res.exit_code == 3
    assert "system prompt" in res.output and not (leaky / "out").exists()
