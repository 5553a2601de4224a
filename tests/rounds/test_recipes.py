"""Round recipes: parsing and validation, storage, shipped recipes and lineage against the model card."""

from __future__ import annotations

import hashlib
import json

import pytest

from pairstore.errors import BadInput, BadInputs
from pairstore.keys import sha256_text
from pairstore.rounds.lineage import lineage
from pairstore.rounds.recipes import (
    add_round,
    get_round,
    known_sources,
    load_shipped_recipes,
    parse_recipe,
    recipe_from_json,
    shipped_recipe_paths,
)
from pairstore.store.store import open_store
from pairstore.tables.pairs import Pair, add_pairs

TRAIN = """
[train]
beta = 0.1
sft_weight = 0.7
lora_rank = 64
lora_alpha = 128
lora_dropout = 0.05
target_modules = "all-linear"
learning_rate = 1e-6
lr_scheduler = "cosine"
warmup_ratio = 0.1
max_steps = 250
global_batch = 32
per_device_batch = 1
max_length = 2048
"""

DPO = (
    """name = "r1"
kind = "dpo"
parent = "base"
seed = 7
system_prompt = "bundle"
[[mix]]
source = "loopfix"
limit = 710
[[mix]]
source = "battle"
where = "family = 'math'"
upsample = 1.5
"""
    + TRAIN
)

BASE = 'name = "base"\nkind = "base"\n'


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_parse_dpo_recipe_into_dataclasses_and_json_layout():
    r = parse_recipe(DPO)
    assert (r.name, r.kind, r.parent, r.seed, r.system_prompt) == ("r1", "dpo", "base", 7, "bundle")
    assert [(m.source, m.limit, m.upsample, m.where) for m in r.mix] == [
        ("loopfix", 710, 1, None),
        ("battle", None, 1.5, "family = 'math'"),
    ]
    assert r.train.lora_alpha == 128 and r.train.global_batch == 32 and r.train.target_modules == "all-linear"
    j = r.to_json()
    assert set(j) == {
        "name",
        "kind",
        "parent",
        "parents",
        "seed",
        "system_prompt",
        "job_id",
        "note",
        "mix",
        "train",
    }
    assert j["parents"] == ["base"]
    assert j["mix"][0] == {"source": "loopfix", "where": None, "limit": 710, "upsample": 1}
    assert set(j["train"]) == {
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
    }
    assert r.sha256 == hashlib.sha256(DPO.encode()).hexdigest()


def test_parse_soup_recipe():
    r = parse_recipe('name = "sm"\nkind = "soup"\na = "so7a"\nb = "m11a"\nalpha = 0.625\njob_id = 12338\n')
    assert r.parents == ["so7a", "m11a"] and r.alpha == 0.625 and r.job_id == "12338"
    assert r.to_json()["a"] == "so7a" and r.to_json()["mix"] == [] and r.to_json()["train"] is None


