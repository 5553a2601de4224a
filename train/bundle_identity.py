"""Whether two bundles are the same model family by what they do, not by the bytes of their files.

Merge, soup and every check that two bundles must match compare:

- the tokenizer, from the parsed `tokenizer.json`: the model (type, vocabulary, merges in either spelling,
  unknown token, byte fallback ...), the added tokens with their ids and flags, the normalizer, the
  pre-tokenizer, the post-processor and the decoder, each hashed from canonical JSON (sorted keys, no
  whitespace), so a file re-saved by another transformers or tokenizers version with the same content
  hashes the same. Truncation and padding are left out: transformers sets both per call.
  Without a tokenizer.json, the slow tokenizer's files (tokenizer.model, vocab.json, merges.txt,
  vocab.txt) are hashed by content; a bundle with neither cannot be compared and is refused;
- the special token map (bos, eos, unk, pad, sep, cls, mask and the additional special tokens, from
  special_tokens_map.json and tokenizer_config.json, a token given as a string or as an AddedToken dict
  alike), and the encoding flags tokenizer_config.json may set (add_bos_token ...) where both bundles
  set them (a flag one bundle leaves out takes its class default, which this module cannot know);
- the chat template text, read where transformers reads it: chat_template.jinja first, then
  chat_template.json, then tokenizer_config.json's `chat_template` (a string, or a list of named
  templates), plus any named templates under additional_chat_templates/;
- the model config by value, with the transformers 4.x and 5.x spellings made one (train.portable), and
  the fields that do not change the function (names, versions, dtype, cache and output switches) left
  out.

    from train.bundle_identity import require_same_model_family
    require_same_model_family(base_dir, merged_dir, what="a soup")   # BadInput naming what differs
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from pairstore.errors import BadInput
from train.portable import portable_model_config

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
# Slow-tokenizer files: hashed by content where a bundle has no tokenizer.json.
SLOW_TOKENIZER_FILES = ("tokenizer.model", "vocab.json", "merges.txt", "vocab.txt", "added_tokens.json")
# The parts of tokenizer.json that decide how text becomes ids and back.
TOKENIZER_PARTS = ("model", "added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder")
SPECIAL_TOKEN_KEYS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "pad_token",
    "sep_token",
    "cls_token",
    "mask_token",
)
# tokenizer_config.json switches that change the ids a text encodes to.
ENCODING_FLAGS = (
    "add_bos_token",
    "add_eos_token",
    "add_prefix_space",
    "do_lower_case",
    "legacy",
    "strip_accents",
    "tokenize_chinese_chars",
    "split_special_tokens",
)
# config.json fields that say nothing about the function the weights compute.
CONFIG_IGNORED = frozenset(
    {
        "_name_or_path",
        "transformers_version",
        "dtype",
        "torch_dtype",
        "use_cache",
        "_attn_implementation",
        "_attn_implementation_autoset",
        "attn_implementation",
        "output_attentions",
        "output_hidden_states",
        "return_dict",
        "torchscript",
        "pruned_heads",
        "chunk_size_feed_forward",
        "tf_legacy_loss",
        "use_bfloat16",
        "architectures",  # the class a loader picks; model_type and the shapes decide the function
        "auto_map",
    }
)


def canonical_sha256(value) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    ).hexdigest()


@dataclass(frozen=True)
class TokenizerIdentity:
    """What a bundle's tokenizer does, part by part (each a SHA-256 or a plain value)."""

    parts: dict[str, str]  # "tokenizer.json model" -> SHA-256 ..., or a slow file name -> SHA-256
    special_tokens: dict[str, object]  # bos_token -> "<s>", additional_special_tokens -> [...]
    flags: dict[str, object]  # encoding flags the bundle sets
    chat_templates: dict[str, str | None] = field(default_factory=dict)  # "default" and named templates

    @property
    def sha256(self) -> str:
        """One hash of everything above but the flags (which compare only where both bundles set them)."""
        return canonical_sha256(
            {"parts": self.parts, "special": self.special_tokens, "templates": self.chat_templates}
        )


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"not readable JSON: {e}", path=str(path)) from None


def _normal_merges(model: dict) -> dict:
    """BPE merges as [left, right] pairs: tokenizers < 0.20 wrote "left right" strings, later ones lists."""
    merges = model.get("merges")
    if not isinstance(merges, list):
        return model
    pairs = [m.split(" ", 1) if isinstance(m, str) else list(m) for m in merges]
    return {**model, "merges": pairs}


