"""Model bundles on disk: safetensors shards, their index, and the serving files.

A bundle is a folder holding the weights as safetensors (one `model.safetensors`
or numbered shards named by `model.safetensors.index.json`) plus the files that
say how the model is served (model card, "How to use"): the tokenizer,
`chat_template.jinja`, `system_prompt.txt`, `generation_config.json`,
`serving_config.json` and `config.json`.

Weights load from safetensors only: a pickle checkpoint (`*.bin`, `*.pt`,
`*.pth`, `*.pkl`, `*.ckpt`) can run code when loaded, so a bundle that has no
safetensors weights is refused with a clear message rather than loaded.

The safetensors format is read and written here directly (an 8-byte
little-endian header length, a JSON header, then raw tensor bytes), so nothing
in this module needs torch or the safetensors package:

    from train.bundle import list_shards, read_shard_header
    for shard in list_shards("runs/r3-merged"):
        for t in read_shard_header(shard).tensors:
            print(shard.name, t.name, t.dtype, t.shape)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairstore.errors import BadInput, PairstoreError
from pairstore.files import atomic_path, atomic_write_json
from pairstore.keys import sha256_file
from train.bundle_check import (
    check_bundle_files,
    check_header_entry,
    check_metadata,
    loads_strict,
    read_json_object,
)
from train.portable import portable_model_config, portable_tokenizer_config

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"

# Tokenizer files a Hugging Face bundle may carry (which ones depends on the tokenizer kind).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
)
# Everything a bundle needs besides its weights to be served the way the model card says.
SERVING_FILES = TOKENIZER_FILES + (
    "chat_template.jinja",
    "system_prompt.txt",
    "generation_config.json",
    "serving_config.json",
    "config.json",
)
# What tokenizer_fingerprint hashes: a changed template changes the prompts the model sees.
FINGERPRINT_FILES = TOKENIZER_FILES + ("chat_template.jinja",)
# Every bundle and adapter pairstore writes carries its evidence under this one name.
EVIDENCE_FILE = "training_evidence.json"

# Pickle-based checkpoint formats: loading them can execute arbitrary code.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")

# safetensors dtype name -> bytes per element.
DTYPE_SIZES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U64": 8,
    "U32": 4,
    "U16": 2,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}
# A header larger than this is not a real checkpoint header (the safetensors library uses 100 MB too).
MAX_HEADER_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a shard: `start`/`end` are absolute byte offsets in the file."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class ShardHeader:
    """A parsed shard header. `tensors` are in file order (by offset); `raw` is the header exactly as
    stored (8-byte length prefix included), so a shard with the same tensors can reuse it verbatim."""

    path: Path
    tensors: list[TensorInfo]
    metadata: dict | None
    data_start: int
    file_size: int
    raw: bytes


# ---------------------------------------------------------------------------- safety


def refuse_pickle(path) -> None:
    """Raise BadInput if `path` is a pickle checkpoint (by name): weights load from safetensors only."""
    p = Path(path)
    if p.name.lower().endswith(PICKLE_SUFFIXES) or p.name.lower().endswith(".bin.index.json"):
        raise BadInput(
            "pickle checkpoint refused: weights load from safetensors only (pickle files can run code "
            "when loaded); convert it to safetensors with a trusted tool first",
            path=str(p),
        )


def check_bundle(bundle_dir, *, trust_remote_code: bool = False) -> list[Path]:
    """Check a bundle is safe to load before anything reads or copies it: safetensors weights only (pickle
    refused) with headers that hold (train.bundle_check), config and tokenizer files of the right shape,
    and no custom modelling/tokenizer code (`auto_map` in config.json or tokenizer_config.json, or *.py
    files) unless trust_remote_code is asked for. Returns the weight shards."""
    bundle = Path(bundle_dir)
    shards = list_shards(bundle)
    for shard in shards:
        read_shard_header(shard)  # dtype, integer shapes and offsets, no overlap, within the file
    check_bundle_files(bundle)
    if not trust_remote_code:
        refuse_remote_code(bundle)
    return shards


def refuse_remote_code(folder) -> None:
    """BadInput (exit 2) naming the file when the folder (a bundle, a tokenizer) asks transformers to run
    its own code: `auto_map` in config.json or tokenizer_config.json, or any *.py file in it."""
    folder = Path(folder)
    for name in ("config.json", "tokenizer_config.json"):
        p = folder / name
        if p.is_file() and "auto_map" in read_json_file(p):
            raise BadInput(
                "bundle asks to run its own code (auto_map); refused unless trust_remote_code "
                "is asked for explicitly",
                path=str(p),
                field="auto_map",
            )
    code = sorted(p.name for p in folder.glob("*.py"))
    if code:
        raise BadInput(
            f"bundle carries Python code ({code[0]}); refused unless trust_remote_code is asked "
            "for explicitly",
            path=str(folder / code[0]),
        )


def from_pretrained_kwargs(*, trust_remote_code: bool = False) -> dict:
    """Keyword arguments for transformers' from_pretrained that keep loading safe: safetensors only, no remote
    code unless asked, never a download."""
    return {"use_safetensors": True, "trust_remote_code": bool(trust_remote_code), "local_files_only": True}


# ---------------------------------------------------------------------------- reading


def list_shards(bundle_dir) -> list[Path]:
    """The bundle's safetensors weight files in file order (shard names sorted, as numbered).

    Reads `model.safetensors.index.json` when present, else a single `model.safetensors`.
    A pickle checkpoint is refused; a shard named by the index but missing is an error naming it.
    """
    bundle = Path(bundle_dir)
    if not bundle.is_dir():
        raise BadInput("bundle folder does not exist", path=str(bundle))
    index = bundle / INDEX_NAME
    if index.exists():
        weight_map = read_index(bundle)
        names = sorted(set(weight_map.values()))
        shards = []
        for name in names:
            if Path(name).name != name:
                raise BadInput(
                    f"shard {name!r} is not a plain file name in the bundle",
                    path=str(index),
                    field="weight_map",
                )
            if not name.endswith(".safetensors"):
                refuse_pickle(bundle / name)
                raise BadInput(
                    f"shard {name!r} is not a .safetensors file", path=str(index), field="weight_map"
                )
            shard = bundle / name
            if not shard.is_file():
                raise BadInput(f"shard {name} named by the index is missing", path=str(shard))
            shards.append(shard)
        return shards
    single = bundle / SINGLE_NAME
    if single.is_file():
        return [single]
    pickles = sorted(
        p.name
        for p in bundle.iterdir()
        if p.name.lower().endswith(PICKLE_SUFFIXES) or p.name.lower().endswith(".bin.index.json")
    )
    if pickles:
        refuse_pickle(bundle / pickles[0])
    raise BadInput(f"no safetensors weights ({SINGLE_NAME} or {INDEX_NAME})", path=str(bundle))


def read_index(bundle_dir) -> dict[str, str]:
    """The index's weight_map (tensor name -> shard file name)."""
    index = Path(bundle_dir) / INDEX_NAME
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"unreadable index: {e}", path=str(index)) from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise BadInput("index has no weight_map", path=str(index), field="weight_map")
    for key, value in weight_map.items():
        if not isinstance(value, str):
            raise BadInput(f"weight_map[{key!r}] is not a file name", path=str(index), field="weight_map")
    return weight_map


