"""Merge method `linear`: the streaming soup of two bundles, out = a + alpha * (b - a), slice by slice.

    pairstore train soup runs/r3-merged runs/r2-merged --alpha 0.5 --out runs/r3-soup
    train.soup.soup("runs/r3-merged", "runs/r2-merged", 0.5, "runs/r3-soup")

Both bundles must hold the same tensors (names, shapes, dtypes) as safetensors shards
and the same tokenizer and chat template. The output has A's shard layout (same file
names, same headers, same tensor order) and A's serving files; the shared step
(train.merges.registry.merge) adds merge_spec.json and `training_evidence.json`, with
both inputs' shard SHA-256s (computed here as the data streams past) and alpha.

Exactness (train/soup_kernel.py): for 0 < alpha < 1 every element is computed in float32 as
`(1 - alpha) * a + alpha * b` and rounded once to the stored dtype with round-to-nearest-even;
alpha = 0 and alpha = 1 copy the bytes of a or b. float64 tensors are computed in float64; integer,
bool and float8 tensors must be byte-identical in both inputs (they are copied; a difference is an
error).

Memory and speed. Nothing holds a tensor, let alone a model: the data of A's shards is cut into fixed
slices (a tensor larger than a slice, e.g. an embedding of a GB, spans several) and flows through a
small pipeline of named stages over fixed pools of preallocated buffers:

    read (os.preadv, prefetched in a thread)  ->  hash A | hash B | compute  ->  write (os.pwrite)

The two hashers compute A's and B's SHA-256 as the data streams past while the calling thread
computes from the same read-only buffers into an output buffer; the writer starts write-back early
(sync_file_range) so the final fsync has little left. Peak memory is about
slice_bytes * (3 * buffers - 1) plus the interpreter (~220 MB at the defaults), whatever the model
size. Output shards are written under temporary names and renamed when all are done.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pairstore.errors import BadInput
from pairstore.options import option
from pairstore.prefetch import prefetch
from pairstore.progress import Progress, as_progress
from train.bundle import (
    INDEX_NAME,
    TensorInfo,
    bundle_tensors,
    check_bundle,
    check_same_tensors,
    list_shards,
    read_index,
    read_shard_header,
    write_index,
)
from train.bundle_identity import require_same_model_family
from train.merges.registry import Input, Merge, Written, register
from train.shard_io import OpenFiles, StreamHash, WriteBack, preadv_exact, pwrite_all
from train.soup_kernel import FLOAT_DTYPES, ITEMSIZE, SoupKernel

MIB = 1 << 20
DEFAULT_SLICE_BYTES = 16 << 20
MIN_SLICE_BYTES = 4096
DEFAULT_BUFFERS = 4
# Output bytes between write-back kicks (see WriteBack).
WRITEBACK_BYTES = 32 << 20
# How often a stage blocked on a queue looks whether another stage failed.
_POLL_S = 0.05


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


def _plan_slices(
    shard_index: int, tensors: list[TensorInfo], b_where: dict[str, tuple[Path, TensorInfo]], slice_bytes: int
) -> list[_Slice]:
    """Cut one A shard's data (tensors in file order) into slices of at most slice_bytes; a slice may hold
    several small tensors or part of a large one (cut on element boundaries)."""
    slices: list[_Slice] = []
    current: _Slice | None = None
    for t in tensors:
        itemsize = ITEMSIZE.get(t.dtype, 1)
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
            if (
                last
                and last.b_path == b_path
                and last.b_pos + last.length == b_pos
                and last.offset + last.length == piece.offset
            ):
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


# ---------------------------------------------------------------------------- the pipeline's stages


class _Stop(Exception):
    """A stage gives up because another one failed (the first failure is what soup() raises)."""


class _Failure:
    """What the stages share about errors: the first one raised anywhere, and a get that gives up once
    there is one, so no stage waits forever on a stage that died."""

    def __init__(self):
        self.event = threading.Event()
        self.errors: list[BaseException] = []

    def set(self, e: BaseException) -> None:
        self.errors.append(e)
        self.event.set()

    def get(self, q: queue.Queue):
        while True:
            try:
                return q.get(timeout=_POLL_S)
            except queue.Empty:
                if self.event.is_set():
                    raise _Stop() from None


class _InFlight:
    """One slice's input buffers; back to the pool when its three consumers (hash A, hash B, compute)
    are done with them."""

    __slots__ = ("sl", "abuf", "bbuf", "pending", "lock")

    def __init__(self, sl, abuf: bytearray, bbuf: bytearray):
        self.sl, self.abuf, self.bbuf = sl, abuf, bbuf
        self.pending = 3
        self.lock = threading.Lock()


class _Buffers:
    """The fixed pools: input buffer pairs (A, B) and output buffers, allocated once."""

    def __init__(self, in_pairs: int, out_buffers: int, slice_bytes: int):
        self.free_in: queue.Queue = queue.Queue()
        for _ in range(in_pairs):
            self.free_in.put((bytearray(slice_bytes), bytearray(slice_bytes)))
        self.free_out: queue.Queue = queue.Queue()
        for _ in range(out_buffers):
            self.free_out.put(bytearray(slice_bytes))

    def done_with(self, item: _InFlight) -> None:
        with item.lock:
            item.pending -= 1
            last = item.pending == 0
        if last:
            self.free_in.put((item.abuf, item.bbuf))


class _Worker:
    """One stage in a thread of its own: `handle(item)` for each item submitted, until finish()."""

    def __init__(self, name: str, handle: Callable, failure: _Failure):
        self.handle, self.failure = handle, failure
        self.inbox: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            while (item := self.failure.get(self.inbox)) is not None:
                self.handle(item)
        except _Stop:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            self.failure.set(e)
        finally:
            self.close()

    def close(self) -> None:
        """Release what the stage holds (after its last item or a failure)."""

    def submit(self, item) -> None:
        self.inbox.put(item)


@dataclass
class _Job:
    """A checked and planned soup: what every stage reads."""

    a_dir: Path
    b_dir: Path
    alpha: float
    a_shards: list[Path]
    a_headers: list
    b_shards: list[Path]
    plans: list[list[_Slice]]
    copy_only: set[str]
    tmp_paths: list[Path]
    a_hashes: list[StreamHash]
    b_hashes: dict[Path, StreamHash]
    out_hashes: list | None

    @property
    def mode(self) -> str:
        return "copy_a" if self.alpha == 0 else "copy_b" if self.alpha == 1 else "compute"


def _read_slices(job: _Job, buffers: _Buffers, files: OpenFiles, failure: _Failure) -> Iterator[_InFlight]:
    """Stage read: each slice's A bytes and the matching B bytes into a free input buffer pair."""
    for plan in job.plans:
        for sl in plan:
            abuf, bbuf = failure.get(buffers.free_in)
            a_path = job.a_shards[sl.shard_index]
            preadv_exact(files.fd(a_path), memoryview(abuf)[: sl.length], sl.a_pos, a_path)
            for run in sl.runs:
                preadv_exact(
                    files.fd(run.b_path),
                    memoryview(bbuf)[run.offset : run.offset + run.length],
                    run.b_pos,
                    run.b_path,
                )
            yield _InFlight(sl, abuf, bbuf)