@pytest.mark.parametrize(
    "text, field, words",
    [
        (DPO.replace("seed = 7", "seed = 7\nshuffle = true"), "shuffle", "unknown key 'shuffle'"),
        (DPO.replace("limit = 710", "limit = 710\nweight = 2"), "mix[0].weight", "unknown key 'weight'"),
        (
            DPO.replace("max_length = 2048", "max_length = 2048\nepochs = 3"),
            "train.epochs",
            "unknown key 'epochs'",
        ),
        (
            DPO.replace('source = "loopfix"', 'source = "loopfixx"'),
            "mix[0].source",
            "unknown source 'loopfixx'",
        ),
        ('name = "s"\nkind = "soup"\na = "x"\nb = "y"\nalpha = 1.5\n', "alpha", "alpha must be <= 1"),
        ('name = "s"\nkind = "soup"\na = "x"\nb = "y"\nalpha = -0.25\n', "alpha", "alpha must be >= 0"),
        ('name = "s"\nkind = "soup"\na = "x"\nb = "y"\nalpha = "half"\n', "alpha", "alpha must be a number"),
        ('name = "s"\nkind = "soup"\na = "x"\nb = "y"\nalpha = true\n', "alpha", "alpha must be a number"),
        ('name = "s"\nkind = "soup"\na = "x"\nb = "y"\n', "alpha", "a soup needs 'alpha'"),
        (DPO.replace('name = "r1"', 'name = "../r1"'), "name", "bad round name"),
        (DPO.replace('name = "r1"', 'name = "a/b"'), "name", "bad round name"),
        (DPO.replace('name = "r1"', 'name = ".hidden"'), "name", "bad round name"),
        (DPO.replace('name = "r1"', 'name = "m 11"'), "name", "bad round name"),
        (DPO.replace('parent = "base"', 'parent = "so7a/../x"'), "parent", "bad round name"),
        (DPO.replace('kind = "dpo"', 'kind = "sft"'), "kind", "kind must be one of"),
        (DPO.replace("lora_rank = 64\n", ""), "train.lora_rank", "[train] needs 'lora_rank'"),
        (DPO.replace("upsample = 1.5", "upsample = 0"), "mix[1].upsample", "must be > 0"),
        (DPO.replace("upsample = 1.5", "upsample = 1200"), "mix[1].upsample", "must be <= 100"),
        (DPO.replace("limit = 710", "limit = 0"), "mix[0].limit", "must be >= 1"),
        (
            DPO.replace("where = \"family = 'math'\"", 'where = "1=1; DROP TABLE pairs"'),
            "mix[1].where",
            "';' (a second statement)",
        ),
        (
            DPO.replace("global_batch = 32", "global_batch = 30\nper_device_batch = 4").replace(
                "per_device_batch = 1\n", ""
            ),
            "train.global_batch",
            "multiple of",
        ),
        (
            DPO.replace('lr_scheduler = "cosine"', 'lr_scheduler = "cosinus"'),
            "train.lr_scheduler",
            "must be one of",
        ),
        (DPO.replace("seed = 7\n", ""), "seed", "needs 'seed'"),
        (DPO.replace("seed = 7", 'seed = 7\na = "x"'), "a", "does not belong in a dpo recipe"),
        (DPO + 'a = "x"\n', "train.a", "unknown key 'a' in [train]"),
    ],
)
def test_recipe_errors_are_one_plain_line(text, field, words):
    with pytest.raises(BadInput) as e:
        parse_recipe(text, path="r.toml")
    assert e.value.field == field
    assert words in str(e.value)
    assert str(e.value).startswith("r.toml")
    assert "\n" not in str(e.value)


def test_error_names_the_line_of_the_mistake():
    text = DPO.replace('source = "battle"', 'source = "battel"')
    with pytest.raises(BadInput) as e:
        parse_recipe(text, path="r.toml")
    assert e.value.line == text.splitlines().index('source = "battel"') + 1
    with pytest.raises(BadInput) as e:
        parse_recipe('name = "x"\nkind = "dpo"\nparent = [', path="r.toml")
    assert "not valid TOML" in str(e.value)