def read_shard_header(path) -> ShardHeader:
    """Parse and check a safetensors header: offsets inside the file, contiguous, sizes matching
    dtype and shape. Raises BadInput naming the file and the tensor."""
    p = Path(path)
    refuse_pickle(p)
    try:
        with open(p, "rb") as f:
            file_size = os.fstat(f.fileno()).st_size
            prefix = f.read(8)
            if len(prefix) < 8:
                raise BadInput("not a safetensors file (shorter than its 8-byte header length)", path=str(p))
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > MAX_HEADER_BYTES or 8 + header_len > file_size:
                raise BadInput(
                    f"not a safetensors file (header length {header_len} does not fit "
                    f"the file of {file_size} bytes)",
                    path=str(p),
                )
            header_bytes = f.read(header_len)
    except FileNotFoundError:
        raise BadInput("shard is missing", path=str(p)) from None
    except IsADirectoryError:
        raise BadInput("shard is a folder, not a file", path=str(p)) from None
    try:
        header = loads_strict(header_bytes.decode("utf-8"), p)
    except UnicodeDecodeError as e:
        raise BadInput(f"safetensors header is not JSON: {e}", path=str(p)) from None
    if not isinstance(header, dict):
        raise BadInput("safetensors header is not a JSON object", path=str(p))
    data_start = 8 + header_len
    metadata = header.pop("__metadata__", None)
    tensors = []
    check_metadata(p, metadata)
    for name, entry in header.items():
        dtype, shape, begin, end = check_header_entry(p, name, entry)
        if dtype not in DTYPE_SIZES:
            raise BadInput(f"unknown dtype {dtype!r}", path=str(p), field=name)
        info = TensorInfo(name, dtype, shape, data_start + begin, data_start + end)
        if any(d < 0 for d in shape) or info.nbytes != info.numel * DTYPE_SIZES[dtype]:
            raise BadInput(
                f"data_offsets [{begin}, {end}] do not hold a {dtype} tensor of shape {list(shape)}",
                path=str(p),
                field=name,
            )
        tensors.append(info)
    tensors.sort(key=lambda t: (t.start, t.end))
    position = data_start
    for t in tensors:
        if t.start != position:
            raise BadInput(
                f"tensor data is not contiguous (starts at {t.start - data_start}, expected "
                f"{position - data_start})",
                path=str(p),
                field=t.name,
            )
        position = t.end
    if position != file_size:
        raise BadInput(
            f"file is {file_size} bytes but its tensors end at {position} (truncated or padded)", path=str(p)
        )
    return ShardHeader(p, tensors, metadata, data_start, file_size, prefix + header_bytes)


