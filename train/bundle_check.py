"""Checks of a bundle's files before anything reads or copies them: the safetensors header entries and
the JSON files transformers, tokenizers and PEFT read.

    check_header_entry(path, name, entry)      # BadInput naming file and tensor
    check_bundle_files(bundle_dir)             # config.json, tokenizer files, generation config
    check_adapter_config(path, config)         # r, lora_alpha, target modules

Every JSON file is read with duplicate keys refused (a second "r" would silently win in one reader and
lose in another) and numbers finite. A refusal is BadInput (exit 2) naming the file and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pairstore.errors import BadInput


def _no_duplicates(path: Path):
    def hook(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise BadInput("a key appears twice in one object", path=str(path), field=k)
            seen.add(k)
        return dict(pairs)

    return hook


def _constant(path: Path):
    def refuse(token):
        raise BadInput(f"{token} is not a JSON number", path=str(path))

    return refuse


def loads_strict(text: str, path) -> object:
    """json.loads refusing duplicate keys and NaN/Infinity (BadInput naming `path`)."""
    p = Path(path)
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates(p), parse_constant=_constant(p))
    except json.JSONDecodeError as e:
        raise BadInput(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", path=str(p)) from None
    except RecursionError:
        raise BadInput("JSON nested too deep", path=str(p)) from None


def read_json_object(path, *, required: bool = True) -> dict | None:
    """A JSON object from a bundle file (strict, see loads_strict); None when absent and not required."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not required:
            return None
        raise BadInput("file is missing", path=str(p)) from None
    except IsADirectoryError:
        raise BadInput("a folder, not a file", path=str(p)) from None
    except UnicodeDecodeError as e:
        raise BadInput(f"not UTF-8 ({e.reason} at byte {e.start})", path=str(p)) from None
    if text.startswith("\ufeff"):
        text = text[1:]  # one BOM rule for every file pairstore reads: a leading BOM is dropped
    data = loads_strict(text, p)
    if not isinstance(data, dict):
        raise BadInput("expected a JSON object", path=str(p))
    return data


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_header_entry(path, name: str, entry) -> tuple[str, tuple[int, ...], int, int]:
    """(dtype, shape, begin, end) of one safetensors header entry; BadInput unless dtype is a string, shape
    a list of non-negative integers and data_offsets two non-negative integers in order (a string "4" or a
    float 4.0 is refused: other readers refuse it too)."""
    p = str(path)
    if not isinstance(entry, dict):
        raise BadInput("tensor entry is not an object", path=p, field=name)
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in entry]
    if missing:
        raise BadInput(f"tensor entry has no {missing[0]}", path=p, field=name)
    extra = sorted(set(entry) - {"dtype", "shape", "data_offsets"})
    if extra:
        raise BadInput(f"tensor entry has an unknown field {extra[0]!r}", path=p, field=name)
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str):
        raise BadInput(f"dtype must be a string, not {dtype!r}", path=p, field=name)
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise BadInput(f"shape must be a list of non-negative integers, not {shape!r}", path=p, field=name)
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_is_int(x) and x >= 0 for x in offsets)
        or offsets[0] > offsets[1]
    ):
        raise BadInput(
            f"data_offsets must be two non-negative integers [begin, end], not {offsets!r}",
            path=p,
            field=name,
        )
    return dtype, tuple(shape), offsets[0], offsets[1]


def check_metadata(path, metadata) -> None:
    """safetensors' __metadata__ is a string-to-string map."""
    if metadata is None:
        return
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise BadInput("__metadata__ must map strings to strings", path=str(path), field="__metadata__")


def _positive_int(config: dict, key: str, path: Path, *, required: bool) -> None:
    if key not in config:
        if required:
            raise BadInput(f"{key} is missing", path=str(path), field=key)
        return
    v = config[key]
    if not _is_int(v) or v <= 0:
        raise BadInput(f"{key} must be a positive integer, not {v!r}", path=str(path), field=key)


def _positive_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def check_adapter_config(path, config: dict) -> None:
    """A LoRA adapter_config.json the merge can compute a scale from: r a positive integer, lora_alpha a
    positive number, rank_pattern/alpha_pattern maps of the same, target_modules present."""
    p = Path(path)
    _positive_int(config, "r", p, required=True)
    if "lora_alpha" not in config:
        raise BadInput("lora_alpha is missing", path=str(p), field="lora_alpha")
    if not _positive_number(config["lora_alpha"]):
        raise BadInput(
            f"lora_alpha must be a positive number, not {config['lora_alpha']!r}",
            path=str(p),
            field="lora_alpha",
        )
    for key, check in (("rank_pattern", lambda v: _is_int(v) and v > 0), ("alpha_pattern", _positive_number)):
        pattern = config.get(key)
        if pattern is None:
            continue
        if not isinstance(pattern, dict):
            raise BadInput(f"{key} must be an object", path=str(p), field=key)
        for module, v in pattern.items():
            if not check(v):
                raise BadInput(f"{key}[{module!r}] must be positive, not {v!r}", path=str(p), field=key)
    if "use_rslora" in config and not isinstance(config["use_rslora"], bool):
        raise BadInput("use_rslora must be true or false", path=str(p), field="use_rslora")
    if not config.get("target_modules"):
        raise BadInput("target_modules is missing or empty", path=str(p), field="target_modules")


def check_bundle_files(bundle_dir) -> None:
    """config.json, tokenizer.json, tokenizer_config.json, generation_config.json and
    serving_config.json (when present) are JSON objects of the shape their readers expect."""
    bundle = Path(bundle_dir)
    config = read_json_object(bundle / "config.json", required=False) or {}
    for key in ("model_type",):
        if key in config and not isinstance(config[key], str):
            raise BadInput(f"{key} must be a string", path=str(bundle / "config.json"), field=key)
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads"):
        if key in config:
            _positive_int(config, key, bundle / "config.json", required=False)
    tokenizer = read_json_object(bundle / "tokenizer.json", required=False)
    if tokenizer is not None:
        _check_tokenizer(bundle / "tokenizer.json", tokenizer)
    tconf = read_json_object(bundle / "tokenizer_config.json", required=False)
    if tconf is not None and "chat_template" in tconf and not isinstance(tconf["chat_template"], (str, list)):
        raise BadInput(
            "chat_template must be a string",
            path=str(bundle / "tokenizer_config.json"),
            field="chat_template",
        )
    for name in ("generation_config.json", "serving_config.json"):
        read_json_object(bundle / name, required=False)


def _check_tokenizer(path: Path, tokenizer: dict) -> None:
    """tokenizer.json as the tokenizers library reads it (its own parser, when installed: the `train`
    extra), else its required shape: a `model` object with a vocabulary."""
    model = tokenizer.get("model")
    if not isinstance(model, dict) or "vocab" not in model:
        raise BadInput(
            "tokenizer.json has no tokenizer model (a 'model' object with its vocab)",
            path=str(path),
            field="model",
        )
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return
    try:
        Tokenizer.from_str(json.dumps(tokenizer))
    except Exception as e:  # tokenizers raises a plain Exception naming what it could not read
        raise BadInput(
            f"the tokenizers library cannot read it ({(str(e).splitlines() or ['?'])[0]})", path=str(path)
        ) from None