def test_round_add_missing_parent_same_file_and_conflicting_recipe(db_path, tmp_path, run_cli):
    r1 = write(tmp_path, "r1.toml", DPO)
    res = run_cli("round", "add", str(r1))
    assert res.exit_code == 2
    assert "parent 'base' is not a registered round" in res.output and "line 3" in res.output
    assert run_cli("round", "add", str(write(tmp_path, "base.toml", BASE))).exit_code == 0
    res = run_cli("round", "add", str(r1))
    assert res.exit_code == 0 and "added: r1" in res.output
    res = run_cli("round", "add", str(r1))
    assert res.exit_code == 0 and "unchanged: r1" in res.output
    other = write(tmp_path, "r1b.toml", DPO.replace("limit = 710", "limit = 711"))
    res = run_cli("round", "add", str(other))
    assert res.exit_code == 2 and "already registered with another recipe" in res.output
    # soups: both sides must exist
    soup = write(tmp_path, "s.toml", 'name = "s"\nkind = "soup"\na = "r1"\nb = "zz"\nalpha = 0.5\n')
    res = run_cli("round", "add", str(soup))
    assert res.exit_code == 2 and "field 'b'" in res.output and "'zz' is not a registered round" in res.output
    res = run_cli("round", "list")
    assert res.exit_code == 0 and "r1" in res.output and "base" in res.output
    res = run_cli("round", "show", "r1")
    assert res.exit_code == 0 and json.loads(res.output)["recipe"]["seed"] == 7
    assert run_cli("round", "show", "nope").exit_code == 2
    store = open_store(db_path)
    row = store.one("SELECT recipe_sha256, recipe_toml, parents, kind, recipe FROM rounds WHERE name = 'r1'")
    assert row[0] == hashlib.sha256(r1.read_bytes()).hexdigest() and row[1] == DPO
    assert row[2] == ["base"] and row[3] == "dpo" and json.loads(row[4])["mix"][0]["limit"] == 710
    assert get_round(store, "r1").mix[0].limit == 710
    assert [r["action"] for r in store.rows("SELECT action FROM audit_log WHERE action = 'round.add'")] == [
        "round.add",
        "round.add",
    ]
    store.close()


def test_sources_present_in_the_store_are_allowed(store, tmp_path):
    add_round(store, write(tmp_path, "base.toml", BASE))
    text = DPO.replace('source = "loopfix"', 'source = "battle_external"')
    with pytest.raises(BadInput, match="unknown source 'battle_external'"):
        add_round(store, write(tmp_path, "r.toml", text))
    add_pairs(
        store,
        [Pair(prompt="q", chosen="a", rejected="b", source="battle_external")],
        miner="t",
        miner_version="1",
    )
    recipe, added = add_round(store, write(tmp_path, "r.toml", text))
    assert added and recipe.mix[0].source == "battle_external"
    assert "attached" in known_sources()


CARD_CHAIN = [  # model card, Training 1-7: (name, kind, parents, alpha, job)
    ("base", "base", [], None, None),
    ("p1r2", "dpo", ["base"], None, "6597"),
    ("s2r1", "dpo", ["p1r2"], None, "7747"),
    ("s2r2", "dpo", ["s2r1"], None, "7899"),
    ("s2r3", "dpo", ["s2r2"], None, "8103"),
    ("s2r4", "dpo", ["s2r3"], None, "8391/8392"),
    ("s2r5b", "dpo", ["s2r4"], None, "8731"),
    ("s2r8c", "dpo", ["s2r5b"], None, "9364"),
    ("s2s075", "soup", ["s2r5b", "s2r8c"], 0.75, "10007"),
    ("m1", "dpo", ["s2s075"], None, None),
    ("so5a", "soup", ["s2s075", "m1"], 0.5, "10938"),
    ("m4a", "dpo", ["so5a"], None, "11239"),
    ("so6a", "soup", ["so5a", "m4a"], 0.5, "11295"),
    ("m6a", "dpo", ["so6a"], None, "11425"),
    ("so7a", "soup", ["so6a", "m6a"], 0.5, "11446"),
    ("m11a", "dpo", ["so7a"], None, "12076"),
    ("sm11a", "soup", ["so7a", "m11a"], 0.5, "12112"),
]