def _hash_a(job: _Job, buffers: _Buffers, item: _InFlight) -> None:
    """Stage hash A: A's shard SHA-256 from the bytes as they stream past."""
    sl = item.sl
    job.a_hashes[sl.shard_index].update(sl.a_pos, memoryview(item.abuf)[: sl.length])
    buffers.done_with(item)


def _hash_b(job: _Job, buffers: _Buffers, item: _InFlight) -> None:
    """Stage hash B: likewise for B's shards (re-read at the end where B's layout differs from A's)."""
    for run in item.sl.runs:
        job.b_hashes[run.b_path].update(
            run.b_pos, memoryview(item.bbuf)[run.offset : run.offset + run.length]
        )
    buffers.done_with(item)


def _compute(job: _Job, kernel: SoupKernel, item: _InFlight, obuf: bytearray) -> None:
    """Stage compute (the calling thread): one slice's output bytes."""
    sl = item.sl
    for piece in sl.pieces:
        end = piece.offset + piece.length
        av = memoryview(item.abuf)[piece.offset : end]
        bv = memoryview(item.bbuf)[piece.offset : end]
        ov = memoryview(obuf)[piece.offset : end]
        if piece.name in job.copy_only:
            if av != bv:
                raise BadInput(
                    f"{piece.dtype} tensor differs between A and B (non-float tensors "
                    f"are copied, so they must be equal)",
                    path=str(job.b_dir),
                    field=piece.name,
                )
            ov[:] = av
        elif job.mode == "compute":
            kernel.apply(piece.dtype, av, bv, ov)
        else:
            ov[:] = av if job.mode == "copy_a" else bv


