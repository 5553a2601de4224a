"""The soup of two bundles as one library call: merge method `linear` (train/merges/linear.py).

from train.soup import soup
evidence = soup("runs/r3-merged", "runs/r2-merged", 0.5, "runs/r3-soup", store=store, name="r3s")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pairstore.progress import Progress
from pairstore.store.store import Store
from train.merges.linear import DEFAULT_BUFFERS, DEFAULT_SLICE_BYTES, MIB, LinearOptions
from train.merges.registry import merge
from train.shard_io import StreamHash

__all__ = ["DEFAULT_BUFFERS", "DEFAULT_SLICE_BYTES", "StreamHash", "soup"]


def soup(
    a_dir: str | Path,
    b_dir: str | Path,
    alpha: float,
    out_dir: str | Path,
    *,
    slice_bytes: int = DEFAULT_SLICE_BYTES,
    buffers: int = DEFAULT_BUFFERS,
    hash_output: bool = False,
    store: Store | None = None,
    name: str | None = None,
    parents: Sequence[str] = (),
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write the bundle out = a + alpha*(b - a) to `out_dir`; with a `store`, register it as checkpoint
    `name` (default: the folder's) whose parents are `parents` (default: the names a and b are registered
    under). Returns the evidence (also out_dir/training_evidence.json). BadInput (exit 2) before anything
    is written when the inputs do not match: tensor names, shapes, dtypes, tokenizer files or chat
    template."""
    a_name, b_name = list(parents) if parents else (None, None)
    options = LinearOptions(
        a=str(a_dir),
        b=str(b_dir),
        alpha=float(alpha),
        a_name=a_name,
        b_name=b_name,
        slice_mb=slice_bytes / MIB,
        buffers=buffers,
    )
    result = merge(
        "linear", options, out_dir, store=store, name=name, hash_output=hash_output, progress=progress
    )
    return result.evidence
