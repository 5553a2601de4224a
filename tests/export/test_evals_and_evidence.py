"""lm-evaluation-harness samples are held out; every evidence file is hashed and a
re-export into the same folder is refused or supersedes (item 5)."""

from __future__ import annotations

import json
import os

import pytest

from audits.decontam import decontam
from audits.loops import scan
from audits.mixtures import check_mixtures
from pairstore.errors import BadInput
from pairstore.export.run import export_round
from pairstore.files import temp_path
from pairstore.ingest.evals import ingest_evals
from pairstore.store.store import open_store
from pairstore.tables.audit_log import log_action
from pairstore.tables.pairs import Pair, add_pairs

QUESTIONS = [
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
    "for her friends every day with four. How many eggs does she sell?",
    "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total?",
    "Toula went to the bakery and bought 3 dozen donuts. How many donuts is that?",
]
FEW_SHOT = "Question: There are 15 trees in the grove. Grove workers will plant trees today. How many?"


def samples(tmp_path, write_jsonl):
    recs = []
    for doc_id, q in enumerate(QUESTIONS):
        for filt in ("strict-match", "flexible-extract"):
            recs.append(
                {
                    "doc_id": doc_id,
                    "doc": {"question": q, "answer": f"... #### {doc_id}"},
                    "target": str(doc_id),
                    "filter": filt,
                    "exact_match": 1.0,
                    "arguments": {
                        "gen_args_0": {"arg_0": f"{FEW_SHOT}\nAnswer: 6\n\nQuestion: {q}\nAnswer:"}
                    },
                    "resps": [[f"#### {doc_id}"]],
                    "filtered_resps": [str(doc_id)],
                    "doc_hash": f"dh{doc_id}",
                    "prompt_hash": f"ph{doc_id}",
                }
            )
    return write_jsonl(tmp_path / "samples_gsm8k_2026-01-10T10-00-00.jsonl", recs)


def test_lm_eval_samples_register_their_docs_and_the_gate_refuses_them(
    store, tmp_path, write_jsonl, run_cli, dpo_recipe
):
    path = samples(tmp_path, write_jsonl)
    store.close()
    res = run_cli("ingest", "evals", path, "--model", "sm11a", "--suite", "gsm8k-test", "--format", "lm-eval")
    assert res.exit_code == 0 and "3 new eval item(s) held out" in res.output, res.output
    with open_store(tmp_path / "store.duckdb") as s:
        items = s.rows("SELECT item_id, kind, prompt[1].content AS q, gold FROM eval_items ORDER BY item_id")
        assert [(i["item_id"], i["q"], i["gold"]) for i in items] == [
            (str(k), q, str(k)) for k, q in enumerate(QUESTIONS)
        ]
        add_pairs(
            s,
            [
                Pair(prompt="Solve this: " + QUESTIONS[0].upper(), chosen="c", rejected="r", source="x"),
                Pair(prompt=QUESTIONS[2], chosen="c", rejected="r", source="x"),
                Pair(prompt=FEW_SHOT, chosen="6", rejected="7", source="x"),
            ],
            miner="t",
            miner_version="1",
        )
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    (tmp_path / "r.toml").write_text(dpo_recipe("r", blocks=['source = "x"']))
    assert run_cli("round", "add", tmp_path / "base.toml", tmp_path / "r.toml").exit_code == 0
    res = run_cli("export", "--round", "r", "--out", tmp_path / "out")
    assert res.exit_code == 3 and "held-out items: eval:gsm8k-test/0, eval:gsm8k-test/2" in res.output, (
        res.output
    )
    # the few-shot example alone is a training item, not held out
    (tmp_path / "fs.toml").write_text(dpo_recipe("fs", blocks=['source = "x"\nwhere = "chosen = \'6\'"']))
    assert run_cli("round", "add", tmp_path / "fs.toml").exit_code == 0
    assert run_cli("export", "--round", "fs", "--out", tmp_path / "fs").exit_code == 0


def test_decontam_reads_lm_eval_samples(store, tmp_path, write_jsonl):
    path = samples(tmp_path, write_jsonl)
    add_pairs(
        store, [Pair(prompt=QUESTIONS[0], chosen="c", rejected="r", source="x")], miner="t", miner_version="1"
    )
    report = decontam(store, "gsm8k-test", path, all_pairs=True)
    assert report.items == 3 and report.contaminated_items == 1 and report.rows[0].item_id == "0"