def bundle_tensors(bundle_dir) -> list[tuple[Path, TensorInfo]]:
    """Every tensor of the bundle as (shard path, info), shards in file order, tensors in file order.
    Checks that each index entry is in the shard it names and that no tensor appears twice."""
    bundle = Path(bundle_dir)
    shards = list_shards(bundle)
    weight_map = read_index(bundle) if (bundle / INDEX_NAME).exists() else None
    seen: dict[str, Path] = {}
    out = []
    for shard in shards:
        for t in read_shard_header(shard).tensors:
            if t.name in seen:
                raise BadInput(
                    f"tensor appears in both {seen[t.name].name} and {shard.name}",
                    path=str(shard),
                    field=t.name,
                )
            if weight_map is not None and weight_map.get(t.name) != shard.name:
                raise BadInput(
                    f"index puts this tensor in {weight_map.get(t.name)!r}, found in {shard.name}",
                    path=str(bundle / INDEX_NAME),
                    field=t.name,
                )
            seen[t.name] = shard
            out.append((shard, t))
    if weight_map is not None:
        missing = [k for k in weight_map if k not in seen]
        if missing:
            raise BadInput(
                f"index names a tensor that is in no shard ({weight_map[missing[0]]})",
                path=str(bundle / INDEX_NAME),
                field=missing[0],
            )
    return out