def _normal_added(tokens) -> list:
    return sorted(tokens or [], key=lambda t: (t.get("id", -1), t.get("content", "")))


def _token_content(value):
    if isinstance(value, dict):  # {"content": "<s>", "__type": "AddedToken", "lstrip": false, ...}
        return value.get("content")
    if isinstance(value, list):
        return [_token_content(v) for v in value]
    return value


def _special_tokens(bundle: Path, config: dict) -> dict[str, object]:
    merged: dict[str, object] = {}
    sources = []
    if (bundle / SPECIAL_TOKENS_MAP).is_file():
        sources.append(_read_json(bundle / SPECIAL_TOKENS_MAP))
    sources.append(config)  # tokenizer_config.json wins: transformers 5 reads it last
    for src in sources:
        for key in SPECIAL_TOKEN_KEYS:
            if src.get(key) is not None:
                merged[key] = _token_content(src[key])
        # transformers 5 names them extra_special_tokens, 4.x additional_special_tokens: one key here.
        for key in ("additional_special_tokens", "extra_special_tokens"):
            extra = src.get(key)
            if isinstance(extra, dict):  # named extra tokens ({"image_token": "<image>"})
                extra = [extra[k] for k in sorted(extra)]
            if extra:
                merged["additional_special_tokens"] = sorted(set(_token_content(extra)))
    return merged


def _chat_templates(bundle: Path, config: dict) -> dict[str, str | None]:
    """{"default": text or None, name: text, ...} in transformers' order of precedence."""
    templates: dict[str, str | None] = {}
    inline = config.get("chat_template")
    if isinstance(inline, list):  # [{"name": "default", "template": "..."}, {"name": "tool_use", ...}]
        for entry in inline:
            templates[str(entry.get("name"))] = entry.get("template")
    elif isinstance(inline, str):
        templates["default"] = inline
    json_file = bundle / "chat_template.json"
    if json_file.is_file():
        value = _read_json(json_file).get("chat_template")
        if isinstance(value, str):
            templates["default"] = value
    jinja = bundle / "chat_template.jinja"
    if jinja.is_file():
        templates["default"] = jinja.read_text(encoding="utf-8")
    extra = bundle / "additional_chat_templates"
    if extra.is_dir():
        for p in sorted(extra.glob("*.jinja")):
            templates[p.stem] = p.read_text(encoding="utf-8")
    templates.setdefault("default", None)
    return dict(sorted(templates.items()))


def tokenizer_identity(bundle_dir) -> TokenizerIdentity:
    """The tokenizer identity of a bundle folder; BadInput when it has no tokenizer this can read."""
    bundle = Path(bundle_dir)
    config = _read_json(bundle / TOKENIZER_CONFIG) if (bundle / TOKENIZER_CONFIG).is_file() else {}
    parts: dict[str, str] = {}
    if (bundle / TOKENIZER_JSON).is_file():
        parsed = _read_json(bundle / TOKENIZER_JSON)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("model"), dict):
            raise BadInput("tokenizer.json has no tokenizer model", path=str(bundle / TOKENIZER_JSON))
        normal = {
            "model": _normal_merges(parsed["model"]),
            "added_tokens": _normal_added(parsed.get("added_tokens")),
        }
        for part in TOKENIZER_PARTS:
            parts[f"{TOKENIZER_JSON} {part}"] = canonical_sha256(normal.get(part, parsed.get(part)))
    else:
        for name in SLOW_TOKENIZER_FILES:
            p = bundle / name
            if p.is_file():
                content = _read_json(p) if p.suffix == ".json" else p.read_bytes().hex()
                parts[name] = canonical_sha256(content)
    if not parts:
        raise BadInput(
            "no tokenizer.json and no slow tokenizer file: what this bundle tokenizes like is unknown",
            path=str(bundle),
        )
    flags = {k: config[k] for k in ENCODING_FLAGS if k in config}
    return TokenizerIdentity(parts, _special_tokens(bundle, config), flags, _chat_templates(bundle, config))


