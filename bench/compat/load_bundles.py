"""Load bundles the way a serving stack does and generate a few tokens; prints one JSON object per bundle.

Runs under any transformers (the scratch venv's 4.x, or the project's 5.x) with nothing of pairstore
installed: bench/compat/run.py starts it in both and compares.

    python bench/compat/load_bundles.py BUNDLE [BUNDLE ...]
"""

from __future__ import annotations

import json
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 12 + 30?"}]
NEW_TOKENS = 6


def load(bundle: str) -> dict:
    out = {"bundle": bundle, "transformers": transformers.__version__}
    try:
        tok = AutoTokenizer.from_pretrained(bundle)
        out["tokenizer"] = type(tok).__name__
        text = tok.apply_chat_template(
            MESSAGES, tokenize=False, add_generation_prompt=True, enable_thinking=False
        )
        out["chat_template"] = text.endswith("<|im_start|>assistant\n")
        config = AutoConfig.from_pretrained(bundle)
        out["rope_theta"] = getattr(config, "rope_theta", None) or (
            getattr(config, "rope_parameters", None) or {}
        ).get("rope_theta")
        gen = GenerationConfig.from_pretrained(bundle)
        out["eos_token_id"] = gen.eos_token_id
        model = AutoModelForCausalLM.from_pretrained(bundle, use_safetensors=True, torch_dtype=torch.float32)
        out["model"] = type(model).__name__
        ids = tok(text, add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            got = model.generate(**ids, generation_config=gen, max_new_tokens=NEW_TOKENS, do_sample=False)
        out["generated"] = got[0, ids["input_ids"].shape[1] :].tolist()
    except Exception as e:  # the point is to report what a serving stack would hit
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    for bundle in sys.argv[1:]:
        print(json.dumps(load(bundle)), flush=True)
