"""Export: deterministic mixtures (limit, upsample, where), TRL format, evidence, registry, attach."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pairstore.errors import BadInput, PairstoreError
from pairstore.export.attach import attach_round, content_hash_of_file
from pairstore.export.run import export_round
from pairstore.export.writer import row_digest, rows_content_hash
from pairstore.keys import content_hash_rows, sha256_file
from pairstore.rounds.checkpoints import register_checkpoint
from pairstore.rounds.lineage import lineage
from pairstore.rounds.recipes import add_round
from pairstore.store.store import open_store
from pairstore.tables.pairs import Pair, add_pairs


@pytest.fixture
def setup(round_r1):
    return round_r1


def file_rows(path, answer="chosen"):
    rows = pq.read_table(path).to_pylist()
    return [
        {
            "prompt": r["prompt"],
            "chosen": r[answer][0]["content"],
            "rejected": r["rejected"][0]["content"] if "rejected" in r else None,
        }
        for r in rows
    ]


def test_export_writes_trl_parquet_evidence_and_registry(setup, tmp_path):
    store = setup
    out = tmp_path / "out"
    res = export_round(store, "r1", out)
    dpo, sft = out / "r1.parquet", out / "r1.sft.parquet"
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "r1.parquet",
        "r1.sft.parquet",
        "r1.training_evidence.json",
    ]
    t = pq.read_table(dpo)
    msg = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    assert t.schema.names == ["prompt", "chosen", "rejected", "pair_id", "source", "family"]
    assert t.schema.field("prompt").type.value_type == msg.value_type
    rows = t.to_pylist()
    # 12 battle x 2.5 = 30, loopfix limit 5, self_repair where family = math: 4
    assert len(rows) == 39 and res.rows_by_source == {
        "battle": 30,
        "loopfix": 5,
        "self_repair": 4,
        "compliance_sft": 1,
    }
    assert all(r["prompt"][0] == {"role": "system", "content": "You are Brook."} for r in rows)
    # the pair's own system prompt is replaced by the recipe's, never doubled
    sr = [r for r in rows if r["source"] == "self_repair"]
    assert all([m["role"] for m in r["prompt"]] == ["system", "user"] for r in sr)
    assert all(
        r["chosen"][0]["role"] == "assistant" and r["rejected"][0]["role"] == "assistant" for r in rows
    )
    # order: blocks in recipe order; pairs in store order, copies of a pair adjacent
    assert [r["source"] for r in rows] == ["battle"] * 30 + ["loopfix"] * 5 + ["self_repair"] * 4
    battle_ids = [r["pair_id"] for r in rows[:30]]
    in_store = [
        r["pair_id"] for r in store.rows("SELECT pair_id FROM pairs WHERE source = 'battle' ORDER BY rowid")
    ]
    assert list(dict.fromkeys(battle_ids)) == in_store
    counts = {p: battle_ids.count(p) for p in battle_ids}
    assert sorted(counts.values()) == [2] * 6 + [3] * 6  # 2.5 = two copies + a seeded half
    first = {p: battle_ids.index(p) for p in counts}
    assert all(battle_ids[first[p] : first[p] + n] == [p] * n for p, n in counts.items())
    s = pq.read_table(sft).to_pylist()
    assert [list(r) for r in s][0] == ["prompt", "completion", "pair_id", "source", "family"]
    assert s[0]["completion"] == [{"role": "assistant", "content": "Complying."}]

    ev = json.loads((out / "r1.training_evidence.json").read_text())
    assert ev["parquet_sha256"] == sha256_file(dpo) and ev["sft_parquet_sha256"] == sha256_file(sft)
    assert ev["rows"] == 39 and ev["sft_rows"] == 1 and ev["round"] == "r1" and ev["parents"] == ["base"]
    assert ev["recipe_sha256"] == store.scalar("SELECT recipe_sha256 FROM rounds WHERE name = 'r1'")
    assert ev["gate"]["passed"] is True and ev["gate"]["exempted"] == []
    assert (
        ev["rows_by_family"]["science"] == 30 and ev["versions"]["schema_version"] == store.schema_version()
    )
    # the content hash is writer-independent: recomputed from the rows with keys.content_hash_rows
    assert ev["content_hash"] == rows_content_hash(row_digest(**r) for r in file_rows(dpo))
    assert ev["sft_content_hash"] == rows_content_hash(row_digest(**r) for r in file_rows(sft, "completion"))
    # rows_content_hash is keys.content_hash_rows over the digests
    assert ev["content_hash"] == content_hash_rows([row_digest(**r)] for r in file_rows(dpo))

    ex = store.rows("SELECT export_id, kind, path, sha256, rows, content_hash FROM exports ORDER BY path")
    assert [(e["kind"], e["path"], e["rows"]) for e in ex] == [
        ("export", str(dpo.resolve()), 39),
        ("export", str(sft.resolve()), 1),
    ]
    er = store.rows(
        "SELECT row_index, pair_id FROM export_rows WHERE export_id = ? ORDER BY row_index",
        [ex[0]["export_id"]],
    )
    assert [(r["row_index"], r["pair_id"]) for r in er] == [(i, r["pair_id"]) for i, r in enumerate(rows)]
    assert store.scalar("SELECT count(*) FROM audit_log WHERE action = 'export' AND subject = 'r1'") == 1


def test_same_store_and_recipe_give_byte_identical_files(setup, tmp_path):
    a = export_round(setup, "r1", tmp_path / "a")
    b = export_round(setup, "r1", tmp_path / "b")
    assert (tmp_path / "a" / "r1.parquet").read_bytes() == (tmp_path / "b" / "r1.parquet").read_bytes()
    assert a.files["dpo"].sha256 == b.files["dpo"].sha256
    ev_a = json.loads((tmp_path / "a" / "r1.training_evidence.json").read_text())
    ev_b = json.loads((tmp_path / "b" / "r1.training_evidence.json").read_text())
    assert ev_a == ev_b
    # re-export into the same folder: same bytes, no second registration
    export_round(setup, "r1", tmp_path / "a")
    assert sha256_file(tmp_path / "a" / "r1.parquet") == a.files["dpo"].sha256
    assert setup.scalar("SELECT count(*) FROM exports") == 4


def test_seeded_limit_is_deterministic_and_depends_on_the_seed(setup, tmp_path, dpo_recipe):
    store = setup
    (tmp_path / "r2.toml").write_text(dpo_recipe("r2", blocks=['source = "loopfix"\nlimit = 5'], seed=7))
    (tmp_path / "r3.toml").write_text(dpo_recipe("r3", blocks=['source = "loopfix"\nlimit = 5'], seed=8))
    (tmp_path / "r4.toml").write_text(dpo_recipe("r4", blocks=['source = "loopfix"\nlimit = 50'], seed=8))
    for n in ("r2", "r3", "r4"):
        add_round(store, tmp_path / f"{n}.toml")
    ids = {}
    for n in ("r2", "r3", "r4"):
        res = export_round(store, n, tmp_path / "o")
        ids[n] = pq.read_table(tmp_path / "o" / f"{n}.parquet").column("pair_id").to_pylist()
        if n == "r4":
            assert res.blocks[0]["note"] == "limit 50 > 10 pairs available: all taken"
    assert len(ids["r2"]) == len(ids["r3"]) == 5 and ids["r2"] != ids["r3"] and len(ids["r4"]) == 10
    # the r1 loopfix block (seed 7) took the same 5 pairs as r2
    export_round(store, "r1", tmp_path / "p")
    t = pq.read_table(tmp_path / "p" / "r1.parquet").to_pylist()
    assert sorted(r["pair_id"] for r in t if r["source"] == "loopfix") == sorted(ids["r2"])
    ev = json.loads((tmp_path / "o" / "r4.training_evidence.json").read_text())
    assert ev["blocks"][0]["note"].startswith("limit 50 > 10")


def test_where_must_be_a_read_only_deterministic_condition(setup, tmp_path, dpo_recipe):
    store = setup
    for i, where in enumerate(
        ["nextval('audit_log_seq') > 0", "random() < 0.5", "no_such_column = 1", "1=1) UNION SELECT 'x' --"]
    ):
        (tmp_path / f"w{i}.toml").write_text(
            dpo_recipe(f"w{i}", blocks=[f'source = "battle"\nwhere = "{where}"'])
        )
        with pytest.raises(BadInput) as e:  # at `round add` where the text alone tells, else at export
            add_round(store, tmp_path / f"w{i}.toml")
            export_round(store, f"w{i}", tmp_path / "w")
        assert e.value.field == "mix[0].where"
    assert not (tmp_path / "w").exists()
    assert store.scalar("SELECT count(*) FROM exports") == 0


def test_system_prompt_from_the_parent_bundle(setup, tmp_path, run_cli, dpo_recipe):
    store = setup
    (tmp_path / "rb.toml").write_text(dpo_recipe("rb", system='system_prompt = "bundle"'))
    add_round(store, tmp_path / "rb.toml")
    with pytest.raises(BadInput, match="has no registered path"):
        export_round(store, "rb", tmp_path / "x")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "system_prompt.txt").write_text("You are Brook, from the bundle.\n")
    res = export_round(store, "rb", tmp_path / "x", bundle=bundle)
    first = pq.read_table(res.files["dpo"].path).to_pylist()[0]["prompt"][0]
    assert first == {"role": "system", "content": "You are Brook, from the bundle."}
    register_checkpoint(store, "base", "base", [], path=str(bundle))
    res2 = export_round(store, "rb", tmp_path / "y")
    assert res2.files["dpo"].sha256 == res.files["dpo"].sha256
    with pytest.raises(BadInput, match="apply only to"):
        export_round(store, "r1", tmp_path / "z", bundle=bundle)
    store.close()
    res = run_cli(
        "export", "--round", "rb", "--out", tmp_path / "cli", "--system-prompt-file", tmp_path / "missing.txt"
    )
    assert res.exit_code == 2 and "cannot read the system prompt" in res.output
    res = run_cli("export", "--round", "rb", "--out", tmp_path / "cli", "--bundle", bundle)
    assert res.exit_code == 0, res.output
    assert "rows by source: battle=30" in res.output
    assert res.output.splitlines()[0].endswith(f"sha256 {res2.files['dpo'].sha256}")


def test_export_refuses_soups_unknown_rounds_and_empty_mixtures(setup, tmp_path, run_cli, dpo_recipe):
    store = setup
    (tmp_path / "s.toml").write_text('name = "s"\nkind = "soup"\na = "base"\nb = "r1"\nalpha = 0.5\n')
    (tmp_path / "e.toml").write_text(dpo_recipe("e", blocks=['source = "style"']))
    add_round(store, tmp_path / "s.toml")
    add_round(store, tmp_path / "e.toml")
    store.close()
    res = run_cli("export", "--round", "s", "--out", tmp_path / "o")
    assert res.exit_code == 2 and "it has no mixture" in res.output
    res = run_cli("export", "--round", "nope", "--out", tmp_path / "o")
    assert res.exit_code == 2 and "no round 'nope'" in res.output
    res = run_cli("export", "--round", "e", "--out", tmp_path / "o")
    assert res.exit_code == 2 and "selects no pairs" in res.output
    assert not (tmp_path / "o").exists()
    (tmp_path / "afile").write_text("x")
    res = run_cli("export", "--round", "r1", "--out", tmp_path / "afile")
    assert res.exit_code == 2


def test_round_attach_registers_an_outside_file(setup, tmp_path, run_cli, write_jsonl):
    store = setup
    known = store.rows(
        "SELECT prompt, chosen, rejected, pair_id FROM pairs WHERE source = 'battle' ORDER BY pair_id LIMIT 1"
    )[0]
    rows = [
        # a pair the store has (same content): matched
        {
            "prompt": [dict(m) for m in known["prompt"]],
            "chosen": known["chosen"],
            "rejected": known["rejected"],
        },
        # new pairs: prompt as a string, answers as message lists; with and without a source column
        {
            "prompt": "An outside question about rivers?",
            "chosen": [
                {"role": "user", "content": "An outside question about rivers?"},
                {"role": "assistant", "content": "Rivers flow."},
            ],
            "rejected": [{"role": "assistant", "content": "Rivers fly."}],
        },
        {"prompt": "Another outside question?", "chosen": "Yes.", "rejected": "No.", "source": "battle"},
        # dropped by add_pairs: identical sides
        {"prompt": "Same?", "chosen": "Same.", "rejected": "Same."},
    ]
    path = write_jsonl(tmp_path / "s2_pairs_old.jsonl", rows)
    store.close()
    res = run_cli("round", "attach", "r1", path)
    assert res.exit_code == 0, res.output
    assert "4 rows" in res.output and "matched=1" in res.output and "new pairs=2" in res.output
    assert "dropped identical sides=1" in res.output
    res = run_cli("round", "attach", "r1", path)
    assert res.exit_code == 0 and "already attached" in res.output
    assert run_cli("round", "attach", "nope", path).exit_code == 2
    store = open_store(tmp_path / "store.duckdb")
    ex = store.rows("SELECT * FROM exports WHERE kind = 'attached'")
    assert len(ex) == 1 and ex[0]["sha256"] == sha256_file(path) and ex[0]["rows"] == 4
    assert ex[0]["content_hash"] == content_hash_of_file(path)
    er = store.rows(
        "SELECT row_index, pair_id FROM export_rows WHERE export_id = ? ORDER BY row_index",
        [ex[0]["export_id"]],
    )
    assert [r["row_index"] for r in er] == [0, 1, 2] and er[0]["pair_id"] == known["pair_id"]
    new = store.rows(
        "SELECT p.source, o.origin_kind, o.origin_id FROM pairs p JOIN pair_origins o USING (pair_id) "
        "WHERE p.pair_id IN (?, ?) ORDER BY o.origin_id",
        [er[1]["pair_id"], er[2]["pair_id"]],
    )
    sha = sha256_file(path)
    assert [(r["source"], r["origin_kind"], r["origin_id"]) for r in new] == [
        ("attached", "attached", f"{sha}:2"),
        ("battle", "attached", f"{sha}:3"),
    ]
    assert store.scalar("SELECT chosen FROM pairs WHERE pair_id = ?", [er[1]["pair_id"]]) == "Rivers flow."
    stage = lineage(store, "r1")[-1]
    assert stage["mixtures"][0]["sha256"] == sha and stage["mixtures"][0]["rows"] == 4
    store.close()


def test_attaching_an_export_matches_its_pairs_and_content_hash(setup, tmp_path):
    store = setup
    res = export_round(store, "r1", tmp_path / "o")
    att = attach_round(store, "base", res.files["dpo"].path)
    assert att.rows == 39 and att.matched == 39 and att.added == 0
    assert att.content_hash == res.files["dpo"].content_hash
    er = store.rows("SELECT pair_id FROM export_rows WHERE export_id = ? ORDER BY row_index", [att.export_id])
    assert [r["pair_id"] for r in er] == pq.read_table(res.files["dpo"].path).column("pair_id").to_pylist()


@pytest.mark.parametrize("block", [1 << 12, None])
def test_attach_in_many_batches_links_every_row_and_counts_repeats_once(
    setup, tmp_path, write_jsonl, monkeypatch, block
):
    """An attach reads a batch at a time and keeps nothing per row in memory: rows repeating a stored
    pair are matched, a pair the file repeats is added once (its later rows neither), every row is
    linked in order, and the content hash is the file's, however many batches the file is read in."""
    from pairstore.ingest import batches
    from pairstore.ingest.pair_files import pair_batches
    from pairstore.tables.pairs import pair_id_of

    if block:  # a small block for files pyarrow reads, a small batch for those read record by record
        monkeypatch.setattr(batches, "STREAM_BLOCK_SIZE", block)
        monkeypatch.setattr(batches, "RECORD_BATCH", 40)
    store = setup
    stored = store.rows(
        "SELECT prompt, chosen, rejected FROM pairs WHERE kind = 'dpo' ORDER BY pair_id LIMIT 10"
    )
    base = [
        {"prompt": [dict(m) for m in r["prompt"]], "chosen": r["chosen"], "rejected": r["rejected"]}
        for r in stored
    ]
    base += [{"prompt": f"outside question {i}?", "chosen": f"yes {i}", "rejected": "no"} for i in range(110)]
    rows = [base[i % 120] for i in range(300)]
    path = write_jsonl(tmp_path / "many.jsonl", rows)
    assert (len(list(pair_batches(path))) > 5) == bool(block)
    att = attach_round(store, "r1", path)
    assert (att.rows, att.matched, att.added) == (300, 30, 110)
    assert att.content_hash == content_hash_of_file(path)
    linked = store.rows(
        "SELECT pair_id FROM export_rows WHERE export_id = ? ORDER BY row_index", [att.export_id]
    )

    def pid(row):
        prompt = (
            row["prompt"] if isinstance(row["prompt"], list) else [{"role": "user", "content": row["prompt"]}]
        )
        return pair_id_of(prompt, row["chosen"], row["rejected"])

    assert [r["pair_id"] for r in linked] == [pid(r) for r in rows]
    assert store.scalar("SELECT count(*) FROM duckdb_tables() WHERE temporary") == 0


