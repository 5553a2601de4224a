"""Bundles load in transformers 4.x and 5.x alike: the fields every bundle pairstore writes carries.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/train/test_bundle_compat.py -q

transformers 5 saves `"tokenizer_class": "TokenizersBackend"`, `dtype` and `rope_parameters`; 4.x (vLLM's)
knows `PreTrainedTokenizerFast`, `torch_dtype`, `rope_theta` and `rope_scaling`. The loading itself, in a
real 4.x, is bench/compat/run.py's job (bench/RESULTS.md); these tests check the written fields.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from train.bundle import copy_serving_files, make_portable
from train.portable import portable_model_config, portable_tokenizer_config
from train.tiny import CHAT_TEMPLATE

pytestmark = pytest.mark.usefixtures("one_torch_thread")
V4_AND_V5 = ("torch_dtype", "dtype", "rope_theta", "rope_scaling", "rope_parameters")


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def assert_portable(bundle: Path) -> None:
    tok = read(bundle / "tokenizer_config.json")
    assert tok["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert tok["model_input_names"] == ["input_ids", "attention_mask"]  # 4.x would add token_type_ids
    assert tok["chat_template"] == (bundle / "chat_template.jinja").read_text(encoding="utf-8")
    cfg = read(bundle / "config.json")
    assert all(k in cfg for k in V4_AND_V5), sorted(cfg)
    assert cfg["torch_dtype"] == cfg["dtype"]
    assert cfg["rope_theta"] == cfg["rope_parameters"]["rope_theta"]
    assert cfg["rope_scaling"] is None and cfg["rope_parameters"]["rope_type"] == "default"


@pytest.fixture(scope="module")
def merged_and_souped(tiny, tmp_path_factory):
    from peft import LoraConfig, get_peft_model

    from train.merge import merge_adapter
    from train.serving import load_model
    from train.soup import soup

    work = tmp_path_factory.mktemp("compat")
    torch.manual_seed(1)
    lora = get_peft_model(
        load_model(tiny, dtype=torch.float32),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    lora.save_pretrained(str(work / "adapter"))
    merged = merge_adapter(tiny, work / "adapter", work / "merge").out_dir
    soup(tiny, merged, 0.5, work / "soup")
    return merged, work / "soup"


def test_the_tiny_base_carries_both_spellings(tiny):
    assert_portable(tiny)
    assert read(tiny / "tokenizer_config.json")["chat_template"] == CHAT_TEMPLATE


def test_merged_and_souped_bundles_carry_both_spellings(merged_and_souped):
    for bundle in merged_and_souped:
        assert_portable(bundle)


def test_transformers_5_reads_the_portable_bundle_as_its_own(tiny):
    from transformers import AutoConfig, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny))
    assert tok.eos_token == "<|im_end|>" and tok.chat_template == CHAT_TEMPLATE
    cfg = AutoConfig.from_pretrained(str(tiny))
    assert cfg.rope_parameters["rope_theta"] == 10000.0 and cfg.dtype == torch.float32


def test_a_transformers_5_only_bundle_is_fixed_on_copy_and_left_alone_when_already_portable(tiny, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("tokenizer.json", "chat_template.jinja", "generation_config.json"):
        (raw / name).write_bytes((tiny / name).read_bytes())
    (raw / "tokenizer_config.json").write_text(
        json.dumps(
            {"backend": "tokenizers", "eos_token": "<|im_end|>", "tokenizer_class": "TokenizersBackend"}
        )
    )
    (raw / "config.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "dtype": "bfloat16",
                "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0},
            }
        )
    )
    copy_serving_files(raw, tmp_path / "out")
    cfg = read(tmp_path / "out" / "config.json")
    assert (cfg["torch_dtype"], cfg["rope_theta"], cfg["rope_scaling"]) == (
        "bfloat16",
        500000.0,
        {"rope_type": "llama3", "factor": 8.0},
    )
    assert read(tmp_path / "out" / "tokenizer_config.json")["tokenizer_class"] == "PreTrainedTokenizerFast"
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert make_portable(tmp_path / "out") == []
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_a_transformers_4_config_gains_the_5_spellings():
    v4 = {
        "model_type": "llama",
        "torch_dtype": "float16",
        "rope_theta": 1e6,
        "rope_scaling": {"type": "linear", "factor": 2.0},
    }
    got = portable_model_config(v4)
    assert got["dtype"] == "float16"
    assert got["rope_parameters"] == {"rope_theta": 1e6, "rope_type": "linear", "factor": 2.0}
    assert portable_model_config({"rope_theta": 1e4})["rope_parameters"] == {
        "rope_theta": 1e4,
        "rope_type": "default",
    }


def test_what_has_no_two_spellings_is_left_as_it_is():
    per_layer = {
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        }
    }
    assert portable_model_config(per_layer) == per_layer
    nested = portable_model_config({"model_type": "x", "text_config": {"dtype": "bfloat16"}})
    assert nested["text_config"] == {"dtype": "bfloat16", "torch_dtype": "bfloat16"}
    llama = {"tokenizer_class": "LlamaTokenizer", "chat_template": "{{ x }}"}
    assert portable_tokenizer_config(llama) == llama
    # chat_template.jinja is the template a bundle is served with: tokenizer_config.json follows it
    assert portable_tokenizer_config(llama, "{{ y }}")["chat_template"] == "{{ y }}"


# ---------------------------------------------------------------------------- a user's own chain


def save_like_transformers(out: Path, *, seed: int = 3) -> Path:
    """A base saved by transformers alone (model and tokenizer `save_pretrained`), the way a Hub model is:
    no file pairstore wrote, no portable fields, the chat template only where transformers 5 puts it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from train.tiny import tiny_tokenizer

    tok = tiny_tokenizer()
    ids = tok.convert_tokens_to_ids
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        bos_token_id=ids("<s>"),
        eos_token_id=ids("<|im_end|>"),
        pad_token_id=ids("<pad>"),
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


