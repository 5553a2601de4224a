"""`train sample --ray-address` and `eval --ray-address` (train/ray_shards.py) on one local Ray cluster with
the tiny bundle: two workers equal the one-process run sample for sample (and score for score), a rerun
answers only the ranges whose shard is missing (and equals it), shards and work folders are checked.
Skipped without Ray (the scale extra).

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/train/test_ray_shards.py -q
"""

from __future__ import annotations

import json
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from pairstore.cli import cli
from pairstore.errors import BadInput
from pairstore.store.store import open_store
from train.ray_shards import RUN_FILE, SHARD_SCHEMA, read_shard, shard_name, shard_ranges, write_shard
from train.sample import Item, SampleOptions, sample

pytestmark = pytest.mark.usefixtures("one_torch_thread")

QUESTIONS = [
    ("q1", "What is 2 + 3?", "5"),
    ("q2", "Count the letters r in strawberry.", "3"),
    ("q3", "What is 10 - 4?", "6"),
    ("q4", "Name a colour.", None),
    ("q5", "What is 7 * 6?", "42"),
]


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray cluster of two CPUs for the module (the code joins it and leaves it running)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 2**20)
    yield ray
    ray.shutdown()


def _items(write_jsonl, tmp_path) -> str:
    records = [{"id": i, "prompt": q, "kind": "gsm8k", **({"gold": g} if g else {})} for i, q, g in QUESTIONS]
    return write_jsonl(tmp_path / "items.jsonl", records)


def _options(tiny, items, **more) -> SampleOptions:
    base = dict(
        model=str(tiny), items=items, samples=2, temperature=1.0, seed=5, name="tiny", max_new_tokens=6
    )
    return SampleOptions(**{**base, **more})


def _stored(db) -> list[tuple]:
    with open_store(db, read_only=True) as store:
        rows = store.rows(
            "SELECT gen_id, item_id, sample_index, output, verdict, decoding FROM generations "
            "ORDER BY item_id, sample_index"
        )
    return [tuple(r.values()) for r in rows]