def test_a_file_s_rows_are_registered_once(setup, tmp_path):
    """export_rows has no DuckDB index (migration m011): exporting the same round again (the same file:
    registered already), elsewhere (another file), and attaching a file twice register each row of each
    file once."""
    store = setup
    first = export_round(store, "r1", tmp_path / "o")
    export_round(store, "r1", tmp_path / "o")
    export_round(store, "r1", tmp_path / "elsewhere")
    for _ in range(2):
        attach_round(store, "base", first.files["dpo"].path)
    rows = store.rows(
        "SELECT count(*) AS n, count(DISTINCT (export_id, row_index)) AS keys, "
        "count(DISTINCT export_id) AS files FROM export_rows"
    )[0]
    assert rows["n"] == rows["keys"] and rows["files"] >= 3
    assert (
        store.scalar(
            "SELECT count(*) FROM export_rows WHERE export_id NOT IN (SELECT export_id FROM exports)"
        )
        == 0
    )


def test_attach_reports_bad_rows_with_file_and_line(setup, tmp_path, write_jsonl):
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [{"prompt": "ok?", "chosen": "a", "rejected": "b"}, {"prompt": 5, "chosen": "a", "rejected": "b"}],
    )
    with pytest.raises(BadInput) as e:
        attach_round(setup, "r1", path)
    assert e.value.line == 2 and e.value.field == "prompt"
    assert setup.scalar("SELECT count(*) FROM exports") == 0


