"""Streaming weight soup of two bundles: out = a + alpha * (b - a), tensor by tensor, slice by slice.

    pairstore train soup runs/r3-merged runs/r2-merged --alpha 0.5 --out runs/r3-soup

Both bundles must hold the same tensors (names, shapes, dtypes) as safetensors shards
and the same tokenizer and chat template. The output has A's shard layout (same file
names, same headers, same tensor order) and A's serving files, plus
`training_evidence.json` naming both inputs' shard SHA-256s and alpha.

Exactness. For 0 < alpha < 1 every element is computed in float32 as
`(1 - alpha) * a + alpha * b` (three IEEE float32 operations, no fused multiply-add;
the weights are float32(1 - alpha) and float32(alpha)) and rounded once to the
stored dtype with round-to-nearest-even. That is a + alpha*(b - a) written so that
alpha = 0 and alpha = 1 give a and b exactly; those two alphas copy the bytes of a or
b. float64 tensors are computed in float64; integer, bool and float8 tensors must be
byte-identical in both inputs (they are copied; a difference is an error).

Memory and speed. Nothing holds a tensor, let alone a model: the data of A's shards is
cut into fixed slices (a tensor larger than a slice, e.g. an embedding of a GB, spans
several), and five threads overlap the work: a reader fills a fixed pool of preallocated
buffers with os.preadv; two hashers compute A's and B's SHA-256 as the data streams past
while the calling thread computes from the same read-only buffers into an output buffer
(bf16 with a small C kernel, train/_soup_kernel.c, built at install; numpy in cache-sized
blocks where it is not built and for the other dtypes); a writer
writes with os.pwrite, starting write-back early (sync_file_range) so the final fsync has
little left. Peak memory is about slice_bytes * (3 * buffers - 1) plus the interpreter
(~220 MB at the defaults), whatever the model size. Output shards are written under temporary names and renamed when all are done.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import math
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pairstore.errors import BadInput, PairstoreError
from pairstore.keys import sha256_file
from train.bundle import (
    EVIDENCE_FILE,
    FINGERPRINT_FILES,
    INDEX_NAME,
    SINGLE_NAME,
    TensorInfo,
    atomic_write_json,
    bundle_tensors,
    copy_serving_files,
    list_shards,
    read_index,
    read_shard_header,
    tokenizer_fingerprint,
    write_index,
)

try:  # the bf16 kernel in C (train/_soup_kernel.c), built at install where a C compiler is present
    from train import _soup_kernel as _native
except ImportError:  # the numpy kernel below gives the same bits, at about a third of the speed
    _native = None

DEFAULT_SLICE_BYTES = 16 << 20
DEFAULT_BUFFERS = 4
# Elements per compute block: three 1 MB temporaries stay in cache, and numpy's per-call cost is amortized.
BLOCK_ELEMENTS = 1 << 18
# Output bytes between write-back kicks (see _WriteBack).
WRITEBACK_BYTES = 32 << 20

FLOAT_DTYPES = {"BF16", "F16", "F32", "F64"}
_NP_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "BF16": np.uint16}
_ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}


# ---------------------------------------------------------------------------- kernels


class SoupKernel:
    """out = wa*a + wb*b computed in float32 and rounded once, written to the `out` bytes.

    `wa`, `wb` are float32(1 - alpha) and float32(alpha). bf16 goes through the compiled kernel when it
    is built and `native` is not False; otherwise, and for the other dtypes, numpy computes in blocks of
    BLOCK_ELEMENTS with work arrays allocated once, so the temporaries stay in cache.
    """

    def __init__(self, alpha: float, native: bool | None = None):
        if native and _native is None:
            raise PairstoreError("the compiled soup kernel (train/_soup_kernel.c) is not built here")
        self.native = _native is not None if native is None else native
        self.alpha = float(alpha)
        self.wa32, self.wb32 = np.float32(1.0 - self.alpha), np.float32(self.alpha)
        self.wa64, self.wb64 = np.float64(1.0 - self.alpha), np.float64(self.alpha)
        self._x = np.empty(BLOCK_ELEMENTS, np.uint32)
        self._y = np.empty(BLOCK_ELEMENTS, np.uint32)
        self._t = np.empty(BLOCK_ELEMENTS, np.uint32)
        self._y64 = np.empty(BLOCK_ELEMENTS // 2, np.float64)

    def apply(self, dtype: str, a, b, out=None) -> None:
        """Soup the raw bytes `a` and `b` (same length, whole elements) into `out` (default: into `a`)."""
        out = a if out is None else out
        np_dtype = _NP_DTYPES.get(dtype)
        if np_dtype is None:
            raise PairstoreError(f"no soup kernel for dtype {dtype}")
        if dtype == "BF16" and self.native:
            _native.bf16(a, b, out, float(self.wa32), float(self.wb32))  # releases the GIL
            return
        a, b, out = (np.frombuffer(x, np_dtype) for x in (a, b, out))
        # Overflow to inf and inf - inf = nan are the IEEE results the definition asks for, not errors.
        with np.errstate(over="ignore", invalid="ignore"):
            {"BF16": self._bf16, "F16": self._f16, "F32": self._f32, "F64": self._f64}[dtype](a, b, out)

    def _bf16(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa32, self.wb32
        for s in range(0, a.size, BLOCK_ELEMENTS):
            e = min(a.size, s + BLOCK_ELEMENTS)
            n = e - s
            u, v, t = self._x[:n], self._y[:n], self._t[:n]
            # bf16 -> f32 is exact: the bf16 bits are the high half of the f32 bits.
            np.copyto(u, a[s:e])
            np.left_shift(u, 16, out=u)
            np.copyto(v, b[s:e])
            np.left_shift(v, 16, out=v)
            x, y = u.view(np.float32), v.view(np.float32)
            np.multiply(x, wa, out=x)
            np.multiply(y, wb, out=y)
            np.add(x, y, out=x)
            # Round to nearest, ties to even: add 0x7FFF plus the lowest kept bit, keep the high half.
            # NaNs computed from bf16 inputs have zero low halves, so they stay NaN (no carry).
            np.right_shift(u, 16, out=t)
            np.bitwise_and(t, 1, out=t)
            np.add(t, 0x7FFF, out=t)
            np.add(u, t, out=u)
            np.right_shift(u, 16, out=u)
            np.copyto(out[s:e], u, casting="unsafe")

    def _f16(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa32, self.wb32
        for s in range(0, a.size, BLOCK_ELEMENTS):
            e = min(a.size, s + BLOCK_ELEMENTS)
            n = e - s
            x = self._x[:n].view(np.float32)
            y = self._y[:n].view(np.float32)
            np.copyto(x, a[s:e])
            np.copyto(y, b[s:e])
            np.multiply(x, wa, out=x)
            np.multiply(y, wb, out=y)
            np.add(x, y, out=x)
            np.copyto(out[s:e], x, casting="same_kind")  # numpy rounds f32 -> f16 to nearest even

    def _f32(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa32, self.wb32
        for s in range(0, a.size, BLOCK_ELEMENTS):
            e = min(a.size, s + BLOCK_ELEMENTS)
            y = self._y[: e - s].view(np.float32)
            np.multiply(b[s:e], wb, out=y)
            np.multiply(a[s:e], wa, out=out[s:e])
            np.add(out[s:e], y, out=out[s:e])

    def _f64(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        wa, wb = self.wa64, self.wb64
        step = BLOCK_ELEMENTS // 2
        for s in range(0, a.size, step):
            e = min(a.size, s + step)
            y = self._y64[: e - s]
            np.multiply(b[s:e], wb, out=y)
            np.multiply(a[s:e], wa, out=out[s:e])
            np.add(out[s:e], y, out=out[s:e])


def soup_reference(dtype: str, a_bytes: bytes, b_bytes: bytes, alpha: float) -> bytes:
    """The definition, whole-array and slow: float32 (float64 for F64) compute, one rounding.
    Tests check the streaming kernels against this; bf16 rounding here goes through float64 division
    of the bit pattern, an independent formulation of round-to-nearest-even."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _reference(dtype, a_bytes, b_bytes, alpha)