class _ShardWriter(_Worker):
    """Stage write: output slices into the temporary shard files, fsynced shard by shard."""

    def __init__(self, job: _Job, buffers: _Buffers, failure: _Failure):
        super().__init__("soup-writer", self._write, failure)
        self.job, self.buffers = job, buffers
        self.writeback = WriteBack()
        self.out_fd = -1

    def _write(self, item) -> None:
        sl, obuf = item
        if self.out_fd < 0:
            header = self.job.a_headers[sl.shard_index]
            self.out_fd = os.open(
                self.job.tmp_paths[sl.shard_index], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644
            )
            pwrite_all(self.out_fd, memoryview(header.raw), 0)
            self.writeback.begin(self.out_fd, header.data_start)
        pwrite_all(self.out_fd, memoryview(obuf)[: sl.length], sl.a_pos)
        self.writeback.wrote(sl.a_pos + sl.length)
        self.buffers.free_out.put(obuf)
        if sl.last_of_shard:
            os.fsync(self.out_fd)
            os.close(self.out_fd)
            self.out_fd = -1

    def close(self) -> None:
        if self.out_fd >= 0:
            os.close(self.out_fd)
            self.out_fd = -1


def _run_pipeline(
    job: _Job, kernel: SoupKernel, slice_bytes: int, n_buffers: int, progress: Progress | None = None
) -> None:
    """read -> hash A | hash B | compute -> write, over every slice of the job; raises the first failure.
    `progress` advances by the bytes of each slice computed (one stage, its total A's tensor bytes)."""
    with as_progress(progress).stage(
        "soup", total=sum(sl.length for plan in job.plans for sl in plan), unit="bytes"
    ) as stage:
        _run_stages(job, kernel, slice_bytes, n_buffers, stage.advance)


def _run_stages(
    job: _Job, kernel: SoupKernel, slice_bytes: int, n_buffers: int, advance: Callable[[int], None]
) -> None:
    failure = _Failure()
    buffers = _Buffers(n_buffers, max(2, n_buffers - 1), slice_bytes)
    files = OpenFiles()
    workers = [
        _Worker("soup-hash-a", lambda item: _hash_a(job, buffers, item), failure),
        _Worker("soup-hash-b", lambda item: _hash_b(job, buffers, item), failure),
        _ShardWriter(job, buffers, failure),
    ]
    hash_a, hash_b, writer = workers
    slices = prefetch(_read_slices(job, buffers, files, failure), depth=n_buffers, name="soup-read")
    try:
        for w in workers:
            w.thread.start()
        for item in slices:
            hash_a.submit(item)
            hash_b.submit(item)
            obuf = failure.get(buffers.free_out)
            _compute(job, kernel, item, obuf)
            if job.out_hashes is not None:
                job.out_hashes[item.sl.shard_index].update(memoryview(obuf)[: item.sl.length])
            buffers.done_with(item)
            writer.submit((item.sl, obuf))
            advance(item.sl.length)
        for w in workers:
            w.submit(None)
        for w in workers:
            w.thread.join()
    except BaseException as e:
        if not isinstance(e, _Stop):
            failure.set(e)  # every stage gives up at its next wait
        failure.event.set()
        slices.close()
        for w in workers:
            if w.thread.is_alive():
                w.thread.join()
        raise failure.errors[0] from None
    finally:
        slices.close()
        files.close()
    if failure.errors:
        raise failure.errors[0]


# ---------------------------------------------------------------------------- the method


@dataclass(frozen=True, kw_only=True)
class LinearOptions:
    a: str = option(help="The first bundle (alpha 0).", argument=True, path=True)
    b: str = option(help="The second bundle (alpha 1).", argument=True, path=True)
    alpha: float = option(help="Weight of B: out = A + alpha*(B - A).")
    a_name: str | None = option(
        None, help="Checkpoint name of A (default: the name A is registered under, else its folder's)."
    )
    b_name: str | None = option(
        None, help="Checkpoint name of B (default: the name B is registered under, else its folder's)."
    )
    slice_mb: float = option(
        DEFAULT_SLICE_BYTES / MIB,
        help="Streaming slice size in MiB (memory is about 11 slices plus the interpreter).",
    )
    buffers: int = option(DEFAULT_BUFFERS, help="Slices in flight per stage (at least 2).", min=2)


