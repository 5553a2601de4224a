"""Public datasets in their published schemas and on-disk forms go in with no glue.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/ingest/test_real_sources.py -q

The rows live in tests/fixtures/real/ (its README names the source of each). The `save_to_disk` folders are
made here by the real `datasets` library from the same rows; nothing reaches the network.
"""

from __future__ import annotations

import csv
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pairstore.errors import BadInput
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.problems import ingest_problems
from pairstore.ingest.ultrafeedback import import_ultrafeedback
from pairstore.store.store import open_store
from pairstore.tables.evals import add_eval_items
from tests.paths import FIXTURES
from train.eval import read_suite_file

REAL = FIXTURES / "real"
ARENA_JSONL = REAL / "chatbot_arena_conversations.jsonl"
ARENA_HUB = REAL / "chatbot_arena_conversations"
ARENA_55K = REAL / "arena-human-preference-55k" / "train.csv"
BATTLE_COLUMNS = (
    "battle_id",
    "vote",
    "own_model",
    "opponent_model",
    "n_turns",
    "language",
    "flagged",
    "anonymous",
    "voted_at",
    "own_answers",
    "opponent_answers",
)


def arena_rows() -> list[dict]:
    return [json.loads(line) for line in ARENA_JSONL.read_text(encoding="utf-8").splitlines()]


def battles(store) -> list[tuple]:
    return [
        tuple(r[c] for c in BATTLE_COLUMNS)
        for r in store.rows(f"SELECT {', '.join(BATTLE_COLUMNS)} FROM battles ORDER BY battle_id")
    ]


