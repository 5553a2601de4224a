"""A tiny random Llama-style bundle, built offline in about a second, laid out like a served bundle.

Tests and the demo train, merge, soup and sample with it: two layers, hidden size 64, a byte-level BPE
tokenizer trained on a small built-in corpus, and the serving files of the model card ("How to use"):
chat_template.jinja, system_prompt.txt, generation_config.json, serving_config.json; the tokenizer and model
configs in the spellings transformers 4.x and 5.x both read (train.portable).

    python -c "from train.tiny import make_tiny_bundle; print(make_tiny_bundle('runs/tiny-base'))"
"""

from __future__ import annotations

import json
from pathlib import Path

from pairstore.files import publish_folder, recover_folder, staged_folder
from train.bundle import make_portable

# Special tokens, in id order: ids 0..5 are fixed so the generation config can name them.
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>"]
BOS, EOS, PAD, IM_END = "<s>", "</s>", "<pad>", "<|im_end|>"

# A ChatML-style template: system/user/assistant turns, each closed by <|im_end|> (the end-of-turn token
# the model emits, first in generation_config's eos_token_id); `enable_thinking` opens a think block.
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and enable_thinking -%}{{- '<think>\\n' -}}{%- endif -%}"
    "{%- endif -%}"
)

SYSTEM_PROMPT = "You are a careful assistant. End every answer with a line 'Final answer: X'."

# Enough text for the BPE to learn merges for digits, arithmetic words and the answer line.
_CORPUS = [
    "What is 12 + 30? Let me add the numbers step by step.",
    "12 + 30 = 42\nFinal answer: 42",
    "How many letters r are in the word strawberry? Count them one at a time.",
    "The word strawberry has 3 letters r.\nFinal answer: 3",
    "Divide 144 by 12 using long division. 144 / 12 = 12\nFinal answer: 12",
    "The sum of the digits of 9876 is 9 + 8 + 7 + 6 = 30.\nFinal answer: 30",
    "Remove every letter e from the word excellence: xcllnc\nFinal answer: xcllnc",
    "Compute 7 * 8 - 6 = 50. The answer is 50. #### 50 \\boxed{50}",
    "You are a careful assistant. Please answer the question and explain your reasoning.",
    "system user assistant question answer number word letter count sum product difference",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 100 1000",
    "the of and to a in is it that for on with as was at by an be this are or",
]


def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=384,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=IM_END,
        pad_token=PAD,
        unk_token="<unk>",
        chat_template=CHAT_TEMPLATE,
    )


def make_tiny_bundle(out_dir, seed: int = 0, *, max_new_tokens: int = 24) -> Path:
    """Write a tiny random Llama bundle to `out_dir` (created) and return its path.

    Same seed, same weights. `max_new_tokens` goes to generation_config.json and serving_config.json
    (small, so sampling in tests is quick). Written whole beside `out_dir` and published by one rename
    (pairstore.files.publish_folder), replacing a bundle already there."""
    out = Path(out_dir)
    recover_folder(out)
    with staged_folder(out) as stage:
        _write_tiny_bundle(stage, seed, max_new_tokens)
        publish_folder(stage, out, replace=True)  # a tiny base is always rebuilt from its seed
    return out


def _write_tiny_bundle(out: Path, seed: int, max_new_tokens: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    eos_ids = [ids[IM_END], ids[EOS]]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        bos_token_id=ids[BOS],
        eos_token_id=eos_ids,
        pad_token_id=ids[PAD],
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config).to(torch.float32)  # type: ignore[arg-type]  # transformers' stub of .to
    finally:
        torch.random.set_rng_state(generator_state)
    model.generation_config.update(
        bos_token_id=ids[BOS],
        eos_token_id=eos_ids,
        pad_token_id=ids[PAD],
        max_new_tokens=max_new_tokens,
        do_sample=False,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    (out / "system_prompt.txt").write_text(SYSTEM_PROMPT + "\n", encoding="utf-8")
    serving = {
        "max_input_tokens": 448,
        "add_generation_prompt": True,
        "enable_thinking": False,
        "max_new_tokens": max_new_tokens,
    }
    (out / "serving_config.json").write_text(json.dumps(serving, indent=2) + "\n", encoding="utf-8")
    make_portable(out)  # transformers 4.x (vLLM's) reads it too
