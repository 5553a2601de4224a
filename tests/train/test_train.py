"""Training, merge, sampling, eval and launchers on a tiny random Llama bundle (CPU, no downloads).

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/train/test_train.py -q
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from click.testing import CliRunner
from safetensors.torch import load_file, save_file

from pairstore.cli import cli
from pairstore.errors import BadInput, GateRefused
from pairstore.keys import sha256_file
from pairstore.store.store import open_store

ROUND = "r1"
SYSTEM = "Answer briefly."
PAIRS = [
    {
        "prompt": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"What is {i} + {i + 3}?"},
        ],
        "chosen": f"{i} + {i + 3} = {2 * i + 3}\nFinal answer: {2 * i + 3}",
        "rejected": f"{i} {i} {i} {i} {i} {i} {i} {i}",
    }
    for i in range(4)
]
SFT_ANSWER = "Hi there.\nFinal answer: hi"
TRAIN = {
    "beta": 0.1,
    "sft_weight": 0.7,
    "lora_rank": 8,
    "lora_alpha": 16,
    "lora_dropout": 0.0,
    "target_modules": "all-linear",
    "learning_rate": 5e-3,
    "lr_scheduler": "constant",
    "warmup_ratio": 0.0,
    "max_steps": 6,
    "global_batch": 4,
    "per_device_batch": 2,
    "max_length": 256,
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def write_export(path: Path, pairs=PAIRS) -> Path:
    """A mixture in the export format: prompt/chosen/rejected as message lists, plus ids."""
    rows = [
        {
            "prompt": p["prompt"],
            "chosen": [{"role": "assistant", "content": p["chosen"]}],
            "rejected": [{"role": "assistant", "content": p["rejected"]}],
            "pair_id": f"p{i}",
            "source": "test",
            "family": "add",
        }
        for i, p in enumerate(pairs)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_sft_export(path: Path) -> Path:
    """NLL-only rows in the export format: prompt and one assistant completion."""
    rows = [
        {
            "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hi."}],
            "completion": [{"role": "assistant", "content": SFT_ANSWER}],
            "pair_id": "s0",
            "source": "style",
            "family": None,
        }
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def add_round(
    store,
    folder: Path,
    name: str = ROUND,
    train: dict | None = None,
    pairs=PAIRS,
    sft: bool = False,
    parent: str | None = None,
) -> Path:
    """A dpo round recipe and its export registered the way `pairstore export` registers one."""
    recipe = {
        "name": name,
        "kind": "dpo",
        "parent": parent,
        "parents": [parent] if parent else [],
        "seed": 11,
        "system_prompt": SYSTEM,
        "job_id": None,
        "note": None,
        "mix": [{"source": "test", "where": None, "limit": None, "upsample": 1}],
        "train": dict(TRAIN, **(train or {})),
    }
    files = [(write_export(folder / f"{name}.parquet", pairs), len(pairs))]
    if sft:
        files.append((write_sft_export(folder / f"{name}.sft.parquet"), 1))
    with store.transaction():
        store.con.execute(
            "INSERT INTO rounds (name, kind, parents, recipe, recipe_toml, recipe_sha256) "
            "VALUES (?, 'dpo', [], ?, '', ?)",
            [name, json.dumps(recipe), "0" * 64],
        )
        for path, rows in files:
            store.con.execute(
                "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
                "VALUES (?, ?, 'export', ?, ?, ?, 'h')",
                [f"e-{path.name}", name, str(path), sha256_file(path), rows],
            )
    return files[0][0]


def dpo(base, out: Path, **options):
    """`train dpo`'s options for round r1 on `base`."""
    from train.dpo_job import DpoOptions

    return DpoOptions(round=ROUND, base=str(base), out=str(out), **options)


def train_dpo_cli(db: Path, tiny, out: Path, *extra: str):
    """`pairstore train dpo --round r1` on the tiny base, through the CLI."""
    args = ["--db", str(db), "train", "dpo", "--round", ROUND, "--base", str(tiny), "--out", str(out)]
    return CliRunner().invoke(cli, [*args, *extra])