def tokenizer_differences(a: TokenizerIdentity, b: TokenizerIdentity) -> list[str]:
    """What differs between two tokenizer identities, as short names ("tokenizer.json model" ...)."""
    out = [
        f"{name} (in one bundle only)" if (name in a.parts) != (name in b.parts) else name
        for name in sorted(set(a.parts) | set(b.parts))
        if a.parts.get(name) != b.parts.get(name)
    ]
    for key in sorted(set(a.special_tokens) | set(b.special_tokens)):
        if a.special_tokens.get(key) != b.special_tokens.get(key):
            out.append(
                f"special token {key} ({a.special_tokens.get(key)!r} vs {b.special_tokens.get(key)!r})"
            )
    for key in sorted(set(a.flags) & set(b.flags)):
        if a.flags[key] != b.flags[key]:
            out.append(f"tokenizer_config.json {key} ({a.flags[key]!r} vs {b.flags[key]!r})")
    for name in sorted(set(a.chat_templates) | set(b.chat_templates)):
        if a.chat_templates.get(name) != b.chat_templates.get(name):
            out.append("chat template" if name == "default" else f"chat template {name!r}")
    return out


def model_config_values(bundle_dir) -> dict:
    """config.json by value: both transformers spellings made one, fields that do not change the function
    dropped. {} when the bundle has no config.json."""
    path = Path(bundle_dir) / "config.json"
    if not path.is_file():
        return {}
    config = portable_model_config(_read_json(path))
    if isinstance(config.get("rope_scaling"), dict) and "type" in config["rope_scaling"]:
        scaling = dict(config["rope_scaling"])
        scaling.setdefault("rope_type", scaling.pop("type"))
        config["rope_scaling"] = scaling
    if "rope_theta" in config:  # portable_model_config wrote rope_parameters' content as these two
        config.pop("rope_parameters", None)
    return _drop_ignored(config)


def _drop_ignored(config: dict) -> dict:
    out = {k: v for k, v in config.items() if k not in CONFIG_IGNORED}
    if isinstance(out.get("text_config"), dict):
        out["text_config"] = _drop_ignored(out["text_config"])
    return out


def config_differences(a: dict, b: dict) -> list[str]:
    """Fields whose values differ; a field only one config writes counts only when its value is not None
    (transformers 4.x and 5.x write different sets of defaults)."""
    out = []
    for key in sorted(set(a) | set(b)):
        if key in a and key in b:
            if a[key] != b[key]:
                out.append(f"config.json {key} ({a[key]!r} vs {b[key]!r})")
        elif (a.get(key) if key in a else b.get(key)) is not None and key in _SHAPE_FIELDS:
            out.append(f"config.json {key} (in one bundle only)")
    return out


# Fields that define the computation: a bundle that leaves one out while the other sets it is not known to
# compute the same function, so it is refused rather than assumed equal.
_SHAPE_FIELDS = frozenset(
    {
        "model_type",
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "hidden_act",
        "max_position_embeddings",
        "rms_norm_eps",
        "layer_norm_eps",
        "rope_theta",
        "tie_word_embeddings",
    }
)


def family_differences(a_dir, b_dir) -> list[str]:
    """Everything that differs between two bundles' tokenizers, chat templates and model configs."""
    return tokenizer_differences(tokenizer_identity(a_dir), tokenizer_identity(b_dir)) + config_differences(
        model_config_values(a_dir), model_config_values(b_dir)
    )


def require_same_tokenizer(base_dir, other_dir, *, what: str) -> None:
    """BadInput naming what differs unless `other_dir` (an adapter folder, with the tokenizer its training
    saved beside it) tokenizes and templates like `base_dir`. A folder with no tokenizer files passes:
    there is nothing to compare."""
    other = Path(other_dir)
    if not any((other / n).is_file() for n in (TOKENIZER_JSON, *SLOW_TOKENIZER_FILES)):
        return
    differing = tokenizer_differences(tokenizer_identity(base_dir), tokenizer_identity(other))
    if differing:
        raise BadInput(
            f"the tokenizers differ in {'; '.join(differing)}: {what}",
            path=str(other),
            field=differing[0].split(" (")[0],
        )


def require_same_model_family(a_dir, b_dir, *, what: str) -> TokenizerIdentity:
    """BadInput naming every difference unless the two bundles tokenize, template and compute alike.
    Returns A's tokenizer identity."""
    differing = family_differences(a_dir, b_dir)
    if differing:
        raise BadInput(
            f"the bundles differ in {'; '.join(differing)}: {what} of models that tokenize or compute "
            "differently is meaningless",
            path=str(b_dir),
            field=differing[0].split(" (")[0],
        )
    return tokenizer_identity(a_dir)