def hub_snapshot(bundle: Path, cache: Path) -> Path:
    """The bundle laid out as the Hub cache lays a download out: snapshots/REV/NAME links to blobs/SHA."""
    from pairstore.keys import sha256_file

    repo = cache / "models--someone--tiny-base"
    snap = repo / "snapshots" / ("ab" * 20)
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    for f in sorted(bundle.iterdir()):
        blob = repo / "blobs" / sha256_file(f)
        blob.write_bytes(f.read_bytes())
        (snap / f.name).symlink_to(Path("../../blobs") / blob.name)
    return snap


@pytest.mark.slow
def test_a_chain_from_a_transformers_saved_base_trains_merges_soups_and_loads(
    tmp_path, run_cli, db_path, fill_pairs, dpo_recipe
):
    """The documented step from a checkpoint transformers saved: train dpo -> train merge -> train soup
    BASE MERGED --alpha 0.5 runs with no manual step, lineage connects base -> round -> merge -> soup by
    one name per checkpoint, and the soup loads in transformers and is a + 0.5 (b - a)."""
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pairstore.store.store import open_store

    base = save_like_transformers(tmp_path / "tiny-base")
    assert not (base / "training_evidence.json").exists()
    with open_store(db_path) as store:
        fill_pairs(store)
    (tmp_path / "tinybase.toml").write_text('name = "tinybase"\nkind = "base"\n')
    # One step that moves the weights: no warm-up step at lr 0, and an lr a float32 weight feels.
    recipe = (
        dpo_recipe("m1", system='system_prompt = "You are Brook."')
        .replace('parent = "base"', 'parent = "tinybase"')
        .replace("warmup_ratio = 0.1", "warmup_ratio = 0.0")
        .replace("learning_rate = 1e-6", "learning_rate = 1e-2")
    )
    (tmp_path / "m1.toml").write_text(recipe)
    assert run_cli("round", "add", tmp_path / "tinybase.toml", tmp_path / "m1.toml").exit_code == 0
    assert run_cli("export", "--round", "m1", "--out", tmp_path / "mix").exit_code == 0
    r = run_cli(
        "train", "dpo", "--round", "m1", "--base", base, "--out", tmp_path / "m1-lora", "--max-steps", 1
    )
    assert r.exit_code == 0, r.output
    r = run_cli("train", "merge", "--base", base, "--adapter", tmp_path / "m1-lora", "--out", tmp_path / "m1")
    assert r.exit_code == 0 and "registered checkpoint m1" in r.output, r.output
    r = run_cli("train", "soup", base, tmp_path / "m1", "--alpha", "0.5", "--out", tmp_path / "sm1")
    assert r.exit_code == 0, r.output
    assert "registered checkpoint sm1 (soup of tinybase and m1)" in r.output

    with open_store(db_path, read_only=True) as store:
        ck = {
            n: (k, list(p), path)
            for n, k, p, path in store.con.execute(
                "SELECT name, kind, parents, path FROM checkpoints"
            ).fetchall()
        }
    assert ck["tinybase"] == ("base", [], str(base.resolve()))
    assert ck["m1-lora"][:2] == ("adapter", ["tinybase"])
    assert ck["m1"][:2] == ("merge", ["tinybase", "m1"])
    assert ck["sm1"][:2] == ("soup", ["tinybase", "m1"])
    r = run_cli("lineage", "sm1", "--json")
    assert r.exit_code == 0, r.output
    stages = json.loads(r.output)
    assert [s["name"] for s in stages] == ["tinybase", "m1", "sm1"]
    assert stages[1]["run"]["final_metrics"]["global_step"] == 1
    # The report of the user's own chain names the real base and says what ran, from the evidence.
    r = run_cli("audit", "report", "--model", "sm1", "--out", tmp_path / "report")
    assert r.exit_code == 0, r.output
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    lineage = md.split("## Lineage", 1)[1].split("\n## ", 1)[0]
    evidence = json.loads((tmp_path / "m1-lora" / "training_evidence.json").read_text())
    assert f"| tinybase | base | base bundle tiny-base ({base.resolve()}) |" in lineage
    assert (
        "| m1 | dpo | ran: DPO+NLL LoRA from tinybase: 1 step, lr 0.01, LoRA rank 8, global batch 8, "
        in lineage
    )
    assert evidence["mixture_sha256"][:12] in lineage and f"{evidence['rows']} rows" in lineage
    assert "| sm1 | soup | souped here: tinybase + 0.5*(m1 - tinybase) |" in lineage

    a, b = load_file(str(base / "model.safetensors")), load_file(str(tmp_path / "m1" / "model.safetensors"))
    souped = load_file(str(tmp_path / "sm1" / "model.safetensors"))
    changed = [k for k in a if not torch.equal(a[k], b[k])]
    assert changed  # one step of training moved the LoRA targets
    for k in a:
        assert torch.allclose(souped[k], a[k] + 0.5 * (b[k] - a[k]), atol=1e-6), k
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "sm1"))
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "sm1"))
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "2 + 2?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    out = model.generate(**ids, max_new_tokens=3, do_sample=False)
    assert out.shape[1] == ids["input_ids"].shape[1] + 3 or int(out[0, -1]) == tok.eos_token_id

    # The same chain from the base as a Hub snapshot (files are links into blobs/).
    snap = hub_snapshot(base, tmp_path / "hub")
    r = run_cli(
        "train",
        "soup",
        snap,
        tmp_path / "m1",
        "--alpha",
        "0.5",
        "--out",
        tmp_path / "sm1-hub",
        "--a-name",
        "tinybase",
        "--name",
        "sm1-hub",
    )
    assert r.exit_code == 0, r.output
    assert load_file(str(tmp_path / "sm1-hub" / "model.safetensors")).keys() == souped.keys()


