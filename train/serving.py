"""How a bundle is served, read from its own files, and checked for consistency before anything runs.

The model card's "How to use": the tokenizer, chat_template.jinja, system_prompt.txt, generation_config.json
(eos_token_id list, pad, bos, max_new_tokens) and serving_config.json (max_input_tokens,
add_generation_prompt true, enable_thinking false, max_new_tokens, and optionally a `decoding` object).
Training, sampling and evaluation all render prompts through `Serving.render`, so the model is trained on
exactly the context it answers in. A template that closes assistant turns with a token that is not one of
the generation EOS ids, an EOS or pad id outside the vocabulary, or a pad that disagrees with the
tokenizer is an error here, before a GPU-hour is spent.

    from train.serving import load_serving
    s = load_serving("runs/so7a")
    text = s.render(s.with_system([{"role": "user", "content": "2+2?"}]))
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairstore.errors import BadInput
from train.bundle import check_bundle, read_json_file

# A marker no real answer contains: what follows it in a rendered assistant turn is the turn's end.
_PROBE = "\u2063PAIRSTORE-PROBE\u2063"
DECODING_KEYS = ("repetition_penalty", "no_repeat_ngram_size")


@dataclass
class Serving:
    path: Path
    tokenizer: Any  # a transformers tokenizer (any class: the bundle's config names it)
    system_prompt: str | None
    eos_ids: list[int]
    end_of_turn_id: int  # the EOS id the template closes assistant turns with (what training appends)
    pad_id: int | None
    bos_id: int | None
    max_new_tokens: int
    max_input_tokens: int | None
    enable_thinking: bool
    decoding: dict = field(default_factory=dict)

    @property
    def end_of_turn(self) -> str:
        return self.tokenizer.convert_ids_to_tokens(self.end_of_turn_id)

    def with_system(self, messages: list[dict]) -> list[dict]:
        """The messages as served: the bundle's system prompt first unless the prompt brings its own."""
        if self.system_prompt and not any(m["role"] == "system" for m in messages):
            return [{"role": "system", "content": self.system_prompt}] + list(messages)
        return list(messages)

    def render(self, messages: list[dict]) -> str:
        """The prompt text exactly as served: template, generation prompt, thinking off."""
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, enable_thinking=self.enable_thinking
        )

    def encode(self, text: str) -> list[int]:
        """Token ids as the model card tokenizes a rendered prompt (`tok(text)`)."""
        return list(self.tokenizer(text)["input_ids"])


def _read_json(path: Path) -> dict:

    return read_json_file(path)


def _ids(value, path: Path, name: str) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise BadInput(
            f"{name} must be an integer or a list of integers, got {value!r}", path=str(path), field=name
        )
    return values


