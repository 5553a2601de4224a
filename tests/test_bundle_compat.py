"""Bundles load in transformers 4.x and 5.x alike: the fields every bundle pairstore writes carries.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/test_bundle_compat.py -q

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