def _reference(dtype: str, a_bytes: bytes, b_bytes: bytes, alpha: float) -> bytes:
    if alpha == 0:
        return bytes(a_bytes)
    if alpha == 1:
        return bytes(b_bytes)
    if dtype == "F64":
        a = np.frombuffer(a_bytes, np.float64)
        b = np.frombuffer(b_bytes, np.float64)
        return (np.float64(1.0 - alpha) * a + np.float64(alpha) * b).tobytes()
    if dtype == "BF16":
        a = (np.frombuffer(a_bytes, np.uint16).astype(np.uint32) << 16).view(np.float32)
        b = (np.frombuffer(b_bytes, np.uint16).astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.frombuffer(a_bytes, _NP_DTYPES[dtype]).astype(np.float32)
        b = np.frombuffer(b_bytes, _NP_DTYPES[dtype]).astype(np.float32)
    out = np.float32(1.0 - alpha) * a + np.float32(alpha) * b
    if dtype == "BF16":
        bits = out.view(np.uint32).astype(np.uint64)
        high, low = bits >> 16, bits & 0xFFFF
        round_up = (low > 0x8000) | ((low == 0x8000) & (high & 1 == 1))
        rounded = (high + round_up).astype(np.uint16)
        nan = np.isnan(out)
        rounded[nan] = (bits[nan] >> 16).astype(np.uint16) | 0x0040
        return rounded.tobytes()
    return out.astype(_NP_DTYPES[dtype]).tobytes()


# ---------------------------------------------------------------------------- plan


@dataclass
class _Piece:
    offset: int  # within the slice
    length: int
    dtype: str
    name: str


@dataclass
class _Run:
    """One contiguous read from a B shard into the B buffer."""

    offset: int  # within the slice
    length: int
    b_path: Path
    b_pos: int


@dataclass
class _Slice:
    shard_index: int
    a_pos: int  # absolute offset in the A shard == offset in the output shard
    length: int
    pieces: list[_Piece] = field(default_factory=list)
    runs: list[_Run] = field(default_factory=list)
    last_of_shard: bool = False


def _plan_slices(shard_index: int, tensors: list[TensorInfo], b_where: dict[str, tuple[Path, TensorInfo]],
                 slice_bytes: int) -> list[_Slice]:
    """Cut one A shard's data (tensors in file order) into slices of at most slice_bytes; a slice may hold
    several small tensors or part of a large one (cut on element boundaries)."""
    slices: list[_Slice] = []
    current: _Slice | None = None
    for t in tensors:
        itemsize = _ITEMSIZE.get(t.dtype, 1)
        b_path, b_info = b_where[t.name]
        done = 0
        while done < t.nbytes:
            if current is None or current.length >= slice_bytes - itemsize + 1:
                if current is not None:
                    slices.append(current)
                current = _Slice(shard_index, t.start + done, 0)
            room = slice_bytes - current.length
            take = min(t.nbytes - done, room - room % itemsize)
            piece = _Piece(current.length, take, t.dtype, t.name)
            current.pieces.append(piece)
            b_pos = b_info.start + done
            last = current.runs[-1] if current.runs else None
            if last and last.b_path == b_path and last.b_pos + last.length == b_pos \
                    and last.offset + last.length == piece.offset:
                last.length += take
            else:
                current.runs.append(_Run(piece.offset, take, b_path, b_pos))
            current.length += take
            done += take
    if current is not None:
        slices.append(current)
    if slices:
        slices[-1].last_of_shard = True
    return slices


# ---------------------------------------------------------------------------- I/O helpers


def _preadv_exact(fd: int, view: memoryview, pos: int, path: Path) -> None:
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], pos + got)
        if n == 0:
            raise PairstoreError(f"{path}: file ended early at byte {pos + got} (changed while reading?)")
        got += n