def test_shipped_recipes_load_and_lineage_sm11a_matches_the_card(store):
    names = {p.stem for p in shipped_recipe_paths()}
    assert names == {
        "base",
        "p1r2",
        "s2r1",
        "s2r2",
        "s2r3",
        "s2r4",
        "s2r5b",
        "s2r8c",
        "s2s075",
        "m1",
        "so5a",
        "m4a",
        "so6a",
        "m6a",
        "so7a",
        "m11a",
        "sm11a",
        "m3a",
        "m3b",
        "m4b",
        "m5a",
        "m7a",
        "m8a",
        "m9a",
        "so8a",
        "so8h",
        "m10a",
        "so9x",
        "m10b",
        "m12a",
        "sm12a",
        "sm11c",
        "sm11d",
    }
    first = load_shipped_recipes(store)
    assert sorted(first["added"]) == sorted(names) and first["unchanged"] == []
    assert load_shipped_recipes(store) == {"added": [], "unchanged": first["added"]}
    chain = lineage(store, "sm11a")
    assert [(s["name"], s["kind"], s["parents"], s["alpha"], s["job_id"]) for s in chain] == CARD_CHAIN
    m11a = get_round(store, "m11a")
    assert (m11a.train.max_steps, m11a.train.learning_rate, m11a.seed) == (250, 1e-6, 12076)
    assert [(b.source, b.limit) for b in m11a.mix] == [("loopfix", 710), ("battle", 99)]
    assert get_round(store, "p1r2").train.max_steps == 4512
    assert get_round(store, "s2r8c").mix[0].upsample == 12
    assert (
        get_round(store, "s2r5b").train.max_steps == 2400 and get_round(store, "m6a").train.max_steps == 350
    )
    assert get_round(store, "m10a").train.max_steps == 300 and get_round(store, "m10a").job_id == "11766"
    assert get_round(store, "m10b").adapter_step == 150 and get_round(store, "m10b").parents == [
        "so7a",
        "m10a",
    ]
    for name, alpha, job in [("so9x", 0.25, "11948"), ("sm11c", 0.75, "12337"), ("sm11d", 0.625, "12338")]:
        r = get_round(store, name)
        assert (r.a, r.b, r.alpha, r.job_id) == (("so7a", "m10a") if name == "so9x" else ("so7a", "m11a")) + (
            alpha,
            job,
        )
    assert get_round(store, "m12a").mix[0].limit == 786 and get_round(store, "m12a").job_id == "12269"
    assert get_round(store, "sm12a").job_id == "12278"


def test_every_shipped_recipe_comments_the_values_the_card_leaves_open():
    for p in shipped_recipe_paths():
        text = p.read_text()
        assert text.startswith("#"), p.name  # each says where it comes from in the card
        for line in text.splitlines():
            if line.startswith(("lora_alpha", "lora_dropout", "lr_scheduler", "warmup_ratio")):
                assert "not in the card" in line, (p.name, line)


def test_cli_lineage_prints_the_chain_in_order(store, run_cli):
    load_shipped_recipes(store)
    store.close()
    res = run_cli("lineage", "sm11a")
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert [ln.split()[1] for ln in lines] == [c[0] for c in CARD_CHAIN]
    assert "so7a + 0.5*(m11a - so7a)" in lines[-1] and "job 12112" in lines[-1]
    assert "s2r5b + 0.75*(s2r8c - s2r5b)" in res.output
    res = run_cli("lineage", "sm11a", "--json")
    assert [s["name"] for s in json.loads(res.output)] == [c[0] for c in CARD_CHAIN]
    assert run_cli("lineage", "nope").exit_code == 2


def test_a_recipe_reports_every_mistake_with_its_line_and_field():
    text = (
        DPO.replace("seed = 7", "seed = -1\nshuffle = true")
        .replace('source = "loopfix"', 'source = "loopfixx"')
        .replace("upsample = 1.5", "upsample = 0")
        .replace("lora_rank = 64\n", "")
        .replace('lr_scheduler = "cosine"', 'lr_scheduler = "cosinus"')
    )
    with pytest.raises(BadInputs) as e:
        parse_recipe(text, path="r.toml")
    lines = text.splitlines()
    got = {(p.field, p.line) for p in e.value.problems}
    assert got == {
        ("seed", lines.index("seed = -1") + 1),
        ("shuffle", lines.index("shuffle = true") + 1),
        ("mix[0].source", lines.index('source = "loopfixx"') + 1),
        ("mix[1].upsample", lines.index("upsample = 0") + 1),
        ("train.lora_rank", lines.index("[train]") + 1),
        ("train.lr_scheduler", lines.index('lr_scheduler = "cosinus"') + 1),
    }
    shown = str(e.value).splitlines()
    assert shown[0] == "6 mistakes:" and all(s.startswith("  r.toml, line ") for s in shown[1:])
    assert e.value.exit_code == 2


