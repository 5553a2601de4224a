"""Merge method `ties`: TIES merging of several bundles fine-tuned from one base (trim, elect sign, merge).

    pairstore train ties --base runs/so7a --model runs/m11a --model runs/m12a --density 0.5 --out runs/t1

Per float tensor, in float32 (float64 for F64 tensors), with base b, models m_1..m_n, weights w_i:

1. Task vectors: d_i = m_i - b.
2. Trim: keep the k = max(1, floor(density * N)) entries of d_i largest in magnitude, zero the rest (an
   entry tied with the k-th largest magnitude is kept when its flat index is lower).
3. Elect sign: s = +1 where w_1*t_1 + ... + w_n*t_n >= 0 (summed in model order), else -1.
4. Disjoint mean: over the models whose weighted entry w_i*t_i has sign s (a zero has none),
   t = (sum of w_i*t_i) / (sum of w_i), or 0 where no model agrees.
5. out = b + scale * t, rounded once to the stored dtype with round-to-nearest-even.

This is mergekit's `ties` with one density for every model, magnitude trimming without rescaling, the
"sum" sign consensus and normalized weights. Integer and bool tensors must be equal in every bundle and
are copied. The output has the base's shard layout (file names, headers, tensor order) and serving
files. Memory: about n + 3 float32 copies of the largest tensor (a tensor is trimmed whole).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pairstore.errors import BadInput
from pairstore.options import option
from pairstore.progress import Progress
from train.bundle import TensorInfo, bundle_tensors, check_bundle, check_same_tensors, list_shards
from train.bundle_identity import require_same_model_family
from train.merges.registry import Input, Merge, Written, register, write_in_layout
from train.shard_io import preadv_exact
from train.soup_kernel import FLOAT_DTYPES, narrow, widen


@dataclass(frozen=True, kw_only=True)
class TiesOptions:
    base: str = option(help="The bundle every model was fine-tuned from.", path=True)
    model: tuple[str, ...] = option(help="A fine-tuned bundle (give --model once per model).", path=True)
    density: float = option(help="Fraction of each task vector kept, by magnitude (0 < density <= 1).")
    weight: tuple[float, ...] = option((), help="Weight of each model, in --model order (default: all 1).")
    scale: float = option(1.0, help="Scale of the merged task vector: out = base + scale * merged.")
    base_name: str | None = option(
        None,
        help="Checkpoint name of the base (default: the name it is registered under, else its folder's).",
    )
    model_name: tuple[str, ...] = option(
        (), help="Checkpoint name of each model, in --model order (default: registered, else folder's)."
    )


# ---------------------------------------------------------------------------- the definition, on arrays


def trim(delta: np.ndarray, density: float) -> np.ndarray:
    """`delta` with all but its k = max(1, floor(density * N)) largest magnitudes set to zero; among equal
    magnitudes at the cut, lower flat indices are kept."""
    n = delta.size
    k = max(1, int(density * n)) if n else 0
    if k >= n:
        return delta
    magnitude = np.abs(delta)
    cut = np.partition(magnitude, n - k)[n - k]  # the k-th largest magnitude
    keep = magnitude > cut
    ties = np.flatnonzero(magnitude == cut)[: k - int(np.count_nonzero(keep))]
    keep[ties] = True
    return np.where(keep, delta, np.zeros((), delta.dtype))


def ties_merge(
    base: np.ndarray, models: list[np.ndarray], weights: list[float], density: float, scale: float
) -> np.ndarray:
    """The merged tensor (see the module docstring), computed in the arrays' float type."""
    ftype = base.dtype.type
    zero = ftype(0)
    weighted = [ftype(w) * trim(m - base, density) for m, w in zip(models, weights)]
    total = weighted[0].copy()
    for x in weighted[1:]:
        total += x
    sign = np.where(total >= zero, ftype(1), ftype(-1))
    mixed = np.zeros_like(base)
    divisor = np.zeros_like(base)
    for x, w in zip(weighted, weights):
        agrees = np.sign(x) == sign
        mixed += np.where(agrees, x, zero)
        divisor += np.where(agrees, ftype(w), zero)
    merged = mixed / np.where(divisor == zero, ftype(1), divisor)
    return base + ftype(scale) * merged


# ---------------------------------------------------------------------------- the method


def _read(fd: int, info: TensorInfo, path: Path) -> bytearray:
    buf = bytearray(info.nbytes)
    preadv_exact(fd, memoryview(buf), info.start, path)
    return buf