def _pwrite_all(fd: int, view: memoryview, pos: int) -> None:
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], pos + done)


class _WriteBack:
    """Start write-back of each written range early and wait for the range before it, so the final fsync
    has little left to do and dirty pages never pile up (Linux sync_file_range; elsewhere a no-op)."""

    _WAIT_BEFORE, _WRITE, _WAIT_AFTER = 1, 2, 4

    def __init__(self):
        self._fn = None
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fn = libc.sync_file_range
            fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
            fn.restype = ctypes.c_int
            self._fn = fn
        self._fd = -1
        self._start = self._end = self._prev_start = self._prev_end = 0

    def begin(self, fd: int, pos: int) -> None:
        self._fd, self._start, self._end, self._prev_start, self._prev_end = fd, pos, pos, pos, pos

    def wrote(self, end: int) -> None:
        self._end = end
        if self._fn is None or self._end - self._start < WRITEBACK_BYTES:
            return
        self._fn(self._fd, self._start, self._end - self._start, self._WRITE)
        if self._prev_end > self._prev_start:
            self._fn(self._fd, self._prev_start, self._prev_end - self._prev_start,
                     self._WAIT_BEFORE | self._WRITE | self._WAIT_AFTER)
            with contextlib.suppress(OSError):
                os.posix_fadvise(self._fd, self._prev_start, self._prev_end - self._prev_start,
                                 os.POSIX_FADV_DONTNEED)
        self._prev_start, self._prev_end = self._start, self._end
        self._start = self._end