def test_round_add_of_several_files_is_all_or_nothing(db_path, tmp_path, run_cli, store):
    base = write(tmp_path, "base.toml", BASE)
    r1 = write(tmp_path, "r1.toml", DPO)  # its parent is base, in the same command
    bad = write(
        tmp_path, "r2.toml", DPO.replace('name = "r1"', 'name = "r2"').replace("seed = 7", "seed = -7")
    )
    soup = write(tmp_path, "s.toml", 'name = "s"\nkind = "soup"\na = "r1"\nb = "nowhere"\nalpha = 0.5\n')
    store.close()
    res = run_cli("round", "add", str(r1), str(bad), str(soup), str(base))
    assert res.exit_code == 2
    assert f"{bad}, line " in res.output and "field 'seed'" in res.output
    assert f"{soup}, line 4, field 'b'" in res.output and "'nowhere' is not a registered round" in res.output
    with open_store(db_path, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM rounds") == 0  # nothing of the good files either
    res = run_cli("round", "add", str(r1), str(base))  # children before parents: fine in one command
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[:2] == [
        f"added: r1 (dpo, sha256 {sha256_text(DPO)[:12]})",
        f"added: base (base, sha256 {sha256_text(BASE)[:12]})",
    ]


def test_recipe_keys_come_from_the_dataclasses():
    """One declaration: every key a recipe kind accepts is a field of its dataclass, and back."""
    from dataclasses import fields

    from pairstore.rounds.recipes import RECIPE_CLASSES, TRAIN_KEYS, TrainConfig, keys_of

    assert TRAIN_KEYS == tuple(f.name for f in fields(TrainConfig))
    assert set(keys_of(RECIPE_CLASSES["soup"])) == {"name", "kind", "job_id", "note", "a", "b", "alpha"}
    for text in (DPO, BASE, 'name = "s"\nkind = "soup"\na = "x"\nb = "y"\nalpha = 0.5\n'):
        r = parse_recipe(text)
        assert recipe_from_json(r.to_json(), r.sha256) == r


def test_a_where_on_a_wrong_column_is_refused_at_round_add_and_burns_no_name(tmp_path, run_cli):
    assert run_cli("round", "add", str(write(tmp_path, "base.toml", BASE))).exit_code == 0
    typo = write(
        tmp_path, "r1.toml", DPO.replace("where = \"family = 'math'\"", "where = \"famly = 'math'\"")
    )
    for args in (("round", "add", "--check", str(typo)), ("round", "add", str(typo))):
        res = run_cli(*args)
        assert res.exit_code == 2, res.output
        line = res.stderr.strip()
        assert line.count("\n") == 0
        assert f"{typo}, line 11, field 'mix[1].where'" in line  # the file, the where's line, the block
        assert 'Candidate bindings: "family"' in line  # DuckDB's hint, kept
    assert "r1" not in run_cli("round", "list", "--csv").stdout
    # the fixed recipe takes the name: the refused one never registered it
    fixed = write(tmp_path, "r1-fixed.toml", DPO)
    res = run_cli("round", "add", "--check", str(fixed))
    assert res.exit_code == 0 and "ok: r1" in res.stdout and "not added" in res.stdout
    assert "r1" not in run_cli("round", "list", "--csv").stdout  # --check adds nothing
    assert run_cli("round", "add", str(fixed)).exit_code == 0
    assert "r1" in run_cli("round", "list", "--csv").stdout
