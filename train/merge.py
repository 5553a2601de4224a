"""A LoRA adapter merged into its base as one library call: merge method `lora` (train/merges/lora.py).

from train.merge import merge_adapter
result = merge_adapter("runs/so7a", "runs/m11a-lora", "runs/m11a", store=store)
"""

from __future__ import annotations

from pathlib import Path

from pairstore.progress import Progress
from pairstore.store.store import Store
from train.merges.lora import LoraOptions, adapter_files, peft_merge
from train.merges.registry import MergeResult, merge

__all__ = ["MergeResult", "adapter_files", "merge_adapter", "peft_merge"]


def merge_adapter(
    base_bundle: str | Path,
    adapter_dir: str | Path,
    out_dir: str | Path,
    store: Store | None = None,
    name: str | None = None,
    *,
    base_name: str | None = None,
    max_shard_bytes: int = 2 << 30,
    trust_remote_code: bool = False,
    progress: Progress | None = None,
) -> MergeResult:
    """Merge `adapter_dir` into `base_bundle` as the bundle `out_dir`; with a `store`, register it as
    checkpoint `name` (default: the adapter's round, ROUND-stepN for an intermediate checkpoint, else the
    folder's name)."""
    options = LoraOptions(
        base=str(base_bundle),
        adapter=str(adapter_dir),
        base_name=base_name,
        max_shard_mb=max_shard_bytes / (1 << 20),
        trust_remote_code=trust_remote_code,
    )
    return merge("lora", options, out_dir, store=store, name=name, progress=progress)