def test_round_names_never_write_outside_out(setup, tmp_path):
    store = setup
    # a round smuggled in past `round add` (whose name check refuses this) is refused at export too
    row = store.rows("SELECT * FROM rounds WHERE name = 'r1'")[0]
    store.con.execute(
        "INSERT INTO rounds (name, kind, parents, alpha, job_id, recipe, recipe_toml, recipe_sha256) "
        "VALUES ('../evil', 'dpo', ['base'], NULL, NULL, ?, ?, ?)",
        [row["recipe"].replace('"r1"', '"../evil"'), row["recipe_toml"], row["recipe_sha256"]],
    )
    with pytest.raises(PairstoreError, match="not a safe file name|changed in the store outside pairstore"):
        export_round(store, "../evil", tmp_path / "o")
    assert not (tmp_path / "o").exists() and not (tmp_path / "evil.parquet").exists()
    res = export_round(store, "r1", tmp_path / "deep" / "er")
    assert all(Path(f.path).parent == (tmp_path / "deep" / "er").resolve() for f in res.files.values())
    assert not [
        p for p in (tmp_path / "deep" / "er").iterdir() if p.name.startswith(".")
    ]  # no temp files left


def test_small_fetches_and_row_groups_give_the_same_rows(setup, tmp_path, monkeypatch):
    import pairstore.export.writer as export

    big = export_round(setup, "r1", tmp_path / "big")
    monkeypatch.setattr(export, "FETCH_ROWS", 4)
    monkeypatch.setattr(export, "ROW_GROUP_ROWS", 5)
    small = export_round(setup, "r1", tmp_path / "small")
    assert small.files["dpo"].content_hash == big.files["dpo"].content_hash
    assert pq.read_table(small.files["dpo"].path).equals(pq.read_table(big.files["dpo"].path))
    assert pq.ParquetFile(small.files["dpo"].path).metadata.num_row_groups == 8  # 39 rows / 5