@pytest.fixture(scope="session")
def trained(tmp_path_factory, tiny):
    """One DPO+NLL run of a few steps, a checkpoint every 2 steps."""
    from train.dpo import train_dpo

    folder = tmp_path_factory.mktemp("dpo")
    db = folder / "store.duckdb"
    with open_store(db) as store:
        add_round(store, folder, sft=True)
        result = train_dpo(store, dpo(tiny, folder / "lora", save_steps=2))
    return {"db": db, "folder": folder, "result": result, "adapter": folder / "lora"}


def margins(model, serving):
    from train.dpo import pair_margins

    return pair_margins(model, serving, PAIRS)


# ---------------------------------------------------------------------------- the tiny bundle


def test_tiny_bundle_is_served_like_the_model_card(tiny):
    from train.serving import load_serving

    for name in (
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "chat_template.jinja",
        "system_prompt.txt",
        "generation_config.json",
        "serving_config.json",
    ):
        assert (tiny / name).is_file(), name
    s = load_serving(tiny)
    gen = json.loads((tiny / "generation_config.json").read_text())
    assert s.eos_ids == gen["eos_token_id"] and len(s.eos_ids) == 2 and s.end_of_turn == "<|im_end|>"
    serving = json.loads((tiny / "serving_config.json").read_text())
    assert serving["add_generation_prompt"] is True and serving["enable_thinking"] is False
    text = s.render(s.with_system([{"role": "user", "content": "2+2?"}]))
    assert text.startswith("<s><|im_start|>system\n" + s.system_prompt) and text.endswith(
        "<|im_start|>assistant\n"
    )
    thinking = s.tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}], tokenize=False, add_generation_prompt=True, enable_thinking=True
    )
    assert thinking.endswith("<think>\n")


# ---------------------------------------------------------------------------- DPO + NLL


def test_dpo_nll_raises_the_chosen_minus_rejected_margin(trained, tiny):
    from peft import PeftModel

    from train.serving import load_model, load_serving

    serving = load_serving(tiny)
    base = load_model(tiny, dtype=torch.float32)
    before = margins(base, serving)
    tuned = PeftModel.from_pretrained(load_model(tiny, dtype=torch.float32), str(trained["adapter"]))
    after = margins(tuned, serving)
    assert sum(after) / len(after) > sum(before) / len(before) + 0.5
    assert all(a > b for a, b in zip(after, before))

    evidence = json.loads((trained["adapter"] / "training_evidence.json").read_text())
    assert evidence["mixture_sha256"] == sha256_file(trained["folder"] / f"{ROUND}.parquet")
    assert evidence["objective"] == {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 0.7], "beta": 0.1}
    hp = evidence["hyperparameters"]
    assert hp["gradient_accumulation_steps"] == 2 and hp["world_size"] == 1 and hp["lora_rank"] == 8
    assert evidence["seed"] == 11 and evidence["recipe"]["train"]["sft_weight"] == 0.7
    assert evidence["options"]["save_steps"] == 2 and evidence["options"]["round"] == ROUND
    assert evidence["base"]["check"] == "no parent" and evidence["base"]["recipe_parent"] is None
    assert evidence["rows"] == 5 and evidence["sft_rows"] == 1
    assert evidence["sft_mixture_sha256"] == sha256_file(trained["folder"] / f"{ROUND}.sft.parquet")
    assert {"torch", "transformers", "peft", "trl"} <= set(evidence["libraries"])
    final = evidence["final_metrics"]
    assert final["global_step"] == 6 and {"loss", "rewards/margins", "rewards/accuracies"} <= set(final)
    logged = [e["rewards/margins"] for e in evidence["log_history"] if "rewards/margins" in e]
    assert len(logged) == 6 and logged[0] == 0.0 and max(logged) > 0.1  # the policy starts at the reference
    with open_store(trained["db"], read_only=True) as store:
        row = store.rows(
            "SELECT kind, parents, round, path FROM checkpoints WHERE name = ?", [f"{ROUND}-lora"]
        )
    assert row == [{"kind": "adapter", "parents": ["base"], "round": ROUND, "path": str(trained["adapter"])}]
    assert (trained["adapter"] / "checkpoint-2").is_dir() and (trained["adapter"] / "checkpoint-6").is_dir()