def check_same_tensors(
    a_dir: Path,
    b_dir: Path,
    a_tensors: list[tuple[Path, TensorInfo]],
    b_tensors: list[tuple[Path, TensorInfo]],
    *,
    a_label: str = "A",
    b_label: str = "B",
) -> None:
    """BadInput naming the first difference between two bundles' tensors (bundle_tensors), in A's file
    order: a tensor only one holds, a shape, a dtype. Merges of bundles compute tensor by tensor, so
    every tensor must be in both with the same shape and dtype."""
    b_by_name = {t.name: (p, t) for p, t in b_tensors}
    a_names = set()
    for a_path, t in a_tensors:
        a_names.add(t.name)
        if t.name not in b_by_name:
            raise BadInput(
                f"tensor is in {a_label} ({a_path.name}) but not in {b_label} {b_dir}",
                path=str(a_dir),
                field=t.name,
            )
        b_path, u = b_by_name[t.name]
        if t.shape != u.shape:
            raise BadInput(
                f"shape mismatch: {a_label} has {list(t.shape)}, {b_label} has {list(u.shape)} "
                f"({b_path.name})",
                path=str(a_dir),
                field=t.name,
            )
        if t.dtype != u.dtype:
            raise BadInput(
                f"dtype mismatch: {a_label} has {t.dtype}, {b_label} has {u.dtype} ({b_path.name})",
                path=str(a_dir),
                field=t.name,
            )
    for b_path, u in b_tensors:
        if u.name not in a_names:
            raise BadInput(
                f"tensor is in {b_label} ({b_path.name}) but not in {a_label} {a_dir}",
                path=str(b_dir),
                field=u.name,
            )


def shard_sha256s(bundle_dir) -> dict[str, str]:
    """SHA-256 of each weight file, by file name, in file order."""
    return {p.name: sha256_file(p) for p in list_shards(bundle_dir)}


# ---------------------------------------------------------------------------- serving files


def copy_serving_files(src, dst) -> list[str]:
    """Copy the serving files that `src` has into `dst` (created if needed), each atomically, and make them
    readable by transformers 4.x and 5.x alike (make_portable). Returns the names copied. Never copies
    weights."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in SERVING_FILES:
        source = src / name
        if source.is_file():
            with atomic_path(dst / name) as tmp:
                shutil.copyfile(source, tmp)
            copied.append(name)
    make_portable(dst)
    return copied


def make_portable(bundle_dir) -> list[str]:
    """Rewrite the bundle's tokenizer_config.json and config.json where one transformers major would not read
    them (train.portable); a file both read is left byte for byte. Returns the names rewritten."""
    bundle = Path(bundle_dir)
    template_file = bundle / "chat_template.jinja"
    template = template_file.read_text(encoding="utf-8") if template_file.is_file() else None
    fixes = {
        "tokenizer_config.json": lambda c: portable_tokenizer_config(c, template),
        "config.json": portable_model_config,
    }
    rewritten = []
    for name, fix in fixes.items():
        path = bundle / name
        if path.is_file():
            config = read_json_file(path)
            fixed = fix(config)
            if fixed != config:
                atomic_write_json(path, fixed)
                rewritten.append(name)
    return rewritten


def tokenizer_fingerprint(bundle_dir) -> str:
    """SHA-256 over the names and contents of the tokenizer files and the chat template present.
    Two bundles with equal fingerprints tokenize and template prompts the same way."""
    bundle = Path(bundle_dir)
    h = hashlib.sha256()
    for name in FINGERPRINT_FILES:
        p = bundle / name
        if p.is_file():
            h.update(f"{name}\0{sha256_file(p)}\n".encode())
    return h.hexdigest()


def read_json_file(path) -> dict:
    """A JSON object from a bundle file, BadInput naming the file if it is not one (duplicate keys and
    NaN refused: train.bundle_check.read_json_object)."""
    found = read_json_object(path)
    assert found is not None  # required: a missing file raised
    return found


# ---------------------------------------------------------------------------- writing


def write_index(out_dir, weight_map: dict[str, str], total_size: int) -> Path:
    """Write `model.safetensors.index.json` (metadata.total_size = bytes of tensor data) atomically."""
    index = {
        "metadata": {"total_size": int(total_size)},
        "weight_map": {k: weight_map[k] for k in sorted(weight_map)},
    }
    return atomic_write_json(Path(out_dir) / INDEX_NAME, index)


def shard_file_name(number: int, count: int) -> str:
    """Hugging Face's shard naming: model-00001-of-00004.safetensors (1-based)."""
    return f"model-{number:05d}-of-{count:05d}.safetensors"


