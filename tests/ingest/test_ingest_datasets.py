"""Dataset imports: UltraFeedback binarized through the real datasets loader on local
files, compliance JSONL."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pairstore.errors import BadInput
from pairstore.ingest.compliance import import_compliance
from pairstore.ingest.ultrafeedback import import_ultrafeedback

MSG = pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))
UF_SCHEMA = pa.schema(
    [
        ("prompt", pa.string()),
        ("prompt_id", pa.string()),
        ("chosen", MSG),
        ("rejected", MSG),
        ("messages", MSG),
        ("score_chosen", pa.float64()),
        ("score_rejected", pa.float64()),
    ]
)


def uf_row(i, score_chosen=8.0, score_rejected=3.0, **kw):
    prompt = f"Explain idea number {i}."
    row = {
        "prompt": prompt,
        "prompt_id": f"{i:064x}",
        "chosen": [
            {"content": prompt, "role": "user"},
            {"content": f"Good answer {i}.", "role": "assistant"},
        ],
        "rejected": [
            {"content": prompt, "role": "user"},
            {"content": f"Bad answer {i}.", "role": "assistant"},
        ],
        "score_chosen": score_chosen,
        "score_rejected": score_rejected,
    }
    row["messages"] = row["chosen"]
    row.update(kw)
    return row


def write_uf_parquet(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=UF_SCHEMA), path)
    return path


def test_ultrafeedback_parquet_keeps_assistant_answers(store, tmp_path):
    rows = [uf_row(i) for i in range(5)] + [uf_row(5, 7.0, 7.0)]
    path = write_uf_parquet(tmp_path / "uf.parquet", rows)
    res = import_ultrafeedback(store, path=path)
    assert (res.miner, res.version, res.kept) == ("ultrafeedback", "1", 5)
    assert dict(res.dropped) == {"tie": 1}
    got = store.rows("""SELECT p.prompt, p.chosen, p.rejected, p.source, p.kind, \