def _plan_job(a_dir: Path, b_dir: Path, alpha: float, slice_bytes: int) -> tuple[_Job, str, bool]:
    """Check the inputs (BadInput before anything is written) and cut the work into slices. Returns
    (job, tokenizer fingerprint, whether A has an index)."""
    for bundle in (a_dir, b_dir):
        check_bundle(bundle)  # headers, config, tokenizer, remote code: before a byte is read or copied
    a_tensors = bundle_tensors(a_dir)
    b_tensors = bundle_tensors(b_dir)
    check_same_tensors(a_dir, b_dir, a_tensors, b_tensors)
    fingerprint = require_same_model_family(a_dir, b_dir, what="a soup").sha256
    # A shard with no tensors has nothing to soup but is still part of A's layout.
    a_shards = list_shards(a_dir)
    b_shards = list_shards(b_dir)
    a_headers = [read_shard_header(p) for p in a_shards]
    b_headers = {p: read_shard_header(p) for p in b_shards}
    b_where = {t.name: (p, t) for p, t in b_tensors}
    job = _Job(
        a_dir=a_dir,
        b_dir=b_dir,
        alpha=alpha,
        a_shards=a_shards,
        a_headers=a_headers,
        b_shards=b_shards,
        plans=[_plan_slices(i, h.tensors, b_where, slice_bytes) for i, h in enumerate(a_headers)],
        copy_only={t.name for _, t in a_tensors if t.dtype not in FLOAT_DTYPES},
        tmp_paths=[],  # the shards' paths in the staged folder, set when it exists
        a_hashes=[StreamHash(h.path, h.raw, h.file_size) for h in a_headers],
        b_hashes={p: StreamHash(p, h.raw, h.file_size) for p, h in b_headers.items()},
        out_hashes=None,
    )
    return job, fingerprint, (a_dir / INDEX_NAME).exists()


@register(
    "linear",
    version="1",
    kind="soup",
    options=LinearOptions,
    command="soup",
    example="{bundle} {other} --alpha 0.5",
)
def linear(options: LinearOptions) -> Merge:
    """Soup two bundles with the same tensors: OUT = A + alpha*(B - A), streamed shard by shard."""
    a_dir, b_dir, alpha = Path(options.a), Path(options.b), options.alpha
    slice_bytes = int(options.slice_mb * MIB)
    if slice_bytes < MIN_SLICE_BYTES or slice_bytes % 8 or slice_bytes != options.slice_mb * MIB:
        raise BadInput(
            f"the slice must be a whole number of bytes, a multiple of 8 and at least {MIN_SLICE_BYTES}, "
            f"got {options.slice_mb} MiB",
            field="slice_mb",
        )
    job, fingerprint, has_index = _plan_job(a_dir, b_dir, alpha, slice_bytes)
    total_size = sum(h.file_size - h.data_start for h in job.a_headers)

    def write(stage: Path, progress: Progress, hash_output: bool) -> Written:
        kernel = SoupKernel(alpha)
        job.tmp_paths = [stage / p.name for p in job.a_shards]
        if hash_output:  # the output is a deterministic function of the hashed inputs: hashed when asked
            job.out_hashes = [hashlib.sha256(h.raw) for h in job.a_headers]
        # Shards with no tensors have no slices: their header is the whole file.
        for i, plan in enumerate(job.plans):
            if not plan:
                with open(job.tmp_paths[i], "wb") as f:
                    f.write(job.a_headers[i].raw)
        _run_pipeline(job, kernel, slice_bytes, options.buffers, progress)
        if has_index:
            write_index(stage, read_index(a_dir), total_size)
        return Written(
            summary=f"soup: {sum(len(h.tensors) for h in job.a_headers)} tensors, {total_size} bytes in "
            f"{len(job.a_shards)} shard(s), alpha={alpha:g}",
            fields={
                "kernel": "C (train/_soup_kernel.c) for BF16, numpy otherwise" if kernel.native else "numpy",
                "versions": {"numpy": np.__version__},
            },
            hashes={
                "a": {h.path.name: h.hexdigest() for h in job.a_hashes},
                "b": {p.name: job.b_hashes[p].hexdigest() for p in job.b_shards},
            },
            output_hashes=None
            if job.out_hashes is None
            else {p.name: h.hexdigest() for p, h in zip(job.a_shards, job.out_hashes)},
        )

    return Merge(
        inputs=[Input("a", a_dir, options.a_name), Input("b", b_dir, options.b_name)],
        serving_from=a_dir,
        out_bytes=sum(h.file_size for h in job.a_headers),
        write=write,
        fields={
            "formula": "out = a + alpha*(b - a), computed in float32 as float32(1-alpha)*a + "
            "float32(alpha)*b and rounded once to the stored dtype (round to nearest even); "
            "alpha 0/1 copy a/b",
            "alpha": alpha,
            "layout": "A's shards and headers",
            "tokenizer_fingerprint": fingerprint,
            "slice_bytes": slice_bytes,
        },
        alpha=alpha,
    )