def test_training_pairs_are_rendered_as_served_and_end_with_the_end_of_turn_token(tiny, tmp_path):
    from train.dpo import mixture_rows
    from train.serving import load_serving

    s = load_serving(tiny)
    rows = mixture_rows(write_export(tmp_path / "m.parquet"), s, write_sft_export(tmp_path / "m.sft.parquet"))
    assert rows["prompt"][0] == s.render(PAIRS[0]["prompt"])
    assert rows["chosen"][0] == PAIRS[0]["chosen"] + "<|im_end|>"
    assert all(r.endswith("<|im_end|>") for r in rows["rejected"])
    # An NLL-only row: its rejected side is its chosen side, so only the NLL term acts on it.
    assert (
        rows["chosen"][-1] == rows["rejected"][-1] == SFT_ANSWER + "<|im_end|>" and len(rows["prompt"]) == 5
    )


def test_resume_continues_from_the_last_checkpoint(tiny, tmp_path):
    """Also: a base that is not the recipe's parent trains only with --allow-other-base, and the training
    evidence records the override."""
    from pairstore.rounds.checkpoints import register_checkpoint
    from train.dpo import train_dpo

    with open_store(tmp_path / "s.duckdb") as store:
        add_round(store, tmp_path, parent="so7a")
        register_checkpoint(store, "m9", "base", [], path=str(Path(tiny).resolve()))
        with pytest.raises(BadInput, match="is checkpoint m9, not so7a"):
            train_dpo(store, dpo(tiny, tmp_path / "lora", max_steps=2, save_steps=2))
        assert not (tmp_path / "lora").exists()
        allowed = {"allow_other_base": True, "save_steps": 2}
        train_dpo(store, dpo(tiny, tmp_path / "lora", max_steps=2, **allowed))
        result = train_dpo(store, dpo(tiny, tmp_path / "lora", max_steps=3, resume=True, **allowed))
    assert result.evidence["base"]["allow_other_base"] is True and result.evidence["base"]["name"] == "m9"
    assert result.evidence["base"]["check"] == "allowed by --allow-other-base: base bundle " + str(tiny) + (
        " is checkpoint m9, not so7a"
    )
    assert result.evidence["options"]["allow_other_base"] is True
    assert result.evidence["resumed_from"] == "checkpoint-2"
    assert result.metrics["global_step"] == 3
    assert [e["step"] for e in result.evidence["log_history"] if "loss" in e] == [3]
    logged = [
        json.loads(line) for line in (tmp_path / "lora" / "training_log.jsonl").read_text().splitlines()
    ]
    assert [e["step"] for e in logged if "loss" in e] == [1, 2, 3]  # the resumed run appends