o.origin_kind, o.origin_id, o.rule
                        FROM pairs p JOIN pair_origins o USING (pair_id) ORDER BY o.origin_id""")
    assert len(got) == 5
    first = got[0]
    assert [dict(m) for m in first["prompt"]] == [{"role": "user", "content": "Explain idea number 0."}]
    assert (first["chosen"], first["rejected"], first["source"], first["kind"]) == (
        "Good answer 0.",
        "Bad answer 0.",
        "ultrafeedback",
        "dpo",
    )
    assert (first["origin_kind"], first["origin_id"], first["rule"]) == (
        "import",
        f"ultrafeedback:{0:064x}",
        "score_chosen=8 > score_rejected=3",
    )
    again = import_ultrafeedback(store, path=path)
    assert again.kept == 0 and again.dropped["duplicate"] == 5 and again.new_origins == 0


def test_ultrafeedback_folder_jsonl_limit_and_seed(store, tmp_path, write_jsonl):
    rows = [uf_row(i) for i in range(20)]
    folder = tmp_path / "ultrafeedback_binarized"
    write_uf_parquet(folder / "data" / "train_prefs-00000-of-00001.parquet", rows)
    write_uf_parquet(folder / "data" / "test_prefs-00000-of-00001.parquet", [uf_row(99)])
    res = import_ultrafeedback(store, path=folder, limit=7, seed=3)
    assert res.kept == 7 and res.dropped["over limit"] == 13 and res.stats["rows"] == 20
    picked = sorted(r["origin_id"] for r in store.rows("SELECT origin_id FROM pair_origins"))
    assert f"ultrafeedback:{99:064x}" not in picked
    # the same seed picks the same rows from a JSONL copy; another seed picks others
    jsonl = write_jsonl(tmp_path / "uf.jsonl", rows)
    from pairstore.store.store import open_store

    with open_store(tmp_path / "other.duckdb") as other:
        import_ultrafeedback(other, path=jsonl, limit=7, seed=3)
        assert sorted(r["origin_id"] for r in other.rows("SELECT origin_id FROM pair_origins")) == picked
    with open_store(tmp_path / "third.duckdb") as third:
        import_ultrafeedback(third, path=jsonl, limit=7, seed=4)
        assert sorted(r["origin_id"] for r in third.rows("SELECT origin_id FROM pair_origins")) != picked


def test_ultrafeedback_bad_record_names_file_line_field_and_writes_nothing(store, tmp_path):
    rows = [uf_row(0), uf_row(1), uf_row(2)]
    rows[2]["chosen"] = rows[2]["chosen"][:1]  # no assistant answer
    path = tmp_path / "uf.jsonl"
    with open(path, "w") as f:
        f.write(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n" + json.dumps(rows[2]) + "\n")
    with pytest.raises(BadInput) as e:
        import_ultrafeedback(store, path=path)
    assert str(e.value) == (f"{path}, line 4, field 'chosen': message list has no assistant message")
    assert store.scalar("SELECT count(*) FROM pairs") == 0
    bad = [uf_row(0), uf_row(1)]
    bad[1]["rejected"] = [
        {"content": "Another prompt", "role": "user"},
        {"content": "x", "role": "assistant"},
    ]
    ppath = write_uf_parquet(tmp_path / "uf.parquet", bad)
    with pytest.raises(BadInput, match=r"uf.parquet, row 2, field 'rejected'"):
        import_ultrafeedback(store, path=ppath)
    with pytest.raises(BadInput, match="no such file"):
        import_ultrafeedback(store, path=tmp_path / "missing.parquet")
    assert store.scalar("SELECT count(*) FROM pairs") == 0


def test_compliance_pairs_and_sft_rows(store, tmp_path, write_jsonl):
    path = write_jsonl(
        tmp_path / "compliance.jsonl",
        [
            {
                "prompt": "Reply in exactly three words.",
                "chosen": "Sure, done here.",
                "rejected": "Of course! Here is a reply that is much longer than three words.",
            },
            {
                "id": "c-json",
                "prompt": [
                    {"role": "system", "content": "Answer in JSON."},
                    {"role": "user", "content": "Give x=1."},
                ],
                "chosen": '{"x": 1}',
                "rejected": "x is 1",
                "family": "format",
            },
            {"prompt": "List two colours, comma-separated.", "target": "red, blue"},
            {"prompt": "Same sides", "chosen": "a", "rejected": "a"},
        ],
    )
    res = import_compliance(store, path=path)
    assert res.kept == 3 and dict(res.dropped) == {"identical sides": 1}
    assert res.stats == {"pairs": 3, "sft rows": 1}
    got = {
        r["origin_id"]: r
        for r in store.rows("""
        SELECT o.origin_id, o.rule, p.kind, p.source, p.prompt, p.chosen, p.rejected, p.family
        FROM pairs p JOIN pair_origins o USING (pair_id)""")
    }
    assert sorted(got) == ["c-json", "compliance.jsonl:1", "compliance.jsonl:3"]
    sft = got["compliance.jsonl:3"]
    assert (sft["kind"], sft["source"], sft["chosen"], sft["rejected"]) == (
        "sft",
        "compliance_sft",
        "red, blue",
        None,
    )
    assert sft["rule"] == "handcrafted compliance NLL row"
    js = got["c-json"]
    assert (js["source"], js["family"], [m["role"] for m in js["prompt"]]) == (
        "compliance",
        "format",
        ["system", "user"],
    )
    assert got["compliance.jsonl:1"]["rule"] == "handcrafted: compliant chosen, non-compliant rejected"
    assert import_compliance(store, path=path).kept == 0


@pytest.mark.parametrize(
    "record, line_field",
    [
        ({"prompt": "p", "chosen": "a", "target": "t"}, "line 2, field 'target'"),
        ({"prompt": "p", "chosen": "a"}, "line 2, field 'rejected'"),
        ({"chosen": "a", "rejected": "b"}, "line 2, field 'prompt'"),
        ({"prompt": [{"role": "robot", "content": "x"}], "target": "t"}, "line 2, field 'prompt'"),
        ({"prompt": "p", "target": 5.5}, "line 2, field 'target'"),
    ],
)
def test_compliance_bad_record_writes_nothing(store, tmp_path, record, line_field, write_jsonl):
    path = write_jsonl(tmp_path / "c.jsonl", [{"prompt": "ok", "chosen": "yes", "rejected": "no"}, record])
    with pytest.raises(BadInput, match=line_field):
        import_compliance(store, path=path)
    assert store.scalar("SELECT count(*) FROM pairs") == 0


def test_cli_importers(run_cli, tmp_path, write_jsonl):
    path = write_uf_parquet(tmp_path / "uf.parquet", [uf_row(i) for i in range(3)])
    r = run_cli("ingest", "ultrafeedback", "--path", path)
    assert r.exit_code == 0, r.output
    assert "ultrafeedback v1: kept 3 new pairs (3 produced, 3 new origins)\n" in r.output
    assert "Generating" not in r.output  # no progress bars when not on a terminal
    bad = write_jsonl(tmp_path / "c.jsonl", [{"prompt": "p", "chosen": "a"}])
    r = run_cli("ingest", "compliance", bad)
    assert r.exit_code == 2
    assert r.output.strip() == f"error: {bad}, line 1, field 'rejected': missing field"
    good = write_jsonl(tmp_path / "good.jsonl", [{"prompt": "p", "target": "t"}])
    r = run_cli("ingest", "compliance", good)
    assert r.exit_code == 0 and "kept 1 new pairs" in r.output and "by source: compliance_sft=1" in r.output


@pytest.mark.parametrize(
    "command",
    [
        ["ultrafeedback", "--path", "{uf}", "--limit", "2", "--seed", "5"],
        ["compliance", "{comp}"],
        ["compliance", "{bad}"],
        ["ultrafeedback", "--path", "{uf}", "--limit", "0"],
    ],
)
def test_mine_aliases_print_what_ingest_prints(tmp_path, write_jsonl, command):
    """`mine ultrafeedback` / `mine compliance` (the names scripts used) are hidden aliases of the ingest
    commands: the same output and exit status, on a store of their own each, and absent from the help."""
    from click.testing import CliRunner

    from pairstore.cli import cli

    files = {
        "uf": write_uf_parquet(tmp_path / "uf.parquet", [uf_row(i) for i in range(4)]),
        "comp": write_jsonl(tmp_path / "c.jsonl", [{"prompt": "p", "chosen": "a", "rejected": "b"}]),
        "bad": write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "p", "chosen": "a"}]),
    }
    args = [a.format(**files) for a in command]
    results = []
    for group in ("ingest", "mine"):
        db = tmp_path / f"{group}.duckdb"
        results.append(CliRunner().invoke(cli, ["--db", str(db), group, *args]))
    ingest, mine = results
    # a usage error names the command it was given as; nothing else differs
    assert (mine.exit_code, mine.output.replace("cli mine ", "cli ingest ")) == (
        ingest.exit_code,
        ingest.output,
    )
    help_text = CliRunner().invoke(cli, ["mine", "--help"]).output
    assert "ultrafeedback" not in help_text and "compliance" not in help_text