def _check_options(options: TiesOptions) -> list[float]:
    """The weights, one per model; BadInput naming what is wrong with the options."""
    if not options.model:
        raise BadInput("give at least one --model", field="model")
    if not 0 < options.density <= 1:
        raise BadInput(f"density must be above 0 and at most 1, got {options.density}", field="density")
    weights = list(options.weight) or [1.0] * len(options.model)
    if len(weights) != len(options.model):
        raise BadInput(
            f"{len(weights)} weights for {len(options.model)} models: give one --weight per --model",
            field="weight",
        )
    if any(w <= 0 for w in weights):
        raise BadInput(f"every weight must be above 0, got {weights}", field="weight")
    if options.model_name and len(options.model_name) != len(options.model):
        raise BadInput(
            f"{len(options.model_name)} names for {len(options.model)} models: give one --model-name per "
            "--model",
            field="model_name",
        )
    return weights


@register(
    "ties",
    version="1",
    kind="soup",
    options=TiesOptions,
    example="--base {bundle} --model {other} --density 0.5",
)
def ties(options: TiesOptions) -> Merge:
    """TIES-merge fine-tuned bundles into their base: trim each task vector, elect signs, disjoint mean."""
    weights = _check_options(options)
    base = Path(options.base)
    models = [Path(m) for m in options.model]
    labels = [f"model {i}" for i in range(1, len(models) + 1)]
    for bundle in (base, *models):
        check_bundle(bundle)
    base_tensors = bundle_tensors(base)
    where: list[dict[str, tuple[Path, TensorInfo]]] = []
    fingerprint = ""
    for model, label in zip(models, labels):
        tensors = bundle_tensors(model)
        check_same_tensors(base, model, base_tensors, tensors, a_label="the base", b_label=label)
        fingerprint = require_same_model_family(base, model, what="a TIES merge").sha256
        where.append({t.name: (p, t) for p, t in tensors})
    names: list[str | None] = [*options.model_name] or [None] * len(models)

    def write(stage: Path, progress: Progress, hash_output: bool) -> Written:
        fds: dict[Path, int] = {}

        def fd(path: Path) -> int:
            if path not in fds:
                fds[path] = os.open(path, os.O_RDONLY)
            return fds[path]

        def merged(info: TensorInfo, shard: Path) -> bytes:
            return _merged_tensor(info, shard, where, labels, fd, weights, options)

        try:
            hashes = write_in_layout(
                base, stage, merged, progress, hash_output=hash_output, stage_name="ties"
            )
        finally:
            for descriptor in fds.values():
                os.close(descriptor)
        return Written(
            summary=f"TIES-merged {len(models)} model(s) into {base.name}: {len(base_tensors)} tensors, "
            f"density {options.density:g}",
            output_hashes=hashes,
        )

    return Merge(
        inputs=[Input("base", base, options.base_name)]
        + [Input(label, m, name) for label, m, name in zip(labels, models, names)],
        serving_from=base,
        out_bytes=sum(p.stat().st_size for p in list_shards(base)),
        write=write,
        fields={
            "formula": "out = base + scale * disjoint_mean(elect_sign(trim(models - base, density)), "
            "weights), in float32 (float64 for F64) and rounded once to the stored dtype "
            "(round to nearest even)",
            "weights": weights,
            "layout": "the base's shards and headers",
            "tokenizer_fingerprint": fingerprint,
        },
    )


def _merged_tensor(
    info: TensorInfo,
    base_path: Path,
    where: list[dict[str, tuple[Path, TensorInfo]]],
    labels: list[str],
    fd,
    weights: list[float],
    options: TiesOptions,
) -> bytes:
    """One output tensor's bytes: merged when it is a float tensor, else copied (equal in every bundle)."""
    base_raw = _read(fd(base_path), info, base_path)
    model_raws = []
    for found in where:
        path, model_info = found[info.name]
        model_raws.append(_read(fd(path), model_info, path))
    if info.dtype not in FLOAT_DTYPES:
        for raw, label, found in zip(model_raws, labels, where):
            if raw != base_raw:
                raise BadInput(
                    f"{info.dtype} tensor differs between the base and {label} (non-float tensors are "
                    "copied, so they must be equal)",
                    path=str(found[info.name][0]),
                    field=info.name,
                )
        return bytes(base_raw)
    base_values = widen(info.dtype, base_raw)
    model_values = [widen(info.dtype, raw) for raw in model_raws]
    for values, label, found in zip(model_values, labels, where):
        if not np.isfinite(values).all():
            raise BadInput(
                f"{label} holds a value that is not finite (TIES ranks magnitudes)",
                path=str(found[info.name][0]),
                field=info.name,
            )
    if not np.isfinite(base_values).all():
        raise BadInput(
            "the base holds a value that is not finite (TIES ranks magnitudes)",
            path=str(base_path),
            field=info.name,
        )
    return narrow(info.dtype, ties_merge(base_values, model_values, weights, options.density, options.scale))
