"""Merge method `lora`: a LoRA adapter (the final one or a checkpoint-N) merged into full weights.

The merge streams the base bundle's safetensors shards tensor by tensor: a targeted weight W becomes
W + scale * (B @ A), computed in float32 and rounded once to W's stored dtype; every other tensor is copied
as is. Memory stays at one output shard plus one tensor, whatever the model size. When the adapter names a
module the base files do not hold under that name (a model whose loader renames checkpoint keys), the merge
falls back to PEFT's merge_and_unload on the loaded model. The result is written as sharded safetensors
with an index; the shared step (train.merges.registry.merge) adds the base bundle's serving files
(tokenizer, chat_template.jinja, system_prompt.txt, generation_config.json, serving_config.json,
config.json), merge_spec.json, the evidence and a checkpoint row (kind 'merge', parents: the base and the
round the adapter was trained for).

    pairstore train merge --base runs/so7a --adapter runs/m11a-lora --out runs/m11a
    pairstore train merge --base runs/so7a --adapter runs/m10a-lora/checkpoint-150 --out runs/m10b --name m10b
    train.merge.merge_adapter("runs/so7a", "runs/m11a-lora", "runs/m11a", store=store)
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairstore.errors import BadInput, PairstoreError
from pairstore.keys import sha256_file
from pairstore.options import option
from pairstore.progress import Progress
from train.bundle import (
    ShardedWriter,
    bundle_tensors,
    check_bundle,
    list_shards,
    read_json_file,
    read_shard_header,
    refuse_pickle,
)
from train.bundle_check import check_adapter_config
from train.bundle_identity import require_same_tokenizer
from train.dpo import library_versions
from train.merges.registry import Input, Merge, Written, register
from train.serving import load_model

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
_PREFIX = "base_model.model."
_TORCH_TO_ST = {
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float64": "F64",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}


class _Unmappable(Exception):
    """The adapter names modules the base shards do not hold: use the PEFT path."""


def adapter_files(adapter_dir) -> tuple[Path, Path, dict]:
    """(weights, config path, config) of an adapter folder; a pickle adapter is refused."""
    adapter = Path(adapter_dir)
    if not adapter.is_dir():
        raise BadInput("adapter folder does not exist", path=str(adapter))
    weights = adapter / ADAPTER_WEIGHTS
    if not weights.is_file():
        for pickle_name in ("adapter_model.bin", "adapter_model.pt"):
            if (adapter / pickle_name).exists():
                refuse_pickle(adapter / pickle_name)
        raise BadInput(f"no {ADAPTER_WEIGHTS} in the adapter folder", path=str(adapter))
    config_path = adapter / ADAPTER_CONFIG
    config = read_json_file(config_path)
    if config.get("peft_type") != "LORA":
        raise BadInput(
            f"only LoRA adapters merge, this is {config.get('peft_type')!r}",
            path=str(config_path),
            field="peft_type",
        )
    check_adapter_config(config_path, config)
    read_shard_header(weights)  # its header holds before a byte of it is read
    return weights, config_path, config


def adapter_provenance(adapter_dir) -> tuple[dict | None, int | None]:
    """The training evidence of the run that made the adapter, and the step of a checkpoint-N folder."""
    adapter = Path(adapter_dir).resolve()
    step = None
    run_dir = adapter
    m = re.fullmatch(r"checkpoint-(\d+)", adapter.name)
    if m:
        step, run_dir = int(m.group(1)), adapter.parent
    evidence_path = run_dir / "training_evidence.json"
    evidence = json.loads(evidence_path.read_text(encoding="utf-8")) if evidence_path.is_file() else None
    if step is None and evidence is not None:
        step = evidence.get("final_metrics", {}).get("global_step")
    return evidence, step


def _pattern_value(patterns: dict | None, module: str, default):
    for key, value in (patterns or {}).items():
        if re.fullmatch(rf"(.*\.)?{key}", module):
            return value
    return default


def lora_scale(config: dict, module: str) -> float:
    r = _pattern_value(config.get("rank_pattern"), module, config["r"])
    alpha = _pattern_value(config.get("alpha_pattern"), module, config["lora_alpha"])
    return alpha / math.sqrt(r) if config.get("use_rslora") else alpha / r


def _adapter_modules(weights_path: Path, config: dict) -> tuple[dict, dict]:
    """{base tensor name: (A, B, scale, kind)} for LoRA modules,
    and {base tensor name: tensor} replacements."""
    from safetensors.torch import load_file

    if config.get("use_dora"):
        raise _Unmappable("DoRA adapters merge through PEFT")
    if config.get("fan_in_fan_out"):
        raise _Unmappable("fan_in_fan_out adapters merge through PEFT")
    tensors = load_file(str(weights_path))
    lora: dict[str, dict] = {}
    replace: dict[str, object] = {}
    for key, t in tensors.items():
        name = key[len(_PREFIX) :] if key.startswith(_PREFIX) else key
        m = re.fullmatch(
            r"(.+)\.(lora_A|lora_B|lora_embedding_A|lora_embedding_B)(?:\.[^.]+)?(?:\.weight)?", name
        )
        if m:
            module, part = m.group(1), m.group(2)
            lora.setdefault(module, {})[part] = t
            continue
        if ".lora_" in name or "magnitude" in name:
            raise _Unmappable(f"adapter tensor {key} is not plain LoRA")
        replace[re.sub(r"\.modules_to_save(\.[^.]+)?", "", name)] = t
    modules = {}
    for module, parts in lora.items():
        scale = lora_scale(config, module)
        if "lora_A" in parts and "lora_B" in parts:
            modules[f"{module}.weight"] = (parts["lora_A"], parts["lora_B"], scale, "linear")
        elif "lora_embedding_A" in parts and "lora_embedding_B" in parts:
            modules[f"{module}.weight"] = (
                parts["lora_embedding_A"],
                parts["lora_embedding_B"],
                scale,
                "embedding",
            )
        else:
            raise BadInput(f"adapter module {module} lacks its A or B matrix", path=str(weights_path))
    return modules, replace


def _lora_delta(a, b, scale, kind):
    delta = b.float() @ a.float()
    return (delta.T if kind == "embedding" else delta) * scale


def _as_bytes(t):
    import torch

    return t.contiguous().view(torch.uint8).numpy() if t.numel() else b""


def _stream_merge(
    base, weights_path: Path, config: dict, out: Path, max_shard_bytes: int, progress: Progress
) -> int:
    from safetensors import safe_open

    modules, replace = _adapter_modules(weights_path, config)
    tensors = bundle_tensors(base)
    names = {info.name for _, info in tensors}
    unknown = sorted(set(modules) - names) + sorted(set(replace) - names)
    if unknown:
        raise _Unmappable(f"base shards hold no tensor {unknown[0]}")
    merged = 0
    handles: dict[Path, Any] = {}
    with (
        ShardedWriter(out, max_shard_bytes=max_shard_bytes) as writer,
        progress.stage("merge", total=len(tensors), unit="tensors") as stage,
    ):
        for shard, info in tensors:
            if shard not in handles:
                handles.clear()  # shards are read in order: one open at a time
                handles[shard] = safe_open(str(shard), framework="pt")
            t = handles[shard].get_tensor(info.name)
            if info.name in modules:
                a, b, scale, kind = modules[info.name]
                delta = _lora_delta(a, b, scale, kind)
                if tuple(delta.shape) != tuple(t.shape):
                    raise BadInput(
                        f"LoRA delta of shape {list(delta.shape)} does not fit the base weight of "
                        f"shape {list(t.shape)}",
                        path=str(weights_path),
                        field=info.name,
                    )
                t = (t.float() + delta).to(t.dtype)  # one rounding to the stored dtype
                merged += 1
            elif info.name in replace:
                new = replace[info.name]
                if tuple(new.shape) != tuple(t.shape):
                    raise BadInput(
                        f"saved module of shape {list(new.shape)} does not fit the base tensor of "
                        f"shape {list(t.shape)}",
                        path=str(weights_path),
                        field=info.name,
                    )
                t = new.to(t.dtype)
            dtype = _TORCH_TO_ST.get(str(t.dtype).removeprefix("torch."))
            if dtype is None:
                raise PairstoreError(f"tensor {info.name}: dtype {t.dtype} has no safetensors name here")
            writer.add(info.name, dtype, tuple(t.shape), _as_bytes(t))
            stage.advance()
    return merged


def peft_merge(base, adapter_dir, out: Path, max_shard_bytes: int, trust_remote_code: bool) -> int:
    from peft import PeftModel

    list_shards(base)
    config = json.loads((Path(base) / "config.json").read_text(encoding="utf-8"))
    import torch

    dtype = getattr(torch, str(config.get("torch_dtype") or config.get("dtype") or "float32"), torch.float32)
    model = load_model(base, trust_remote_code=trust_remote_code, dtype=dtype)
    peft_model = PeftModel.from_pretrained(model, str(adapter_dir))
    merged_modules = sum(1 for n, _ in peft_model.named_modules() if n.endswith("lora_A"))
    model = peft_model.merge_and_unload()
    model.save_pretrained(str(out), max_shard_size=max_shard_bytes)
    return merged_modules


@dataclass(frozen=True, kw_only=True)
class LoraOptions:
    base: str = option(help="The bundle the adapter was trained on.", path=True)
    adapter: str = option(help="The adapter folder, or one of its checkpoint-N folders.", path=True)
    base_name: str | None = option(
        None,
        help="Checkpoint name of the base (default: the name it is registered under, else the name the "
        "adapter's training recorded, else its folder's).",
    )
    max_shard_mb: float = option(2048, help="Largest output shard in MiB.", min=0.01)
    trust_remote_code: bool = option(False, help="Allow the bundle's own Python code (off by default).")


def _default_name(training: dict | None, step: int | None, round_name: str | None) -> str | None:
    """The round, or ROUND-stepN for an intermediate checkpoint; None without a round."""
    final_step = (training or {}).get("final_metrics", {}).get("global_step")
    if round_name and (step is None or step == final_step):
        return round_name
    return f"{round_name}-step{step}" if round_name else None


@register(
    "lora",
    version="1",
    kind="merge",
    options=LoraOptions,
    example="--base {bundle} --adapter {adapter}",
    command="merge",
    default_name="the adapter's round, ROUND-stepN for an intermediate checkpoint, else the output folder's",
)
def lora(options: LoraOptions) -> Merge:
    """Merge a LoRA adapter into full weights: a bundle with the base's serving files."""
    base, adapter = Path(options.base), Path(options.adapter)
    trust = options.trust_remote_code
    check_bundle(base, trust_remote_code=trust)
    weights_path, _, config = adapter_files(adapter)
    require_same_tokenizer(
        base,
        adapter,
        what="the adapter was trained with another tokenizer or chat template than this base bundle's",
    )
    training, step = adapter_provenance(adapter)
    round_name = training.get("round") if training else None
    max_shard_bytes = max(1, int(options.max_shard_mb * (1 << 20)))

    def write(stage: Path, progress: Progress, hash_output: bool) -> Written:
        try:
            merged = _stream_merge(base, weights_path, config, stage, max_shard_bytes, progress)
            route = "stream"
        except _Unmappable as why:
            with progress.stage("merge through PEFT", unit="modules") as peft_stage:
                merged = peft_merge(base, adapter, stage, max_shard_bytes, trust)
                peft_stage.advance(merged)
            route = f"peft ({why})"
        return Written(
            summary=f"merged {merged} LoRA modules ({route})",
            fields={"route": route, "merged_modules": merged, "libraries": library_versions()},
            hashes={"adapter": {weights_path.name: sha256_file(weights_path)}},
        )

    return Merge(
        inputs=[
            Input("base", base, options.base_name, recorded=(training or {}).get("base", {}).get("name")),
            Input("adapter", adapter, parent=False, bundle=False, embed_evidence=False),
        ],
        serving_from=base,
        out_bytes=sum(p.stat().st_size for p in list_shards(base)),
        write=write,
        fields={
            "adapter": {
                "step": step,
                "r": config.get("r"),
                "lora_alpha": config.get("lora_alpha"),
                "use_rslora": bool(config.get("use_rslora")),
            },
            "trained_on": (training or {}).get("base") or None,
            "round": round_name,
            "mixture_sha256": (training or {}).get("mixture_sha256"),
        },
        default_name=_default_name(training, step, round_name),
        round=round_name,
        extra_parents=[round_name] if round_name else [],
    )