@pytest.mark.slow
@pytest.mark.timeout(600)  # a Ray cluster and three engines start on a shared machine
def test_workers_equal_one_process_sample_for_sample_and_a_rerun_skips_finished_shards(
    ray_cluster, tiny, tmp_path, write_jsonl
):
    items = _items(write_jsonl, tmp_path)
    with open_store(tmp_path / "one.duckdb") as store:
        plain = sample(store, _options(tiny, items))
    # Two workers against one process; the rerun below answers a range again with one worker.
    with open_store(tmp_path / "w2.duckdb") as store:
        options = _options(
            tiny, items, ray_address="local", workers=2, shard_items=2, work_dir=str(tmp_path / "work2")
        )
        two = sample(store, options)
    assert [r["gen_id"] for r in plain.rows] == two.gen_ids
    assert [r["output"] for r in plain.rows] == [r["output"] for r in two.rows]
    assert two.generations == 10 and two.added == 10 and two.verdicts == plain.verdicts
    assert _stored(tmp_path / "one.duckdb") == _stored(tmp_path / "w2.duckdb")
    work = tmp_path / "work2"
    names = [shard_name(s, e) for s, e in shard_ranges(5, 2)]
    assert (
        sorted(p.name for p in work.glob("*.parquet"))
        == names
        == [
            "items-00000000-00000002.parquet",
            "items-00000002-00000004.parquet",
            "items-00000004-00000005.parquet",
        ]
    )
    with open_store(tmp_path / "w2.duckdb", read_only=True) as store:
        audit = store.rows("SELECT detail FROM audit_log WHERE action = 'sample' ORDER BY rowid")
    detail = json.loads(audit[-1]["detail"])
    assert detail["shards"] == 3 and detail["shards_reused"] == 0 and detail["options"]["workers"] == 2

    # A rerun (through the command, another number of workers) answers only the range whose shard is gone.
    kept = {n: (work / n).stat().st_mtime_ns for n in names[1:]}
    (work / names[0]).unlink()
    args = ["--db", str(tmp_path / "w2.duckdb"), "train", "sample", "--model", str(tiny), "--items", items]
    args += [
        "--samples",
        "2",
        "--temperature",
        "1.0",
        "--seed",
        "5",
        "--name",
        "tiny",
        "--max-new-tokens",
        "6",
    ]
    args += ["--ray-address", "local", "--workers", "1", "--shard-items", "2", "--work-dir", str(work)]
    r = CliRunner().invoke(cli, [*args, "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.output)
    assert result["generations"] == 10 and result["added"] == 0
    assert {n: (work / n).stat().st_mtime_ns for n in names[1:]} == kept and (work / names[0]).exists()
    assert _stored(tmp_path / "w2.duckdb") == _stored(tmp_path / "one.duckdb")
    with open_store(tmp_path / "w2.duckdb", read_only=True) as store:
        audit = store.rows("SELECT detail FROM audit_log WHERE action = 'sample' ORDER BY rowid")
    assert json.loads(audit[-1]["detail"])["shards_reused"] == 2

    # Another run's options into the same folder: refused before anything runs, the store unchanged.
    r = CliRunner().invoke(cli, [*[a if a != "5" else "6" for a in args]])
    assert r.exit_code == 2 and "holds another run's shards (options differ)" in r.output, r.output
    assert _stored(tmp_path / "w2.duckdb") == _stored(tmp_path / "one.duckdb")


def _item(i: str) -> Item:
    return Item("prompt", i, [{"role": "user", "content": i}], None, "task")


def _row(item_id: str) -> dict:
    return {
        "gen_id": f"g-{item_id}",
        "model": "m",
        "item_kind": "prompt",
        "item_id": item_id,
        "prompt": [{"role": "user", "content": item_id}],
        "output": "out",
        "sample_index": 0,
        "temperature": 0.0,
        "verdict": "unscored",
        "loop_flagged": False,
    }


def test_a_shard_is_read_whole_or_refused(tmp_path):
    path = tmp_path / shard_name(0, 2)
    write_shard(path, [_row("a"), _row("b")])
    rows = read_shard(path, [_item("a"), _item("b")])
    assert [r["item_id"] for r in rows] == ["a", "b"] and rows[0]["prompt"] == [
        {"role": "user", "content": "a"}
    ]
    with pytest.raises(BadInput, match=r"row 2.*item 'b' is not in this shard's range"):
        read_shard(path, [_item("a")])
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(BadInput, match="not a readable parquet shard"):
        read_shard(path, [_item("a"), _item("b")])
    table = pa.Table.from_pylist([_row("a")], schema=SHARD_SCHEMA).drop_columns(["verdict"])
    pq.write_table(table, path)
    with pytest.raises(BadInput, match="verdict.*missing column"):
        read_shard(path, [_item("a")])
    table = pa.Table.from_pylist([_row("a")], schema=SHARD_SCHEMA).set_column(
        7, "sample_index", pa.array(["0"])
    )
    pq.write_table(table, path)
    with pytest.raises(BadInput, match="sample_index.*expected int32, found string"):
        read_shard(path, [_item("a")])


_text = st.text(max_size=30)
_shard_row = st.fixed_dictionaries(
    {
        "gen_id": st.text(min_size=1, max_size=12),
        "model": _text,
        "item_kind": st.sampled_from(["prompt", "problem", "task"]),
        "item_id": st.sampled_from(["a", "b", "c"]),
        "suite": st.none() | _text,
        "prompt": st.lists(st.fixed_dictionaries({"role": _text, "content": _text}), max_size=3),
        "output": _text,
        "sample_index": st.integers(0, 2**31 - 1),
        "temperature": st.floats(0, 2),
        "top_p": st.none() | st.floats(0, 1),
        "seed": st.integers(0, 2**63 - 1),
        "decoding": _text,
        "verdict": st.sampled_from(["correct", "wrong", "unknown", "unscored"]),
        "verdict_reason": st.none() | _text,
        "loop_flagged": st.booleans(),
        "n_tokens": st.none() | st.integers(0, 2**31 - 1),
        "gold": st.none() | _text,
    }
)


@settings(max_examples=25)
@given(rows=st.lists(_shard_row, max_size=6))
def test_a_shard_gives_back_every_field_it_was_written_with(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("shard") / shard_name(0, 3)
    with mock.patch("pairstore.files.fsync_file"), mock.patch("pairstore.files.fsync_dir"):  # disk time
        write_shard(path, rows)
    back = read_shard(path, [_item("a"), _item("b"), _item("c")])
    assert back == [{c: r.get(c) for c in SHARD_SCHEMA.names} for r in rows]


def test_ray_options_are_checked_before_anything_runs(tmp_path):
    with open_store(tmp_path / "s.duckdb") as store:
        for more, message in (
            ({"workers": 2}, "--workers needs --ray-address"),
            ({"work_dir": str(tmp_path / "w")}, "--work-dir needs --ray-address"),
            ({"ray_address": "local", "workers": 0}, "workers"),
        ):
            with pytest.raises(BadInput, match=message):
                sample(store, _options(tmp_path / "no-bundle", "tasks", **more))
    assert not (tmp_path / "w").exists() and not list(tmp_path.glob("sample-work/*/" + RUN_FILE))


def test_shard_ranges_cover_every_item_once_in_order():
    assert shard_ranges(0, 3) == []
    assert shard_ranges(7, 3) == [(0, 3), (3, 6), (6, 7)]
    assert shard_ranges(6, 3) == [(0, 3), (3, 6)]
    assert shard_ranges(2, 32) == [(0, 2)]


def _scores(db) -> list[tuple]:
    with open_store(db, read_only=True) as store:
        rows = store.rows(
            "SELECT item_id, score, correct, extracted_answer, gold, output_len, empty, loop_flagged, "
            "gen_id, prompt_hash FROM evals ORDER BY item_id"
        )
    return [tuple(r.values()) for r in rows]


@pytest.mark.slow
@pytest.mark.timeout(600)  # engines start on Ray workers on a shared machine
def test_eval_on_workers_equals_one_process_and_a_rerun_skips_finished_shards(
    ray_cluster, tiny, tmp_path, write_jsonl
):
    items = _items(write_jsonl, tmp_path)
    base = ["eval", "--model", str(tiny), "--suite", "qs", "--path", items, "--name", "tiny"]
    base += ["--max-new-tokens", "6", "--json"]
    one = CliRunner().invoke(cli, ["--db", str(tmp_path / "one.duckdb"), *base])
    assert one.exit_code == 0, one.output
    work = tmp_path / "eval-work"
    ray_args = ["--ray-address", "local", "--shard-items", "2", "--work-dir", str(work)]
    two = CliRunner().invoke(cli, ["--db", str(tmp_path / "w2.duckdb"), *base, *ray_args, "--workers", "2"])
    assert two.exit_code == 0, two.output
    assert json.loads(two.output) == json.loads(one.output)
    assert len(_scores(tmp_path / "one.duckdb")) == 5
    assert _scores(tmp_path / "w2.duckdb") == _scores(tmp_path / "one.duckdb")
    assert _stored(tmp_path / "w2.duckdb") == _stored(tmp_path / "one.duckdb")
    names = [shard_name(s, e) for s, e in shard_ranges(5, 2)]
    assert sorted(p.name for p in work.glob("*.parquet")) == names

    # A rerun with one worker answers only the range whose shard is gone; the scores are the same.
    kept = {n: (work / n).stat().st_mtime_ns for n in names[:2]}
    (work / names[2]).unlink()
    again = CliRunner().invoke(cli, ["--db", str(tmp_path / "w2.duckdb"), *base, *ray_args, "--workers", "1"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output) == json.loads(one.output)
    assert {n: (work / n).stat().st_mtime_ns for n in names[:2]} == kept and (work / names[2]).exists()
    assert _scores(tmp_path / "w2.duckdb") == _scores(tmp_path / "one.duckdb")
    with open_store(tmp_path / "w2.duckdb", read_only=True) as store:
        audit = store.rows("SELECT detail FROM audit_log WHERE action = 'eval' ORDER BY rowid")
    details = [json.loads(a["detail"]) for a in audit]
    assert [(d["shards"], d["shards_reused"]) for d in details] == [(3, 0), (3, 2)]
    assert details[0]["settings"] == details[1]["settings"]