class _InFlight:
    """One slice's input buffers; released to the pool when its three consumers are done with them."""

    __slots__ = ("sl", "abuf", "bbuf", "pending", "lock")

    def __init__(self, sl, abuf: bytearray, bbuf: bytearray):
        self.sl, self.abuf, self.bbuf = sl, abuf, bbuf
        self.pending = 3  # hash A, hash B, compute
        self.lock = threading.Lock()


class _Pipeline:
    """reader -> (hash A | hash B | compute) in parallel on the same read-only input buffers -> writer.

    Input buffer pairs and output buffers come from fixed pools, so memory does not grow with the model.
    """

    def __init__(self, in_pairs: int, out_buffers: int, slice_bytes: int):
        self.free_in: queue.Queue = queue.Queue()
        for _ in range(in_pairs):
            self.free_in.put((bytearray(slice_bytes), bytearray(slice_bytes)))
        self.free_out: queue.Queue = queue.Queue()
        for _ in range(out_buffers):
            self.free_out.put(bytearray(slice_bytes))
        self.to_hash_a: queue.Queue = queue.Queue()
        self.to_hash_b: queue.Queue = queue.Queue()
        self.to_compute: queue.Queue = queue.Queue()
        self.to_write: queue.Queue = queue.Queue()
        self.failed = threading.Event()
        self.errors: list[BaseException] = []

    def done(self, item: _InFlight) -> None:
        with item.lock:
            item.pending -= 1
            last = item.pending == 0
        if last:
            self.free_in.put((item.abuf, item.bbuf))

    def fail(self, e: BaseException) -> None:
        self.errors.append(e)
        self.failed.set()

    def get(self, q: queue.Queue):
        while True:
            try:
                return q.get(timeout=0.05)
            except queue.Empty:
                if self.failed.is_set():
                    raise _Stop() from None

    def thread(self, target, name: str) -> threading.Thread:
        def run():
            try:
                target()
            except _Stop:
                pass
            except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                self.fail(e)

        return threading.Thread(target=run, name=name, daemon=True)


class _Stop(Exception):
    pass


class _StreamHash:
    """SHA-256 of a file computed from the pieces read in order; falls back to re-reading the file when the
    pieces did not arrive in file order (B laid out differently from A)."""

    def __init__(self, path: Path, raw_header: bytes, size: int):
        self.path, self.size = path, size
        self.h = hashlib.sha256(raw_header)
        self.pos = len(raw_header)
        self.in_order = True

    def update(self, pos: int, data: memoryview) -> None:
        if self.in_order and pos == self.pos:
            self.h.update(data)
            self.pos += len(data)
        else:
            self.in_order = False

    def hexdigest(self) -> str:
        if self.in_order and self.pos == self.size:
            return self.h.hexdigest()
        return sha256_file(self.path)


# ---------------------------------------------------------------------------- checks