def test_tampered_mixture_is_refused_with_exit_3(tiny, tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        export = add_round(store, tmp_path)
    table = pq.read_table(export).to_pylist()
    table[0]["chosen"] = [{"role": "assistant", "content": "tampered"}]
    pq.write_table(pa.Table.from_pylist(table), export)
    res = train_dpo_cli(db, tiny, tmp_path / "lora")
    assert res.exit_code == 3, res.output
    assert "changed after export" in res.output and str(export) in res.output
    assert not (tmp_path / "lora").exists()

    from train.dpo import verify_mixture

    with pytest.raises(GateRefused):  # every training process checks again
        verify_mixture({"path": str(export), "sha256": "0" * 64})


def test_global_batch_must_divide_by_batch_and_world_size(tiny, tmp_path):
    from pairstore.rounds.recipes import TrainConfig
    from train.dpo_job import Hyperparameters, train_hyperparameters

    train = TrainConfig(**dict(TRAIN, global_batch=32, per_device_batch=1))
    hp = train_hyperparameters(train, ROUND, world_size=4, max_steps=None)
    assert (hp.gradient_accumulation_steps, hp.world_size, hp.per_device_batch) == (8, 4, 1)
    assert "overrides" not in hp.to_json() and Hyperparameters.from_json(hp.to_json()) == hp
    with pytest.raises(BadInput, match="not a multiple"):
        train_hyperparameters(train, ROUND, world_size=3, max_steps=None)
    with pytest.raises(BadInput, match="unknown training override 'epochs'"):
        train_hyperparameters(train, ROUND, world_size=1, max_steps=None, overrides={"epochs": 2})
    short = train_hyperparameters(train, ROUND, world_size=1, max_steps=3, overrides={"per_device_batch": 2})
    assert (short.max_steps, short.per_device_batch, short.gradient_accumulation_steps) == (3, 2, 16)
    assert short.to_json()["overrides"] == {"max_steps": 3, "per_device_batch": 2}


# ---------------------------------------------------------------------------- the base is the recipe's


def test_the_base_must_be_the_recipes_parent_unless_allowed(tiny, tmp_path):
    """By registered name, else by the parent's weights (shard SHA-256): another base is exit 2 naming both,
    --allow-other-base trains from it and says so in the job (and so the evidence)."""
    from pairstore.rounds.checkpoints import register_checkpoint

    db = tmp_path / "s.duckdb"
    parent = _copy(tiny, tmp_path, "so7a")
    same = _copy(tiny, tmp_path, "so7a-copy")
    other = _copy(tiny, tmp_path, "other")
    weights = other / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # the same layout and size, other weights
    weights.write_bytes(bytes(data))
    m9 = _copy(tiny, tmp_path, "m9")
    with open_store(db) as store:
        add_round(store, tmp_path, parent="so7a")
        register_checkpoint(store, "so7a", "base", [], path=str(parent.resolve()))
        register_checkpoint(store, "m9", "base", [], path=str(m9.resolve()))

    def prepare(base: Path, *extra: str):
        script = tmp_path / "job.sbatch"
        script.unlink(missing_ok=True)
        res = train_dpo_cli(db, base, tmp_path / "lora", "--emit-sbatch", str(script), "--gpus", "2", *extra)
        job = tmp_path / "lora" / "pairstore_job.json"
        return res, (json.loads(job.read_text()) if res.exit_code == 0 else None), script.exists()

    for base in (parent, same):
        res, job, _ = prepare(base)
        assert res.exit_code == 0, res.output
        assert job["base_name"] == "so7a", job["base_check"]
    assert job["base_check"]["check"] == "the same weights as so7a (shard SHA-256)"
    res, _, written = prepare(other)
    assert res.exit_code == 2 and not written, res.output
    assert (
        f"base bundle {other} is not so7a: its weights differ from so7a's bundle at {parent.resolve()}"
        in res.output
    )
    assert "--allow-other-base" in res.output
    res, _, written = prepare(m9)
    assert res.exit_code == 2 and not written and f"base bundle {m9} is checkpoint m9, not so7a" in res.output
    res, job, _ = prepare(m9, "--allow-other-base")
    assert res.exit_code == 0, res.output
    assert job["base_name"] == "m9" and job["base_check"]["allow_other_base"] is True
    assert (
        job["options"]["allow_other_base"] is True
        and "is checkpoint m9, not so7a" in job["base_check"]["check"]
    )


# ---------------------------------------------------------------------------- consistency and safety


def _copy(tiny, tmp_path, name="bundle") -> Path:
    return Path(shutil.copytree(tiny, tmp_path / name))


def _edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "breakage, message",
    [
        ("eos_not_closing", "ends an assistant turn with '<|im_end|>'"),
        ("eos_outside_vocab", "outside the tokenizer's vocabulary"),
        ("pad_inconsistent", "disagrees with the tokenizer's pad"),
        ("no_template", "no chat template"),
    ],
)
def test_template_tokenizer_generation_mismatch_is_an_error_before_training(
    tiny, tmp_path, breakage, message
):
    from train.dpo import train_dpo
    from train.serving import load_serving

    bundle = _copy(tiny, tmp_path)
    gen = bundle / "generation_config.json"
    if breakage == "eos_not_closing":
        _edit_json(gen, eos_token_id=[2])  # </s>: the template closes turns with <|im_end|>
    elif breakage == "eos_outside_vocab":
        _edit_json(gen, eos_token_id=[5, 99999])
    elif breakage == "pad_inconsistent":
        _edit_json(gen, pad_token_id=5)
    else:  # no template anywhere: neither chat_template.jinja nor
        # (for transformers 4.x) tokenizer_config.json
        (bundle / "chat_template.jinja").unlink()
        config = json.loads((bundle / "tokenizer_config.json").read_text())
        del config["chat_template"]
        (bundle / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(BadInput) as err:
        load_serving(bundle)
    assert message in str(err.value)
    with open_store(tmp_path / "s.duckdb") as store:
        add_round(store, tmp_path)
        with pytest.raises(BadInput):
            train_dpo(store, dpo(bundle, tmp_path / "lora"))
    assert not (tmp_path / "lora").exists()


def test_pickle_weights_are_refused(tiny, tmp_path):
    from train.merge import merge_adapter
    from train.serving import load_model

    bundle = _copy(tiny, tmp_path)
    weights = load_file(str(bundle / "model.safetensors"))
    (bundle / "model.safetensors").unlink()
    torch.save(weights, bundle / "pytorch_model.bin")
    with pytest.raises(BadInput, match="pickle checkpoint refused"):
        load_model(bundle)

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4}))
    torch.save({}, adapter / "adapter_model.bin")
    with pytest.raises(BadInput, match="pickle checkpoint refused"):
        merge_adapter(tiny, adapter, tmp_path / "out")