@pytest.mark.slow
def test_file_bytes_do_not_depend_on_how_rows_are_fetched(setup, tmp_path, monkeypatch, dpo_recipe):
    """The fetch size (and so how DuckDB chunks what it hands over) must not change a byte: with answers
    long enough to fill several data pages per row group, chunk boundaries would move page boundaries."""
    import random

    import pairstore.export.writer as export

    rng = random.Random(5)
    long = [
        Pair(
            prompt=f"Long question {i}",
            source="style",
            family="long",
            chosen=" ".join(rng.choice(("alpha", "beta", "gamma", "delta")) for _ in range(9000)),
            rejected=" ".join(rng.choice(("one", "two", "three")) for _ in range(9000)),
        )
        for i in range(300)
    ]
    add_pairs(setup, long, miner="test", miner_version="1")
    (tmp_path / "rl.toml").write_text(dpo_recipe("rl", blocks=['source = "style"\nupsample = 2']))
    add_round(setup, tmp_path / "rl.toml")
    big = export_round(setup, "rl", tmp_path / "big")
    monkeypatch.setattr(export, "FETCH_ROWS", 7)
    small = export_round(setup, "rl", tmp_path / "small")
    assert small.files["dpo"].rows == 600
    assert small.files["dpo"].sha256 == big.files["dpo"].sha256