def _check_same_tensors(a_dir: Path, b_dir: Path, a_tensors, b_tensors) -> None:
    """BadInput naming the first difference, in A's file order: a missing tensor, a shape, a dtype."""
    b_by_name = {t.name: (p, t) for p, t in b_tensors}
    a_names = set()
    for a_path, t in a_tensors:
        a_names.add(t.name)
        if t.name not in b_by_name:
            raise BadInput(f"tensor is in A ({a_path.name}) but not in B {b_dir}", path=str(a_dir), field=t.name)
        b_path, u = b_by_name[t.name]
        if t.shape != u.shape:
            raise BadInput(f"shape mismatch: A has {list(t.shape)}, B has {list(u.shape)} ({b_path.name})",
                           path=str(a_dir), field=t.name)
        if t.dtype != u.dtype:
            raise BadInput(f"dtype mismatch: A has {t.dtype}, B has {u.dtype} ({b_path.name})",
                           path=str(a_dir), field=t.name)
    for b_path, u in b_tensors:
        if u.name not in a_names:
            raise BadInput(f"tensor is in B ({b_path.name}) but not in A {a_dir}", path=str(b_dir), field=u.name)


def _check_tokenizers(a_dir: Path, b_dir: Path) -> str:
    fa, fb = tokenizer_fingerprint(a_dir), tokenizer_fingerprint(b_dir)
    if fa != fb:
        differing = [n for n in FINGERPRINT_FILES
                     if (a_dir / n).is_file() != (b_dir / n).is_file()
                     or ((a_dir / n).is_file() and sha256_file(a_dir / n) != sha256_file(b_dir / n))]
        raise BadInput(f"tokenizers or chat templates differ ({', '.join(differing)}); a soup of models that "
                       f"tokenize differently is meaningless", path=str(b_dir), field=differing[0])
    return fa


def _check_output_dir(out_dir: Path, a_dir: Path, b_dir: Path, output_names: set[str]) -> None:
    resolved = out_dir.resolve()
    if resolved in (a_dir.resolve(), b_dir.resolve()):
        raise BadInput("the output folder must differ from both inputs", path=str(out_dir))
    if out_dir.exists():
        if not out_dir.is_dir():
            raise BadInput("output path exists and is not a folder", path=str(out_dir))
        stale = sorted(p.name for p in out_dir.iterdir()
                       if (p.name.endswith(".safetensors") or p.name == INDEX_NAME) and p.name not in output_names
                       and not (p.name == INDEX_NAME and INDEX_NAME in output_names))
        if stale:
            raise BadInput(f"output folder already holds other weights ({stale[0]}); use an empty folder",
                           path=str(out_dir))


def _read_evidence(bundle: Path) -> dict | None:
    p = bundle / EVIDENCE_FILE
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {"unreadable": str(p), "sha256": sha256_file(p)}


# ---------------------------------------------------------------------------- soup