def build_header(entries: Iterable[tuple[str, str, tuple[int, ...]]], metadata: dict | None = None) -> bytes:
    """The 8-byte length + JSON header for tensors (name, dtype, shape) stored back to back in that order.
    The JSON is padded with spaces to a multiple of 8 bytes so the data is aligned."""
    header: dict = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, dtype, shape in entries:
        if dtype not in DTYPE_SIZES:
            raise PairstoreError(f"unknown safetensors dtype {dtype!r} for tensor {name}")
        numel = 1
        for d in shape:
            numel *= int(d)
        size = numel * DTYPE_SIZES[dtype]
        header[name] = {
            "dtype": dtype,
            "shape": [int(d) for d in shape],
            "data_offsets": [offset, offset + size],
        }
        offset += size
    body = json.dumps(header, separators=(",", ":")).encode("utf-8")
    body += b" " * (-len(body) % 8)
    return struct.pack("<Q", len(body)) + body


def write_shard(
    path, tensors: Iterable[tuple[str, str, tuple[int, ...], Any]], metadata: dict | None = None
) -> int:
    """Write one safetensors file atomically from (name, dtype, shape, data) in that order; `data` is any
    buffer of the tensor's raw little-endian bytes (a numpy array, or `t.contiguous().view(torch.uint8)
    .numpy()` for a torch tensor). Returns the bytes of tensor data written."""
    items = list(tensors)
    header = build_header(((n, d, s) for n, d, s, _ in items), metadata)
    written = 0
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(header)
        for name, dtype, shape, data in items:
            view = memoryview(data).cast("B")
            numel = 1
            for d in shape:
                numel *= int(d)
            if view.nbytes != numel * DTYPE_SIZES[dtype]:
                raise PairstoreError(
                    f"tensor {name}: {view.nbytes} bytes for a {dtype} tensor of shape {list(shape)}"
                )
            f.write(view)
            written += view.nbytes
        f.flush()
    return written


class ShardedWriter:
    """Write a bundle's weights as numbered safetensors shards of at most `max_shard_bytes` each (a tensor
    larger than that gets a shard of its own) plus the index. One shard's tensors are held until the shard
    is full, so memory is bounded by the shard size.

        with ShardedWriter(out_dir, max_shard_bytes=2 << 30) as w:
            for name, t in state_dict.items():
                w.add(name, "BF16", tuple(t.shape), t.contiguous().view(torch.uint8).numpy())
    """

    def __init__(self, out_dir, *, max_shard_bytes: int = 2 << 30, metadata: dict | None = None):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.max_shard_bytes = int(max_shard_bytes)
        self.metadata = metadata if metadata is not None else {"format": "pt"}
        self._pending: list[tuple[str, str, tuple[int, ...], object]] = []
        self._pending_bytes = 0
        self._written: list[tuple[Path, list[str]]] = []  # temp shard file, its tensor names
        self.total_size = 0

    def add(self, name: str, dtype: str, shape: tuple[int, ...], data) -> None:
        size = memoryview(data).nbytes
        if self._pending and self._pending_bytes + size > self.max_shard_bytes:
            self._flush()
        self._pending.append((name, dtype, tuple(shape), data))
        self._pending_bytes += size

    def _flush(self) -> None:
        tmp = self.out_dir / f".shard-{len(self._written) + 1:05d}.partial.safetensors"
        self.total_size += write_shard(tmp, self._pending, self.metadata)
        self._written.append((tmp, [n for n, _, _, _ in self._pending]))
        self._pending, self._pending_bytes = [], 0

    def close(self) -> dict[str, str]:
        """Finish: name the shards (one file: model.safetensors), write the index; return the weight map."""
        if self._pending or not self._written:
            self._flush()
        count = len(self._written)
        weight_map = {}
        for number, (tmp, names) in enumerate(self._written, start=1):
            final = SINGLE_NAME if count == 1 else shard_file_name(number, count)
            os.replace(tmp, self.out_dir / final)
            weight_map.update({n: final for n in names})
        if count > 1:
            write_index(self.out_dir, weight_map, self.total_size)
        else:
            with contextlib.suppress(FileNotFoundError):
                (self.out_dir / INDEX_NAME).unlink()
        return weight_map

    def abort(self) -> None:
        for tmp, _ in self._written:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        self._written, self._pending = [], []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False