def test_the_free_space_estimate_is_near_the_files_written(setup, tmp_path, dpo_recipe):
    """The free-space check asks for about what the export writes (a sample of the plan written with the
    writer's settings), not for every copy's raw text: within 1.5x of the files, upsampled or not."""
    import random

    from pairstore.export.plan import planned_mixture
    from pairstore.export.writer import ESTIMATE_MARGIN_BYTES, estimated_bytes
    from pairstore.rounds.recipes import get_round

    rng = random.Random(3)
    words = [f"w{rng.randrange(3000)}" for _ in range(20_000)]
    pairs = [
        Pair(
            prompt=f"Question {i}: " + " ".join(rng.choices(words, k=40)),
            source="style",
            family=f"f{i % 3}",
            chosen=" ".join(rng.choices(words, k=150)),
            rejected=" ".join(rng.choices(words, k=120)),
        )
        for i in range(3000)
    ]
    add_pairs(setup, pairs, miner="test", miner_version="1")
    for name, block in (("plain", 'source = "style"'), ("x12", 'source = "style"\nupsample = 12')):
        (tmp_path / f"{name}.toml").write_text(dpo_recipe(name, blocks=[block]))
        add_round(setup, tmp_path / f"{name}.toml")
        with planned_mixture(setup, get_round(setup, name)) as mix:
            estimate = estimated_bytes(setup.con, mix.table) - ESTIMATE_MARGIN_BYTES
        written = Path(export_round(setup, name, tmp_path / name).files["dpo"].path).stat().st_size
        assert written / 1.5 <= estimate <= written * 1.5, (name, estimate, written)