def test_lm_eval_doc_without_text_is_refused(store, tmp_path, write_jsonl):
    path = write_jsonl(tmp_path / "s.jsonl", [{"doc_id": 0, "doc": {"label": 3}, "exact_match": 1.0}])
    with pytest.raises(BadInput) as e:
        ingest_evals(store, path, model="m", suite="s", scan=scan, fmt="lm-eval")
    assert e.value.field == "doc" and e.value.line == 1
    assert store.scalar("SELECT count(*) FROM evals") == 0


@pytest.fixture
def exported(round_r1, tmp_path):
    export_round(round_r1, "r1", tmp_path / "out")
    return round_r1


def _status(checks, name):
    return [c.status for c in checks if os.path.basename(c.path) == name]


@pytest.mark.parametrize("tamper", ["edit", "delete"])
def test_an_edited_or_deleted_evidence_file_fails_the_audit(exported, tmp_path, run_cli, tamper):
    evidence = tmp_path / "out" / "r1.training_evidence.json"
    if tamper == "edit":
        data = json.loads(evidence.read_text())
        data["gate"]["passed"] = True
        data["rows_by_source"]["battle"] = 1  # parquet_sha256 untouched: only the file hash tells
        evidence.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    else:
        evidence.unlink()
    assert set(_status(check_mixtures(exported), "r1.training_evidence.json")) == {
        "changed" if tamper == "edit" else "missing"
    }
    exported.close()
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 3 and "r1.training_evidence.json" in res.output


def test_re_export_into_the_same_folder_is_refused_or_supersedes(exported, tmp_path, run_cli, fill_pairs):
    first = exported.rows("SELECT export_id, sha256 FROM exports ORDER BY path")
    # the same bytes again change nothing
    export_round(exported, "r1", tmp_path / "out")
    assert exported.rows("SELECT export_id, sha256 FROM exports ORDER BY path") == first
    # other bytes: refused, naming the file, nothing written
    add_pairs(
        exported,
        [Pair(prompt="A new battle question about clouds?", chosen="c", rejected="r", source="battle")],
        miner="t",
        miner_version="1",
    )
    before = (tmp_path / "out" / "r1.parquet").read_bytes()
    with pytest.raises(BadInput) as e:
        export_round(exported, "r1", tmp_path / "out")
    assert "r1.parquet" in str(e.value) and "--replace" in str(e.value)
    assert (tmp_path / "out" / "r1.parquet").read_bytes() == before
    assert sorted(os.listdir(tmp_path / "out")) == [
        "README.md",
        "r1.parquet",
        "r1.sft.parquet",
        "r1.training_evidence.json",
    ]
    exported.close()
    res = run_cli("export", "--round", "r1", "--out", tmp_path / "out")
    assert res.exit_code == 2 and "r1.parquet" in res.output and len(res.output.splitlines()) == 1
    res = run_cli("export", "--round", "r1", "--out", tmp_path / "out", "--replace")
    assert res.exit_code == 0 and "superseded:" in res.output, res.output
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 0, res.output
    with open_store(tmp_path / "store.duckdb", read_only=True) as s:
        rows = s.rows("SELECT path, superseded_by IS NOT NULL AS old FROM exports ORDER BY created_at, path")
        assert (
            len(rows) == 3 and sum(r["old"] for r in rows) == 1
        )  # the old pair file; the sft file kept its bytes
        assert s.scalar("SELECT count(*) FROM exports WHERE superseded_at IS NULL") == 2


def test_leftovers_of_a_killed_export_are_named(exported, tmp_path, run_cli):
    out = tmp_path / "out"
    tmp = temp_path(out / "r1.parquet")  # what a writer killed mid-file leaves
    tmp.write_bytes(b"half a parquet")
    exported.close()
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 0 and "leftover" in res.output and tmp.name in res.output, res.output
    # a file renamed into place but never registered (killed before the registry write)
    other = tmp_path / "other"
    other.mkdir()
    with open_store(tmp_path / "store.duckdb") as s:
        log_action(s, "export.started", "r2", {"out": str(other), "files": [str(other / "r2.parquet")]})
    (other / "r2.parquet").write_bytes(b"unregistered bytes")
    res = run_cli("audit", "mixtures")
    assert res.exit_code == 0 and "r2.parquet" in res.output and "no registration names" in res.output, (
        res.output
    )
    res = run_cli("export", "--round", "r1", "--out", out)
    assert res.exit_code == 0 and f"note: {tmp}" in res.output, res.output