def soup(a_dir, b_dir, alpha: float, out_dir, *, slice_bytes: int = DEFAULT_SLICE_BYTES,
         buffers: int = DEFAULT_BUFFERS, hash_output: bool = False) -> dict:
    """Write the bundle out = a + alpha*(b - a) to `out_dir`; return the evidence dict (also written to
    out_dir/training_evidence.json). Raises BadInput (exit 2) before writing anything when the inputs do
    not match: tensor names, shapes, dtypes, tokenizer files or chat template.

    The inputs' shard SHA-256s are always computed (as the data streams past). The output's are optional
    (`hash_output`): the output is a deterministic function of the hashed inputs and alpha, and hashing it
    costs CPU the I/O cannot hide on a busy machine."""
    started = time.perf_counter()
    a_dir, b_dir, out_dir = Path(a_dir), Path(b_dir), Path(out_dir)
    alpha = float(alpha)
    if not math.isfinite(alpha):
        raise BadInput(f"alpha must be a finite number, got {alpha}", field="alpha")
    if slice_bytes < 4096 or slice_bytes % 8:
        raise BadInput(f"slice_bytes must be a multiple of 8 and at least 4096, got {slice_bytes}",
                       field="slice_bytes")
    if buffers < 2:
        raise BadInput("buffers must be at least 2", field="buffers")

    a_tensors = bundle_tensors(a_dir)
    b_tensors = bundle_tensors(b_dir)
    _check_same_tensors(a_dir, b_dir, a_tensors, b_tensors)
    fingerprint = _check_tokenizers(a_dir, b_dir)

    # A shard with no tensors has nothing to soup but is still part of A's layout.
    a_shards = list_shards(a_dir)
    b_shards = list_shards(b_dir)
    a_headers = [read_shard_header(p) for p in a_shards]
    b_headers = {p: read_shard_header(p) for p in b_shards}
    has_index = (a_dir / INDEX_NAME).exists()
    output_names = {p.name for p in a_shards} | ({INDEX_NAME} if has_index else set())
    _check_output_dir(out_dir, a_dir, b_dir, output_names)

    b_where = {t.name: (p, t) for p, t in b_tensors}
    plans = [_plan_slices(i, h.tensors, b_where, slice_bytes) for i, h in enumerate(a_headers)]
    copy_only = {t.name for _, t in a_tensors if t.dtype not in FLOAT_DTYPES}
    mode = "copy_a" if alpha == 0 else "copy_b" if alpha == 1 else "compute"

    out_dir.mkdir(parents=True, exist_ok=True)
    tmp_paths = [out_dir / f".{p.name}.soup-{os.getpid()}.tmp" for p in a_shards]
    a_hashes = [_StreamHash(h.path, h.raw, h.file_size) for h in a_headers]
    b_hashes = {p: _StreamHash(p, h.raw, h.file_size) for p, h in b_headers.items()}
    out_hashes = [hashlib.sha256(h.raw) for h in a_headers] if hash_output else None
    pipe = _Pipeline(buffers, max(2, buffers - 1), slice_bytes)
    kernel = SoupKernel(alpha)
    fds: dict[Path, int] = {}

    def fd_of(path: Path) -> int:
        if path not in fds:
            fds[path] = os.open(path, os.O_RDONLY)
            with contextlib.suppress(OSError):
                os.posix_fadvise(fds[path], 0, 0, os.POSIX_FADV_SEQUENTIAL)
        return fds[path]

    def reader() -> None:
        for plan in plans:
            for sl in plan:
                abuf, bbuf = pipe.get(pipe.free_in)
                a_path = a_shards[sl.shard_index]
                _preadv_exact(fd_of(a_path), memoryview(abuf)[: sl.length], sl.a_pos, a_path)
                for run in sl.runs:
                    _preadv_exact(fd_of(run.b_path), memoryview(bbuf)[run.offset: run.offset + run.length],
                                  run.b_pos, run.b_path)
                item = _InFlight(sl, abuf, bbuf)
                for q in (pipe.to_hash_a, pipe.to_hash_b, pipe.to_compute):
                    q.put(item)
        for q in (pipe.to_hash_a, pipe.to_hash_b, pipe.to_compute):
            q.put(None)

    # Hashing runs in two threads of its own (hashlib releases the GIL), beside the compute: on two cores
    # the reads, the SHA-256 of each input and the arithmetic all proceed at once.
    def hash_a() -> None:
        while (item := pipe.get(pipe.to_hash_a)) is not None:
            sl = item.sl
            a_hashes[sl.shard_index].update(sl.a_pos, memoryview(item.abuf)[: sl.length])
            pipe.done(item)

    def hash_b() -> None:
        while (item := pipe.get(pipe.to_hash_b)) is not None:
            for run in item.sl.runs:
                b_hashes[run.b_path].update(run.b_pos, memoryview(item.bbuf)[run.offset: run.offset + run.length])
            pipe.done(item)

    def writer() -> None:
        writeback = _WriteBack()
        out_fd = -1
        try:
            while (item := pipe.get(pipe.to_write)) is not None:
                sl, obuf = item
                if out_fd < 0:
                    header = a_headers[sl.shard_index]
                    out_fd = os.open(tmp_paths[sl.shard_index], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    _pwrite_all(out_fd, memoryview(header.raw), 0)
                    writeback.begin(out_fd, header.data_start)
                _pwrite_all(out_fd, memoryview(obuf)[: sl.length], sl.a_pos)
                writeback.wrote(sl.a_pos + sl.length)
                pipe.free_out.put(obuf)
                if sl.last_of_shard:
                    os.fsync(out_fd)
                    os.close(out_fd)
                    out_fd = -1
        finally:
            if out_fd >= 0:
                os.close(out_fd)

    def compute(item: _InFlight, obuf: bytearray) -> None:
        sl = item.sl
        for piece in sl.pieces:
            end = piece.offset + piece.length
            av = memoryview(item.abuf)[piece.offset: end]
            bv = memoryview(item.bbuf)[piece.offset: end]
            ov = memoryview(obuf)[piece.offset: end]
            if piece.name in copy_only:
                if av != bv:
                    raise BadInput(f"{piece.dtype} tensor differs between A and B (non-float tensors "
                                   f"are copied, so they must be equal)", path=str(b_dir), field=piece.name)
                ov[:] = av
            elif mode == "compute":
                kernel.apply(piece.dtype, av, bv, ov)
            else:
                ov[:] = av if mode == "copy_a" else bv

    threads = [pipe.thread(reader, "soup-reader"), pipe.thread(hash_a, "soup-hash-a"),
               pipe.thread(hash_b, "soup-hash-b"), pipe.thread(writer, "soup-writer")]
    # Shards with no tensors have no slices: write them (header only) here.
    for i, plan in enumerate(plans):
        if not plan:
            with open(tmp_paths[i], "wb") as f:
                f.write(a_headers[i].raw)
                os.fsync(f.fileno())
    try:
        for t in threads:
            t.start()
        while (item := pipe.get(pipe.to_compute)) is not None:
            obuf = pipe.get(pipe.free_out)
            compute(item, obuf)
            if out_hashes is not None:
                out_hashes[item.sl.shard_index].update(memoryview(obuf)[: item.sl.length])
            pipe.done(item)
            pipe.to_write.put((item.sl, obuf))
        pipe.to_write.put(None)
        for t in threads:
            t.join()
        if pipe.errors:
            raise pipe.errors[0]
    except _Stop:
        for t in threads:
            t.join()
        _remove(tmp_paths)
        raise pipe.errors[0] from None
    except BaseException:
        pipe.failed.set()
        for t in threads:
            if t.is_alive():
                t.join()
        _remove(tmp_paths)
        raise
    finally:
        for fd in fds.values():
            os.close(fd)

    for tmp, shard in zip(tmp_paths, a_shards):
        os.replace(tmp, out_dir / shard.name)
    total_size = sum(h.file_size - h.data_start for h in a_headers)
    if has_index:
        write_index(out_dir, read_index(a_dir), total_size)
    serving = copy_serving_files(a_dir, out_dir)
    _fsync_dir(out_dir)

    dtypes: dict[str, int] = {}
    for _, t in a_tensors:
        dtypes[t.dtype] = dtypes.get(t.dtype, 0) + 1
    evidence = {
        "kind": "soup",
        "formula": "out = a + alpha*(b - a), computed in float32 as float32(1-alpha)*a + float32(alpha)*b "
                   "and rounded once to the stored dtype (round to nearest even); alpha 0/1 copy a/b",
        "alpha": alpha,
        "a": {"path": str(a_dir.resolve()), "shards_sha256": {h.path.name: h.hexdigest() for h in a_hashes},
              "training_evidence": _read_evidence(a_dir)},
        "b": {"path": str(b_dir.resolve()),
              "shards_sha256": {p.name: b_hashes[p].hexdigest() for p in b_shards},
              "training_evidence": _read_evidence(b_dir)},
        "output": {"path": str(out_dir.resolve()),
                   "shards": [p.name for p in a_shards],
                   "shards_sha256": None if out_hashes is None
                   else {p.name: h.hexdigest() for p, h in zip(a_shards, out_hashes)},
                   "total_size": total_size, "tensors": len(a_tensors), "dtypes": dtypes,
                   "layout": "A's shards and headers", "serving_files": serving},
        "tokenizer_fingerprint": fingerprint,
        "slice_bytes": slice_bytes,
        "kernel": "C (train/_soup_kernel.c) for BF16, numpy otherwise" if kernel.native else "numpy",
        "versions": {"numpy": np.__version__, "pairstore": _pairstore_version()},
        "seconds": round(time.perf_counter() - started, 3),
    }
    atomic_write_json(out_dir / EVIDENCE_FILE, evidence)
    return evidence


def _remove(paths) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            Path(p).unlink()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pairstore_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pairstore")
    except PackageNotFoundError:
        return "unknown"


__all__ = ["soup", "soup_reference", "SoupKernel", "SINGLE_NAME"]