def test_the_free_space_check_takes_the_raw_bound_only_where_it_fits(setup, monkeypatch, tmp_path):
    """A small plan's raw upper bound is asked for where the folder has that much free; where it has not,
    or the plan is large, the sampled estimate is (so no export is refused for its raw text alone)."""
    from pairstore.export import run as export_run
    from pairstore.export.plan import planned_mixture
    from pairstore.rounds.recipes import get_round

    sampled = []
    monkeypatch.setattr(export_run, "_size_estimate", lambda con, table: sampled.append(table) or 1234)
    with planned_mixture(setup, get_round(setup, "r1")) as mix:
        entries = mix.entries()
        raw = export_run._raw_bound(setup.con, mix.table)
        assert raw > 1234
        monkeypatch.setattr(export_run, "free_space", lambda folder: raw)
        assert export_run._needed_space(setup.con, mix.table, entries, tmp_path) == raw and not sampled
        monkeypatch.setattr(export_run, "free_space", lambda folder: raw - 1)
        assert export_run._needed_space(setup.con, mix.table, entries, tmp_path) == 1234 and len(sampled) == 1
        monkeypatch.setattr(export_run, "free_space", lambda folder: 1 << 60)
        large = export_run.RAW_BOUND_MAX_ENTRIES + 1
        assert export_run._needed_space(setup.con, mix.table, large, tmp_path) == 1234 and len(sampled) == 2