def _copy_bundle(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_another_vocabulary_or_template_is_refused_naming_what_differs(tiny, tmp_path, run_cli, db_path):
    other_template = _copy_bundle(tiny, tmp_path / "other-template")
    (other_template / "chat_template.jinja").write_text("{{ messages[0]['content'] }}", encoding="utf-8")
    r = run_cli(
        "train", "soup", tiny, other_template, "--alpha", "0.5", "--out", tmp_path / "s1", "--no-register"
    )
    assert r.exit_code == 2 and "chat template" in r.output, r.output
    assert not (tmp_path / "s1").exists()

    other_vocab = _copy_bundle(tiny, tmp_path / "other-vocab")
    tj = read(other_vocab / "tokenizer.json")
    first, second = list(tj["model"]["vocab"])[-2:]
    tj["model"]["vocab"][first], tj["model"]["vocab"][second] = (
        tj["model"]["vocab"][second],
        tj["model"]["vocab"][first],
    )
    (other_vocab / "tokenizer.json").write_text(json.dumps(tj), encoding="utf-8")
    r = run_cli(
        "train", "soup", tiny, other_vocab, "--alpha", "0.5", "--out", tmp_path / "s2", "--no-register"
    )
    assert r.exit_code == 2 and "tokenizer.json model" in r.output, r.output

    other_eos = _copy_bundle(tiny, tmp_path / "other-eos")
    tc = read(other_eos / "tokenizer_config.json")
    tc["eos_token"] = "</s>"
    (other_eos / "tokenizer_config.json").write_text(json.dumps(tc), encoding="utf-8")
    r = run_cli("train", "soup", tiny, other_eos, "--alpha", "0.5", "--out", tmp_path / "s3", "--no-register")
    assert r.exit_code == 2 and "special token eos_token" in r.output, r.output

    # With a store: refused before anything is written, and no input folder registered either.
    from pairstore.store.store import open_store

    open_store(db_path).close()
    r = run_cli("train", "soup", tiny, other_eos, "--alpha", "0.5", "--out", tmp_path / "s4")
    assert r.exit_code == 2, r.output
    with open_store(db_path, read_only=True) as store:
        assert store.scalar("SELECT count(*) FROM checkpoints") == 0