def write_csv(path: Path, rows: list[dict]) -> Path:
    """A CSV as pandas' to_csv writes one: lists and objects as JSON text, booleans as True/False."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in r.items()})
    return path


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """save_to_disk folders made by the real `datasets` library from the fixture rows."""
    import datasets

    out = tmp_path_factory.mktemp("saved")
    folders = {}
    arena = datasets.load_dataset(
        "parquet", data_files=str(next(ARENA_HUB.rglob("*.parquet"))), split="train"
    )
    arena.save_to_disk(str(out / "arena"))
    folders["arena"] = out / "arena"
    datasets.DatasetDict({"train": arena}).save_to_disk(str(out / "arena_dict"))
    folders["arena_dict"] = out / "arena_dict"
    gsm8k = datasets.DatasetDict(
        {
            split: datasets.Dataset.from_parquet(str(REAL / f"gsm8k/main/{split}-00000-of-00001.parquet"))
            for split in ("train", "test")
        }
    )
    gsm8k.save_to_disk(str(out / "gsm8k"))
    folders["gsm8k"] = out / "gsm8k"
    uf = datasets.DatasetDict(
        {
            split: datasets.Dataset.from_parquet(
                str(REAL / f"ultrafeedback_binarized/data/{split}-00000-of-00001.parquet")
            )
            for split in ("train_prefs", "test_prefs")
        }
    )
    uf.save_to_disk(str(out / "uf"))
    folders["uf"] = out / "uf"
    math500 = datasets.load_dataset(
        "json", data_files={"test": str(REAL / "MATH-500/test.jsonl")}, split="test"
    )
    math500.save_to_disk(str(out / "math500"))
    folders["math500"] = out / "math500"
    return folders


# ---------------------------------------------------------------------------- Chatbot Arena conversations


def test_arena_rows_are_read_from_the_own_models_side(store):
    res = ingest_battles(store, ARENA_JSONL, fmt="arena", own_models=["koala-13b"])
    assert (res.read, res.added, dict(res.skipped)) == (5, 3, {"no own model": 2})
    got = {r[0]: r for r in battles(store)}
    first = got["58210e39b3fd4441a2bd4a518bb44c2d"]  # koala-13b was model_b, winner model_b
    assert first[1:5] == ("win", "koala-13b", "chatglm-6b", 1)
    assert first[5:8] == ("English", False, True)
    assert first[8] == datetime.fromtimestamp(1682351591.1322, tz=UTC).replace(tzinfo=None)
    assert first[9][0].startswith("OpenCL and CUDA are both") and first[10][0].startswith(
        "OpenCL and CUDA are two"
    )
    two_turns = got["90bfd142157948aba01931726c888e7f"]  # koala-13b was model_a, winner model_b
    assert two_turns[1:5] == ("loss", "koala-13b", "oasst-pythia-12b", 2)
    assert len(two_turns[9]) == len(two_turns[10]) == 2
    both_bad = got["c3d9b1e25a7f4e0c8b6d2f4a9e1c7b35"]  # tie (bothbad), toxic_chat_tag flagged, not anonymous
    assert both_bad[1:4] + both_bad[5:8] == ("both_bad", "koala-13b", "vicuna-13b", "German", True, False)
    prompt = store.rows("SELECT prompt FROM battles WHERE battle_id = '90bfd142157948aba01931726c888e7f'")[0]
    assert [m["role"] for m in prompt["prompt"]] == ["user", "user"]
    assert ingest_battles(store, ARENA_JSONL, fmt="arena", own_models=["koala-13b"]).added == 0


@pytest.mark.slow
def test_arena_in_every_form_gives_the_same_battles(tmp_path, saved):
    forms = {
        "jsonl": ARENA_JSONL,
        "hub folder": ARENA_HUB,
        "parquet file": next(ARENA_HUB.rglob("*.parquet")),
        "csv": write_csv(tmp_path / "arena.csv", arena_rows()),
        "save_to_disk": saved["arena"],
        "save_to_disk dict": saved["arena_dict"],
    }
    seen = {}
    for name, path in forms.items():
        with open_store(tmp_path / f"{name}.duckdb") as s:
            res = ingest_battles(s, path, fmt="arena", own_models=["koala-13b"])
            assert (res.added, dict(res.skipped)) == (3, {"no own model": 2}), name
            seen[name] = battles(s)
    assert all(rows == seen["jsonl"] for rows in seen.values()), {k: v for k, v in seen.items()}


def test_arena_others_become_pairs_and_several_own_models(run_cli, db_path):
    r = run_cli(
        "ingest", "battles", ARENA_HUB, "--format", "arena", "--own-model", "koala-13b", "--others", "pairs"
    )
    assert r.exit_code == 0, r.output
    assert r.output == "battles:arena: read 5, added 3, pairs added 1, skipped others: tie=1\n"
    with open_store(db_path, read_only=True) as s:
        pair = s.rows(
            "SELECT p.source, p.chosen, p.rejected, o.origin_kind, o.origin_id, o.rule "
            "FROM pairs p JOIN pair_origins o USING (pair_id)"
        )
    assert len(pair) == 1 and pair[0]["source"] == "arena" and pair[0]["origin_kind"] == "arena"
    assert pair[0]["origin_id"] == "a8f4e6c4d0f54d5b9d3b2c6a1e7f0b21" and pair[0]["chosen"].startswith(
        "Soft rain"
    )
    assert pair[0]["rule"] == "winner=model_a → model_a's answer chosen (no own model in the battle)"
    r = run_cli(
        "--db",
        db_path.parent / "two.duckdb",
        "ingest",
        "battles",
        ARENA_JSONL,
        "--format",
        "arena",
        "--own-model",
        "koala-13b",
        "--own-model",
        "vicuna-13b",
    )
    assert r.output == "battles:arena: read 5, added 3, skipped no own model=1, own model on both sides=1\n"


# ---------------------------------------------------------------------------- arena-human-preference-55k


def test_55k_csv_votes_turns_nulls_and_pairs(run_cli, db_path):
    r = run_cli(
        "ingest",
        "battles",
        ARENA_55K,
        "--format",
        "arena55k",
        "--own-model",
        "gpt-4-0613",
        "--others",
        "pairs",
    )
    assert r.exit_code == 0, r.output
    assert r.output == (
        "battles:arena55k: read 6, added 2, pairs added 2, skipped null response=1, others: tie=1\n"
    )
    with open_store(db_path, read_only=True) as s:
        got = {b[0]: b for b in battles(s)}
        origins = sorted(
            r["origin_id"] for r in s.rows("SELECT origin_id FROM pair_origins WHERE origin_kind = 'arena'")
        )
    assert got["30192"][1:5] == ("loss", "gpt-4-0613", "gpt-4-1106-preview", 2)  # winner_model_a = 1
    assert got["30192"][10][1].endswith("\U0001f355\U0001f34d")  # surrogate pairs decoded
    assert got["53567"][1:5] == ("win", "gpt-4-0613", "koala-13b", 3)
    assert origins == ["198779", "96401"]


def test_55k_hub_folder_and_parquet_copy(tmp_path):
    folder = tmp_path / "lmsys-arena-human-preference-55k"
    shutil.copytree(ARENA_55K.parent, folder)
    with open_store(tmp_path / "s.duckdb") as s:
        res = ingest_battles(s, folder, fmt="arena55k", own_models=["gpt-4-0613"])
        assert (res.read, res.added, dict(res.skipped)) == (6, 2, {"no own model": 3, "null response": 1})


def _55k_row(**kw) -> dict:
    row = {
        "id": "1",
        "model_a": "m1",
        "model_b": "m2",
        "prompt": '["q"]',
        "response_a": '["a"]',
        "response_b": '["b"]',
        "winner_model_a": "1",
        "winner_model_b": "0",
        "winner_tie": "0",
    }
    row.update(kw)
    return row


BAD_55K = [
    (
        _55k_row(winner_model_b="1"),
        "field 'winner_tie': exactly one of winner_model_a, winner_model_b, winner_tie",
    ),
    (_55k_row(winner_tie="2"), "field 'winner_tie': expected 0 or 1, got 2"),
    (_55k_row(winner_model_a="yes"), "field 'winner_model_a': expected int, got 'yes'"),
    (_55k_row(response_a="not json"), "field 'response_a': expected a JSON-encoded list of strings"),
    (_55k_row(response_b='["b", "c"]'), "field 'response_b': 2 responses for 1 prompt turns"),
    (_55k_row(prompt="[1]"), "field 'prompt': expected a JSON-encoded non-empty list of strings"),
    (_55k_row(model_b=""), "field 'model_b': empty value"),
]


@pytest.mark.parametrize("row, message", BAD_55K, ids=[m.split(":")[0] for _, m in BAD_55K])
def test_bad_55k_rows_name_line_and_field(run_cli, db_path, tmp_path, row, message):
    # the first record's prompt spans three lines (JSON allows newlines between its tokens): the bad record
    # starts on line 5
    good = _55k_row(id="0", prompt='[\n"q"\n]')
    path = tmp_path / "train.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(good), lineterminator="\n")
        w.writeheader()
        w.writerows([good, row])
    r = run_cli("ingest", "battles", path, "--format", "arena55k", "--own-model", "m1")
    assert r.exit_code == 2 and len(r.output.splitlines()) == 1, r.output
    assert r.output.startswith(f"error: {path}, line 5, {message}"), r.output
    with open_store(db_path, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM battles") == 0 and s.scalar("SELECT count(*) FROM ingests") == 0


def test_55k_text_cut_inside_a_surrogate_pair_is_counted_not_fatal(store, tmp_path):
    path = tmp_path / "train.csv"
    rows = [_55k_row(id="1"), _55k_row(id="2", response_b='["cut \\ud83d"]')]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    res = ingest_battles(store, path, fmt="arena55k", own_models=["m1"])
    assert (res.added, dict(res.skipped)) == (1, {"invalid unicode": 1})


BAD_ARENA = [
    ({"winner": "model_c"}, "field 'winner': unknown value 'model_c'"),
    ({"conversation_b": None}, "field 'conversation_b': missing field"),
    (
        {"conversation_a": [{"role": "user", "content": "q"}]},
        "field 'conversation_a': expected user and assistant",
    ),
    (
        {"conversation_b": [{"role": "user", "content": "other"}, {"role": "assistant", "content": "a"}]},
        "field 'conversation_b': its user turns differ",
    ),
    (
        {"conversation_a": [{"role": "robot", "content": "q"}, {"role": "assistant", "content": "a"}]},
        "field 'conversation_a': conversation_a[0].role: unknown role 'robot'",
    ),
    ({"tstamp": "yesterday"}, "field 'tstamp': expected float, got 'yesterday'"),
    ({"turn": 1.5}, "field 'turn': expected an integer, got float"),
    ({"anony": "maybe"}, "field 'anony': expected bool, got 'maybe'"),
    ({"question_id": None}, "field 'question_id': missing field"),
]


@pytest.mark.parametrize("change, message", BAD_ARENA, ids=[m.split(":")[0] for _, m in BAD_ARENA])
def test_bad_arena_rows_name_line_and_field(run_cli, db_path, tmp_path, write_jsonl, change, message):
    rows = arena_rows()[:2]
    rows[1].update(change)
    path = write_jsonl(tmp_path / "arena.jsonl", rows)
    r = run_cli("ingest", "battles", path, "--format", "arena", "--own-model", "koala-13b")
    assert r.exit_code == 2 and len(r.output.splitlines()) == 1, r.output
    assert r.output.startswith(f"error: {path}, line 2, {message}"), r.output
    with open_store(db_path, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM battles") == 0


def test_arena_others_held_out_give_no_pair(store):
    haiku = [{"role": "user", "content": "Write a haiku about spring rain."}]
    add_eval_items(store, "poems", [{"item_id": "p1", "kind": "task", "prompt": haiku, "gold": None}])
    res = ingest_battles(store, ARENA_JSONL, fmt="arena", own_models=["koala-13b"], others="pairs")
    assert (res.added, res.pairs, dict(res.skipped)) == (3, 0, {"others: tie": 1, "others: holdout": 1})


def test_arena_null_turns_are_counted(store, tmp_path, write_jsonl):
    rows = arena_rows()[:3]
    rows[0]["conversation_b"][1]["content"] = None
    res = ingest_battles(
        store, write_jsonl(tmp_path / "a.jsonl", rows), fmt="arena", own_models=["koala-13b"]
    )
    assert (res.added, dict(res.skipped)) == (1, {"null response": 1, "no own model": 1})


@pytest.mark.parametrize(
    "options, message",
    [
        ({"fmt": "arena"}, "field 'own-model': --format arena needs --own-model NAME"),
        ({"fmt": "arena", "own_models": [" "]}, "needs --own-model NAME"),
        (
            {"fmt": "native", "own_models": ["x"]},
            "--own-model and --others go with --format arena, arena55k or fastchat-log",
        ),
        ({"fmt": "arena", "own_models": ["x"], "others": "keep"}, "field 'others': unknown value 'keep'"),
    ],
)
def test_arena_options_are_checked(store, options, message):
    with pytest.raises(BadInput, match=message):
        ingest_battles(store, ARENA_JSONL, **options)


# ---------------------------------------------------------------------------- GSM8K, MATH, MATH-500


def test_gsm8k_hub_folder_reads_main_train_only(store, saved):
    res = ingest_problems(store, "gsm8k", path=REAL / "gsm8k")
    assert (res.read, res.added) == (3, 3)
    assert sorted(r["gold"] for r in store.rows("SELECT gold FROM problems")) == ["10", "5", "72"]
    assert store.scalar("SELECT count(*) FROM problems WHERE solution LIKE '%**%'") == 0  # not socratic
    assert store.scalar("SELECT DISTINCT source_file FROM problems") == "main/train-00000-of-00001.parquet"
    assert ingest_problems(store, "gsm8k", path=saved["gsm8k"]).added == 0  # the DatasetDict's train split
    assert store.scalar("SELECT count(*) FROM ingests") == 2


def test_math_hub_folder_and_math500_shaped_train_rows(store, tmp_path):
    res = ingest_problems(store, "math", path=REAL / "hendrycks_math")
    assert (res.read, res.added) == (3, 3)
    with open_store(tmp_path / "prm.duckdb") as prm:
        res = ingest_problems(prm, "math", path=REAL / "prm800k" / "math_splits" / "train.jsonl")
        assert res.added == 4
        got = {r["unique_id"]: r for r in prm.rows("SELECT unique_id, level, subject, gold FROM problems")}
    assert got["train/number_theory/93.json"] == {
        "unique_id": "train/number_theory/93.json",
        "level": "Level 3",
        "subject": "Number Theory",
        "gold": "5",
    }
    assert (
        got["train/number_theory/336.json"]["gold"] == "7 \\text{ distinct integers}"
    )  # the row's own answer
    assert got["train/counting_and_probability/314.json"]["gold"] == "\\frac{7}{16}"
    levels = {r["level"] for r in store.rows("SELECT level FROM problems")}
    assert levels == {"Level 3", "Level 5"}  # MATH's "Level N" and MATH-500's integers read alike


def test_math500_is_refused_as_training_problems(store, tmp_path, saved):
    with pytest.raises(BadInput, match="no 'train' split in this folder \\(found: test\\)"):
        ingest_problems(store, "math", path=REAL / "MATH-500")
    with pytest.raises(BadInput, match="looks like a test/validation split"):
        ingest_problems(store, "math", path=REAL / "MATH-500" / "test.jsonl")
    renamed = tmp_path / "math500.jsonl"
    shutil.copy(REAL / "MATH-500" / "test.jsonl", renamed)
    with pytest.raises(
        BadInput,
        match=r"math500.jsonl, line 1, field 'unique_id': 'test/precalculus/807.json' is "
        "a test-split problem",
    ):
        ingest_problems(store, "math", path=renamed)
    with pytest.raises(BadInput, match="holds the 'test' split, not 'train'"):
        ingest_problems(store, "math", path=saved["math500"])
    assert store.scalar("SELECT count(*) FROM problems") == 0


def test_math500_is_accepted_as_a_benchmark_and_an_eval_suite(run_cli, db_path, saved):
    r = run_cli(
        "audit",
        "decontam",
        "--benchmark",
        "math500",
        "--path",
        REAL / "MATH-500" / "test.jsonl",
        "--all-pairs",
        "--register",
    )
    assert r.exit_code == 0 and "2 items" in r.output and "registered for the export gate" in r.output
    with open_store(db_path, read_only=True) as s:
        assert {r["item_id"] for r in s.rows("SELECT item_id FROM benchmark_refs")} == {
            "test/precalculus/807.json",
            "test/algebra/1349.json",
        }
    for path in (REAL / "MATH-500", REAL / "MATH-500" / "test.jsonl", saved["math500"]):
        items = read_suite_file(path, "math500")
        assert [it.gold for it in items] == ["\\left( 3, \\frac{\\pi}{2} \\right)", "\\text{Evelyn}"]
    gsm = read_suite_file(REAL / "gsm8k", "gsm8k")  # a Hub folder's test split
    assert [it.gold for it in gsm] == ["18"]


# ---------------------------------------------------------------------------- UltraFeedback, lm-eval


def test_ultrafeedback_in_every_form(tmp_path, saved, write_jsonl):
    rows = pq.read_table(REAL / "ultrafeedback_binarized/data/train_prefs-00000-of-00001.parquet").to_pylist()
    forms = {
        "hub folder": REAL / "ultrafeedback_binarized",
        "save_to_disk dict": saved["uf"],
        "jsonl": write_jsonl(tmp_path / "train_prefs.jsonl", rows),
    }
    for name, path in forms.items():
        with open_store(tmp_path / f"{name}.duckdb") as s:
            res = import_ultrafeedback(s, path=path)
            assert (res.kept, dict(res.dropped), res.stats["rows"]) == (2, {"tie": 1}, 3), name
            ids = {r["origin_id"] for r in s.rows("SELECT origin_id FROM pair_origins")}
            assert not any(i.startswith("ultrafeedback:5a7c") for i in ids)  # the test_prefs row


def test_lm_eval_samples(run_cli, db_path):
    path = next((REAL / "lm-eval").glob("samples_gsm8k_*.jsonl"))
    r = run_cli(
        "ingest",
        "evals",
        path,
        "--model",
        "sm11a",
        "--suite",
        "gsm8k",
        "--format",
        "lm-eval",
        "--filter",
        "flexible-extract",
    )
    assert r.exit_code == 0 and "added 1" in r.output
    with open_store(db_path, read_only=True) as s:
        assert s.rows("SELECT item_id, correct, extracted_answer FROM evals") == [
            {"item_id": "0", "correct": True, "extracted_answer": "18"}
        ]


# ---------------------------------------------------------------------------- a new user, end to end


def test_a_new_user_reaches_a_gated_export_with_the_public_files(run_cli, db_path, tmp_path):
    steps = [
        ["ingest", "battles", ARENA_HUB, "--format", "arena", "--own-model", "koala-13b"],
        [
            "ingest",
            "battles",
            ARENA_55K,
            "--format",
            "arena55k",
            "--own-model",
            "gpt-4-0613",
            "--others",
            "pairs",
        ],
        ["ingest", "problems", "--dataset", "gsm8k", "--path", REAL / "gsm8k"],
        [
            "ingest",
            "problems",
            "--dataset",
            "math",
            "--path",
            REAL / "prm800k" / "math_splits" / "train.jsonl",
        ],
        ["mine", "ultrafeedback", "--path", REAL / "ultrafeedback_binarized"],
        [
            "audit",
            "decontam",
            "--benchmark",
            "math500",
            "--path",
            REAL / "MATH-500" / "test.jsonl",
            "--all-pairs",
            "--register",
        ],
        [
            "ingest",
            "evals",
            next((REAL / "lm-eval").glob("*.jsonl")),
            "--model",
            "base",
            "--suite",
            "gsm8k",
            "--format",
            "lm-eval",
        ],
        ["holdout", "sample", "judge", "--n", "1", "--seed", "7", "--where", "battle_id = '53567'"],
        ["mine", "battle"],
    ]
    for step in steps:
        r = run_cli(*step)
        assert r.exit_code == 0, (step, r.output)
    (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
    (tmp_path / "r1.toml").write_text(
        'name = "r1"\nkind = "dpo"\nparent = "base"\nseed = 1\nsystem_prompt = "You are Koala."\n'
        '[[mix]]\nsource = "battle"\n[[mix]]\nsource = "arena"\n[[mix]]\nsource = "ultrafeedback"\n'
        "[train]\nbeta = 0.1\nsft_weight = 0.5\nlora_rank = 8\nlora_alpha = 16\nlora_dropout = 0.0\n"
        'target_modules = "all-linear"\nlearning_rate = 1e-6\nlr_scheduler = "cosine"\nwarmup_ratio = 0.1\n'
        "max_steps = 10\nglobal_batch = 8\nper_device_batch = 1\nmax_length = 512\n"
    )
    assert run_cli("round", "add", tmp_path / "base.toml", tmp_path / "r1.toml").exit_code == 0
    r = run_cli("export", "--round", "r1", "--out", tmp_path / "out")
    assert r.exit_code == 0, r.output
    rows = pq.read_table(tmp_path / "out" / "r1.parquet").to_pylist()
    by_source = {s: sum(1 for x in rows if x["source"] == s) for s in ("battle", "arena", "ultrafeedback")}
    # koala's 2 decided battles of the 33k rows, gpt-4-0613's loss (its win is held out), 2 arena, 2 UF
    assert by_source == {"battle": 3, "arena": 2, "ultrafeedback": 2}
    held = "What is the difference between marriage license and marriage certificate?"
    assert not any(held in m["content"] for x in rows for m in x["prompt"])
    evidence = json.loads((tmp_path / "out" / "r1.training_evidence.json").read_text())
    assert evidence["rows_by_source"] == by_source and evidence["gate"]
