"""Bundle files that transformers 4.x and 5.x both read: every bundle pairstore writes carries them.

transformers 5 saves names 4.x does not know, and 4.x (which vLLM pins) fails or silently falls back to
defaults on them:

- tokenizer_config.json: `"tokenizer_class": "TokenizersBackend"` (4.x has no such class; both know
  `PreTrainedTokenizerFast`, the same tokenizer.json-backed tokenizer, but 4.x's adds `token_type_ids`
  to every encoding unless `model_input_names` says otherwise, and `generate` refuses them); the chat
  template only in chat_template.jinja (older 4.x reads it from tokenizer_config.json's `chat_template`).
- config.json: `dtype` (4.x: `torch_dtype`) and `rope_parameters` holding rope_theta and the scaling
  (4.x: `rope_theta` and `rope_scaling`; without them 4.x uses its default theta, a different model).

The fix writes both spellings with the same values; a file already carrying both is left byte for byte.

    from train.bundle import make_portable
    make_portable("runs/m11a")    # train.tiny, train.bundle.copy_serving_files (merge, soup)
                                  # and train.dpo call it
"""

from __future__ import annotations

# transformers 5 class names of tokenizers saved from a tokenizer.json, and the name both majors load.
V5_ONLY_TOKENIZER_CLASSES = {"TokenizersBackend": "PreTrainedTokenizerFast"}
# What such a tokenizer returns in transformers 5, written out so 4.x returns the same.
V5_MODEL_INPUT_NAMES = ["input_ids", "attention_mask"]


def portable_tokenizer_config(config: dict, chat_template: str | None = None) -> dict:
    """tokenizer_config.json with a tokenizer class both majors know and the bundle's chat template
    (chat_template.jinja, the one pairstore serves) inside it."""
    out = dict(config)
    cls = out.get("tokenizer_class")
    if cls in V5_ONLY_TOKENIZER_CLASSES:
        out["tokenizer_class"] = V5_ONLY_TOKENIZER_CLASSES[cls]
        out.setdefault("model_input_names", V5_MODEL_INPUT_NAMES)
    if chat_template is not None:
        out["chat_template"] = chat_template
    return out


def _rope_both_ways(out: dict) -> None:
    params = out.get("rope_parameters")
    # A per-layer-type dict ({"full_attention": {...}, ...}) has no 4.x spelling: left as it is.
    if isinstance(params, dict) and "rope_theta" in params:
        out.setdefault("rope_theta", params["rope_theta"])
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
        out.setdefault("rope_scaling", None if scaling.get("rope_type", "default") == "default" else scaling)
    elif params is None and "rope_theta" in out:
        scaling = out.get("rope_scaling") or {"rope_type": "default"}
        if "type" in scaling and "rope_type" not in scaling:
            scaling = {"rope_type": scaling["type"], **{k: v for k, v in scaling.items() if k != "type"}}
        out["rope_parameters"] = {"rope_theta": out["rope_theta"], **scaling}


def portable_model_config(config: dict) -> dict:
    """config.json with the dtype and RoPE settings in both majors' spellings."""
    out = dict(config)
    if "dtype" in out or "torch_dtype" in out:
        dtype = out.get("dtype", out.get("torch_dtype"))
        out.setdefault("dtype", dtype)
        out.setdefault("torch_dtype", dtype)
    _rope_both_ways(out)
    text = out.get("text_config")
    if isinstance(text, dict):  # multimodal configs keep the language model's settings here
        out["text_config"] = portable_model_config(text)
    return out