def load_tokenizer(bundle, *, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(bundle), trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:
        raise BadInput(f"cannot load the tokenizer: {str(e).splitlines()[0]}", path=str(bundle)) from None


def load_serving(bundle, *, trust_remote_code: bool = False, tokenizer=None) -> Serving:
    """Read and cross-check a bundle's serving files. Raises BadInput naming the file and field at fault."""
    bundle = Path(bundle)
    if not bundle.is_dir():
        raise BadInput("bundle folder does not exist", path=str(bundle))
    check_bundle(bundle, trust_remote_code=trust_remote_code)  # before any file of it is parsed by a library
    tok = tokenizer if tokenizer is not None else load_tokenizer(bundle, trust_remote_code=trust_remote_code)
    vocab = len(tok)

    template_file = bundle / "chat_template.jinja"
    if template_file.is_file():
        tok.chat_template = template_file.read_text(encoding="utf-8")
    elif not getattr(tok, "chat_template", None):
        raise BadInput(
            "the bundle has no chat template (chat_template.jinja, or one in the tokenizer)",
            path=str(template_file),
        )

    gen_path = bundle / "generation_config.json"
    gen = _read_json(gen_path)
    if "eos_token_id" not in gen:
        raise BadInput("missing eos_token_id", path=str(gen_path), field="eos_token_id")
    eos_ids = _ids(gen["eos_token_id"], gen_path, "eos_token_id")
    for name, ids in (
        ("eos_token_id", eos_ids),
        ("pad_token_id", gen.get("pad_token_id")),
        ("bos_token_id", gen.get("bos_token_id")),
    ):
        if ids is None:
            continue
        for i in _ids(ids, gen_path, name):
            if not 0 <= i < vocab:
                raise BadInput(
                    f"token id {i} is outside the tokenizer's vocabulary of {vocab}",
                    path=str(gen_path),
                    field=name,
                )
    pad_id, bos_id = gen.get("pad_token_id"), gen.get("bos_token_id")
    if pad_id is not None and tok.pad_token_id is not None and pad_id != tok.pad_token_id:
        raise BadInput(
            f"pad_token_id {pad_id} disagrees with the tokenizer's pad token "
            f"{tok.pad_token!r} (id {tok.pad_token_id})",
            path=str(gen_path),
            field="pad_token_id",
        )
    if bos_id is not None and tok.bos_token_id is not None and bos_id != tok.bos_token_id:
        raise BadInput(
            f"bos_token_id {bos_id} disagrees with the tokenizer's bos token "
            f"{tok.bos_token!r} (id {tok.bos_token_id})",
            path=str(gen_path),
            field="bos_token_id",
        )
    config_path = bundle / "config.json"
    if config_path.is_file():
        model_vocab = _read_json(config_path).get("vocab_size")
        if isinstance(model_vocab, int) and model_vocab < vocab:
            raise BadInput(
                f"the model's vocab_size {model_vocab} is smaller than the tokenizer's {vocab}",
                path=str(config_path),
                field="vocab_size",
            )

    serving_path = bundle / "serving_config.json"
    serving = _read_json(serving_path) if serving_path.is_file() else {}
    if serving.get("add_generation_prompt", True) is not True:
        raise BadInput(
            "add_generation_prompt must be true: the bundle answers after a generation prompt",
            path=str(serving_path),
            field="add_generation_prompt",
        )
    enable_thinking = serving.get("enable_thinking", False)
    if not isinstance(enable_thinking, bool):
        raise BadInput("expected true or false", path=str(serving_path), field="enable_thinking")
    max_new = serving.get("max_new_tokens", gen.get("max_new_tokens", 2048))
    max_input = serving.get("max_input_tokens")
    for name, v in (("max_new_tokens", max_new), ("max_input_tokens", max_input)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise BadInput(f"expected a positive integer, got {v!r}", path=str(serving_path), field=name)
    decoding = serving.get("decoding") or {}
    if not isinstance(decoding, dict) or any(k not in DECODING_KEYS for k in decoding):
        raise BadInput(
            f"decoding must be an object with keys among {', '.join(DECODING_KEYS)}",
            path=str(serving_path),
            field="decoding",
        )

    system_file = bundle / "system_prompt.txt"
    system_prompt = system_file.read_text(encoding="utf-8").strip() if system_file.is_file() else None

    # The template must close an assistant turn with one of the generation EOS ids: that token is what the
    # served model stops on, so it is what training appends to every chosen and rejected answer.
    try:
        rendered = tok.apply_chat_template(
            [{"role": "user", "content": "ping"}, {"role": "assistant", "content": _PROBE}],
            tokenize=False,
            enable_thinking=enable_thinking,
        )
        tok.apply_chat_template(
            [{"role": "user", "content": "ping"}],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=enable_thinking,
        )
    except Exception as e:  # jinja raises many kinds
        raise BadInput(f"the chat template does not render: {e}", path=str(template_file)) from None
    if _PROBE not in rendered:
        raise BadInput("the chat template drops the assistant's answer", path=str(template_file))
    tail = rendered.split(_PROBE, 1)[1]
    tail_ids = tok(tail, add_special_tokens=False)["input_ids"] if tail else []
    if not tail_ids or tail_ids[0] not in eos_ids:
        closing = tok.convert_ids_to_tokens(tail_ids[0]) if tail_ids else "(nothing)"
        raise BadInput(
            f"the chat template ends an assistant turn with {closing!r}, which is not one of "
            f"generation_config eos_token_id {eos_ids}: the model would be trained to stop on a token "
            "it is not served to stop on",
            path=str(template_file),
        )
    return Serving(
        path=bundle,
        tokenizer=tok,
        system_prompt=system_prompt or None,
        eos_ids=eos_ids,
        end_of_turn_id=tail_ids[0],
        pad_id=pad_id,
        bos_id=bos_id,
        max_new_tokens=max_new,
        max_input_tokens=max_input,
        enable_thinking=enable_thinking,
        decoding=dict(decoding),
    )


def load_model(bundle, *, trust_remote_code: bool = False, dtype=None, device=None):
    """The bundle's weights, from safetensors only (a pickle checkpoint is refused by list_shards)."""
    import torch
    from transformers import AutoModelForCausalLM

    check_bundle(bundle, trust_remote_code=trust_remote_code)  # headers, config, tokenizer, remote code
    if dtype is None:
        dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    model = AutoModelForCausalLM.from_pretrained(
        str(bundle), use_safetensors=True, dtype=dtype, trust_remote_code=trust_remote_code
    )
    if device is not None:
        model.to(device)
    return model


def registered_name(store, bundle) -> str | None:
    """The checkpoint name registered for this bundle folder, if any."""
    if store is None:
        return None
    path = str(Path(bundle).resolve())
    row = store.rows("SELECT name FROM checkpoints WHERE path = ? ORDER BY created_at DESC LIMIT 1", [path])
    return row[0]["name"] if row else None


def bundle_name(store, bundle) -> str:
    """The checkpoint name registered for this bundle folder, else the folder's name."""
    return registered_name(store, bundle) or Path(bundle).resolve().name


def json_dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