# ---------------------------------------------------------------------------- merge


def test_merge_equals_base_plus_the_lora_delta(trained, tiny, tmp_path):
    from peft import PeftModel

    from train.merge import merge_adapter, peft_merge
    from train.serving import load_model

    with open_store(trained["db"]) as store:
        result = merge_adapter(
            tiny, trained["adapter"], tmp_path / "merged", store=store, max_shard_bytes=100_000
        )
        rows = store.rows("SELECT name, kind, parents, round FROM checkpoints WHERE kind = 'merge'")
    out = tmp_path / "merged"
    assert result.method == "lora" and result.evidence["route"] == "stream"
    assert result.evidence["merged_modules"] == 14  # 7 projections x 2 layers
    index = json.loads((out / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) > 1 and all((out / s).is_file() for s in shards)
    for name in (
        "tokenizer.json",
        "chat_template.jinja",
        "system_prompt.txt",
        "generation_config.json",
        "serving_config.json",
        "config.json",
    ):
        assert (out / name).read_bytes() == (tiny / name).read_bytes(), name
    assert rows == [{"name": ROUND, "kind": "merge", "parents": ["base", ROUND], "round": ROUND}]

    base = load_file(str(tiny / "model.safetensors"))
    merged = {}
    for s in shards:
        merged.update(load_file(str(out / s)))
    assert set(merged) == set(base)
    lora = load_file(str(trained["adapter"] / "adapter_model.safetensors"))
    config = json.loads((trained["adapter"] / "adapter_config.json").read_text())
    scale = config["lora_alpha"] / config["r"]
    changed = 0
    for key, w in base.items():
        a = lora.get(f"base_model.model.{key[: -len('.weight')]}.lora_A.weight")
        if a is None:
            assert torch.equal(merged[key], w), key
            continue
        b = lora[f"base_model.model.{key[: -len('.weight')]}.lora_B.weight"]
        expected = w + scale * (b @ a)
        assert torch.allclose(merged[key], expected, atol=1e-6), key
        changed += int(not torch.equal(merged[key], w))
    assert changed == 14
    # And the same as PEFT's own merge_and_unload of the loaded model, which is also the fallback path.
    peft_merged = (
        PeftModel.from_pretrained(load_model(tiny, dtype=torch.float32), str(trained["adapter"]))
        .merge_and_unload()
        .state_dict()
    )
    peft_merge(tiny, trained["adapter"], tmp_path / "via-peft", 2 << 30, False)
    fallback = load_file(str(tmp_path / "via-peft" / "model.safetensors"))
    for key, w in merged.items():
        assert torch.allclose(peft_merged[key], w, atol=1e-6), key
        assert torch.allclose(fallback[key], w, atol=1e-6), key


def test_merge_of_an_intermediate_checkpoint(trained, tiny, tmp_path):
    from train.merge import merge_adapter

    result = merge_adapter(tiny, trained["adapter"] / "checkpoint-2", tmp_path / "step2")
    assert result.name == f"{ROUND}-step2" and result.evidence["adapter"]["step"] == 2
    final = merge_adapter(tiny, trained["adapter"], tmp_path / "final")
    a = load_file(str(tmp_path / "step2" / "model.safetensors"))
    b = load_file(str(tmp_path / "final" / "model.safetensors"))
    key = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(a[key], b[key]) and final.name == ROUND


# ---------------------------------------------------------------------------- sampling and eval


def _jsonl_items(write_jsonl, tmp_path) -> str:
    return write_jsonl(
        tmp_path / "items.jsonl",
        [
            {"id": "q1", "prompt": "What is 2 + 3?", "gold": "5", "kind": "gsm8k"},
            {
                "id": "q2",
                "prompt": [{"role": "user", "content": "Count the letters r in strawberry."}],
                "gold": "3",
            },
        ],
    )


def test_sample_with_a_seed_is_reproducible(tiny, tmp_path, write_jsonl):
    from train.sample import SampleOptions, sample

    items = _jsonl_items(write_jsonl, tmp_path)
    runs = []
    for i, seed in enumerate((5, 5, 6)):
        with open_store(tmp_path / f"s{i}.duckdb") as store:
            options = SampleOptions(
                model=str(tiny),
                items=items,
                samples=2,
                temperature=1.0,
                seed=seed,
                name="tiny",
                max_new_tokens=8,
            )
            r = sample(store, options)
            runs.append([row["output"] for row in r.rows])
            stored = store.rows(
                "SELECT item_kind, item_id, sample_index, temperature, seed, decoding, verdict, "
                "loop_flagged, n_tokens, prompt FROM generations ORDER BY item_id, sample_index"
            )
    assert runs[0] == runs[1] and runs[0] != runs[2]
    assert len(stored) == 4 and {r["item_id"] for r in stored} == {"q1", "q2"}
    assert all(r["item_kind"] == "prompt" and r["temperature"] == 1.0 and r["seed"] == 6 for r in stored)
    assert all(
        r["verdict"] in ("correct", "wrong", "unknown") and r["loop_flagged"] is not None for r in stored
    )
    decoding = json.loads(stored[0]["decoding"])
    assert (
        decoding["do_sample"] is True
        and decoding["eos_token_id"] == [5, 2]
        and decoding["max_new_tokens"] == 8
    )
    assert stored[0]["prompt"][0]["role"] == "system"  # answered with the bundle's system prompt


def test_greedy_sample_matches_served_generation_and_stores_once(tiny, tmp_path, write_jsonl):
    from transformers import AutoTokenizer

    from train.sample import SampleOptions, sample
    from train.serving import load_model

    items = _jsonl_items(write_jsonl, tmp_path)
    with open_store(tmp_path / "s.duckdb") as store:
        first = sample(store, SampleOptions(model=str(tiny), items=items, name="tiny"))
        again = sample(store, SampleOptions(model=str(tiny), items=items, name="tiny"))
        assert first.added == 2 and again.added == 0 and store.scalar("SELECT count(*) FROM generations") == 2
    # The model card's "How to use" code, by hand: the same text comes out.
    tok = AutoTokenizer.from_pretrained(str(tiny))
    system = (tiny / "system_prompt.txt").read_text().strip()
    text = tok.apply_chat_template(
        [{"role": "system", "content": system}, {"role": "user", "content": "What is 2 + 3?"}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=False,
    )
    ids = tok(text, return_tensors="pt")
    out = load_model(tiny, dtype=torch.float32).generate(
        **ids, max_new_tokens=12, eos_token_id=[5, 2], pad_token_id=3, do_sample=False
    )
    expected = tok.decode(out[0][ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert first.rows[0]["output"] == expected


def test_decoding_knobs_come_from_serving_config_or_flags_and_are_recorded(tiny, tmp_path, write_jsonl):
    from train.sample import SampleOptions, sample

    bundle = _copy(tiny, tmp_path)
    _edit_json(bundle / "serving_config.json", decoding={"repetition_penalty": 1.05})
    items = write_jsonl(tmp_path / "one.jsonl", [{"id": "a", "prompt": "Say hello."}])
    with open_store(tmp_path / "s.duckdb") as store:
        r1 = sample(store, SampleOptions(model=str(bundle), items=items, name="m1", max_new_tokens=4))
        r2 = sample(
            store,
            SampleOptions(
                model=str(bundle), items=items, name="m2", max_new_tokens=4, no_repeat_ngram_size=3
            ),
        )
    d1, d2 = json.loads(r1.rows[0]["decoding"]), json.loads(r2.rows[0]["decoding"])
    assert d1["repetition_penalty"] == 1.05 and "no_repeat_ngram_size" not in d1
    assert d2["repetition_penalty"] == 1.05 and d2["no_repeat_ngram_size"] == 3
    assert r1.rows[0]["verdict"] == "unscored"


def test_eval_scores_per_item_and_registers_the_suite(tiny, tmp_path, write_jsonl):
    db = tmp_path / "s.duckdb"
    test_file = write_jsonl(
        tmp_path / "gsm8k_test.jsonl",
        [
            {"question": "Tom has 3 apples and buys 4 more. How many apples?", "answer": "3 + 4 = 7\n#### 7"},
            {
                "question": "A box holds 6 eggs. How many eggs are in 2 boxes?",
                "answer": "2 * 6 = 12\n#### 12",
            },
        ],
    )
    runner = CliRunner()
    args = [
        "--db",
        str(db),
        "eval",
        "--model",
        str(tiny),
        "--suite",
        "gsm8k",
        "--path",
        test_file,
        "--name",
        "tiny",
    ]
    res = runner.invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "tiny on gsm8k: 2 items" in res.output
    assert runner.invoke(cli, args).exit_code == 0  # a rerun replaces its rows
    with open_store(db, read_only=True) as store:
        evals = store.rows("SELECT * FROM evals ORDER BY item_id")
        items = store.rows("SELECT kind, gold FROM eval_items WHERE suite = 'gsm8k' ORDER BY gold")
        refs = store.scalar("SELECT count(*) FROM benchmark_refs WHERE benchmark = 'eval:gsm8k'")
        gens = store.scalar(
            "SELECT count(*) FROM generations WHERE item_kind = 'eval_item' AND suite = 'gsm8k'"
        )
    assert len(evals) == 2 and refs == 2 and gens == 2
    assert items == [{"kind": "gsm8k", "gold": "12"}, {"kind": "gsm8k", "gold": "7"}]
    with open_store(db, read_only=True) as store:
        verdicts = {r["gen_id"]: r["verdict"] for r in store.rows("SELECT gen_id, verdict FROM generations")}
    for e in evals:
        # an eval item is scored correct exactly where the stored verdict is correct (unknown is not)
        assert (verdicts[e["gen_id"]] == "correct") == bool(e["correct"])
        assert verdicts[e["gen_id"]] in ("correct", "wrong", "unknown")
        assert e["origin"] == "pairstore" and e["model"] == "tiny" and e["gen_id"]
        assert e["score"] == float(e["correct"]) and e["output_len"] >= 0
        assert e["loop_flagged"] is not None and e["empty"] is not None and e["prompt_hash"]

    # A suite already in the store evaluates without --path; an unknown one is exit 2.
    res = runner.invoke(
        cli, ["--db", str(db), "eval", "--model", str(tiny), "--suite", "gsm8k", "--name", "other"]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--db", str(db), "eval", "--model", str(tiny), "--suite", "nope"])
    assert res.exit_code == 2 and "no eval suite named 'nope'" in res.output


def test_sample_cli_on_store_problems(tiny, tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        store.con.execute(
            "INSERT INTO problems (problem_id, dataset, split, question, solution, gold, match_key) "
            "VALUES ('gsm8k:1', 'gsm8k', 'train', 'What is 1 + 1?', '1 + 1 = 2\n#### 2', '2', 'k')"
        )
    res = CliRunner().invoke(
        cli,
        [
            "--db",
            str(db),
            "train",
            "sample",
            "--model",
            str(tiny),
            "--items",
            "gsm8k",
            "--max-new-tokens",
            "4",
            "--name",
            "tiny",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "tiny: 1 generations for 1 items (1 new)" in res.output and "verdicts:" in res.output
    res = CliRunner().invoke(
        cli, ["--db", str(db), "train", "sample", "--model", str(tiny), "--items", "math"]
    )
    assert res.exit_code == 2 and "no math problems" in res.output
    res = CliRunner().invoke(
        cli, ["--db", str(db), "train", "sample", "--model", str(tiny), "--items", "gsm8k", "--samples", "3"]
    )
    assert res.exit_code == 2 and "greedy decoding gives one answer" in res.output


# ---------------------------------------------------------------------------- launchers


def test_emit_sbatch_for_four_gpus(tiny, tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        add_round(store, tmp_path, train={"global_batch": 32, "per_device_batch": 1, "max_steps": 250})
    script = tmp_path / "r1.sbatch"
    res = train_dpo_cli(db, tiny, tmp_path / "lora", "--emit-sbatch", str(script))
    assert res.exit_code == 0, res.output
    text = script.read_text()
    assert text.startswith("#!/bin/bash\n")
    for line in ("#SBATCH --nodes=1", "#SBATCH --gres=gpu:4", "#SBATCH --requeue"):
        assert line in text.splitlines()
    assert "4 GPUs x batch 1 per GPU x gradient accumulation 8 = global batch 32" in text
    launch = [ln for ln in text.splitlines() if "accelerate.commands.launch" in ln]
    assert len(launch) == 1
    assert "--config_file " + str(Path("train/configs/zero3.yaml").resolve()) in launch[0]
    assert (
        "--num_processes 4 -m train.dpo --job " + str(tmp_path / "lora" / "pairstore_job.json") in launch[0]
    )
    assert f"--db {db}" in launch[0]
    job = json.loads((tmp_path / "lora" / "pairstore_job.json").read_text())
    hp = job["hyperparameters"]
    assert (hp["world_size"], hp["per_device_batch"], hp["gradient_accumulation_steps"]) == (4, 1, 8)
    assert job["options"]["resume"] is True and job["mixture"]["sha256"] == sha256_file(
        tmp_path / f"{ROUND}.parquet"
    )


@pytest.mark.parametrize(
    ("gpu", "launcher_cpu", "on_gpu"),
    [
        (True, None, True),
        (True, "True", False),  # what `accelerate launch` sets for a config with use_cpu
        (True, "false", True),
        (False, None, False),
        (False, "1", False),
    ],
)
def test_a_launcher_that_puts_training_on_the_cpu_is_obeyed_on_a_gpu_machine(
    monkeypatch, gpu, launcher_cpu, on_gpu
):
    # On a GPU machine, `--accelerate-config cpu` kept the model on the CPU while the job chose the GPU's
    # device and precision: the first forward pass failed with tensors on two devices.
    from train.dpo import trains_on_gpu

    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    if launcher_cpu is None:
        monkeypatch.delenv("ACCELERATE_USE_CPU", raising=False)
    else:
        monkeypatch.setenv("ACCELERATE_USE_CPU", launcher_cpu)
    assert trains_on_gpu() is on_gpu


@pytest.mark.slow
def test_accelerate_launch_with_one_cpu_process(tiny, tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        add_round(store, tmp_path)
    res = train_dpo_cli(
        db,
        tiny,
        tmp_path / "lora",
        "--launcher",
        "accelerate",
        "--accelerate-config",
        "cpu",
        "--max-steps",
        "2",
    )
    assert res.exit_code == 0, res.output
    assert "trained r1-lora: 2 steps" in res.output
    evidence = json.loads((tmp_path / "lora" / "training_evidence.json").read_text())
    assert evidence["final_metrics"]["global_step"] == 2
    assert (tmp_path / "lora" / "adapter_model.safetensors").is_file()
    with open_store(db, read_only=True) as store:
        assert store.scalar("SELECT kind FROM checkpoints WHERE name = 'r1-lora'") == "adapter"


def test_accelerate_command_line(tmp_path):
    from train.launch import accelerate_command

    cmd = accelerate_command(tmp_path / "job.json", num_processes=1, config="cpu")
    assert cmd[1:3] == ["-m", "accelerate.commands.launch"] and "--cpu" in cmd
    assert cmd[-4:] == ["-m", "train.dpo", "--job", str((tmp_path / "job.json").resolve())]
    with pytest.raises(BadInput, match="cpu config runs one process"):
        accelerate_command(tmp_path / "job.json", num_processes=2, config="cpu")
    fsdp = accelerate_command(tmp_path / "job.json", num_processes=4, config="fsdp")
    assert fsdp[fsdp.index("--config_file") + 1].endswith("train/configs/fsdp.yaml")


def test_safetensors_written_by_the_library_load_in_the_writer_order(tiny, tmp_path):
    # A bundle written by safetensors itself (not by transformers) is served too.
    from train.serving import load_model

    bundle = _copy(tiny, tmp_path)
    weights = load_file(str(bundle / "model.safetensors"))
    save_file(weights, str(bundle / "model.safetensors"), metadata={"format": "pt"})
    model = load_model(bundle, dtype=torch.float32)
    assert torch.equal(model.state_dict()["lm_head.weight"], weights["lm_head.weight"])
