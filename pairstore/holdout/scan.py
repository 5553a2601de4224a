"""The cheap stages of holdout matching, streamed over every candidate row in chunks
(pairstore.holdout.matching runs them and checks what they find).

    scan = scan_candidates(store, "_gate_cand", needle_hashes, vocab3, bench_vocab)
    scan.exact        # (row_index, needle hash, "user" | "other"): rows whose text may equal a needle
    scan.grams        # arrow (row_index, ngram): word 3-grams the rows share with the needles' words
    scan.benchmark    # (row_index, benchmark, item_id): 13-gram overlaps with registered benchmark items

Rows stay in DuckDB and arrive CHUNK_ROWS at a time as Arrow; nothing here loops over characters in
Python. Every text is read with the lm-evaluation-harness normalization (ASCII lower case, ASCII
punctuation to spaces, split on whitespace; pairstore.holdout.ngrams), which for plain ASCII text without
escapes or markup gives the same words as pairstore.normalize.word_text (tests/base/test_normalize.py
checks it). A text holding anything else (non-ASCII or control characters, an HTML entity, a backslash
escape, a chat-template or prompt-format marker, an HTML tag: normalize.needs_fold) is first put through
word_text in Python, so look-alike letters, invisible characters, escapes and markup are undone before it
is read.

- exact: the "loose compact hash" of the user turns (xxh3-64 of the normalized words with the spaces
  left out) and of each system or assistant turn, compared with the needles'. It is coarser than the
  match key (arithmetic signs are left out), so it never misses one; matching compares the match-key
  texts of what it finds.
- grams: only windows made of words some needle uses can match, so only those are kept
  (ngrams.Vocabulary).

The rows spared from text matching (tasks the store generated) are not read here at all: matching
compares their stored match keys in SQL.
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from pairstore.holdout.ngrams import Vocabulary, text_ngram_table, utf8_buffers
from pairstore.normalize import NEEDS_WORD_TEXT_PATTERN, word_text

if TYPE_CHECKING:
    from pairstore.store.store import Store

CHUNK_ROWS = 20_000
GRAM_WORDS = 3

# Lower-case ASCII; remove ASCII punctuation and whitespace (the loose compact form).
_LOWER = bytes.maketrans(string.ascii_uppercase.encode(), string.ascii_lowercase.encode())
_LOOSE_DELETE = (string.punctuation + " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f").encode()
_DELETE_FLAGS = bytes(1 if b in _LOOSE_DELETE else 0 for b in range(256))
# Bytes that send a text through word_text: non-ASCII and the controls word_text removes.
_FOLD_FLAGS = bytes(
    1 if b >= 0x80 or b in (*range(0, 9), *range(0x0E, 0x1C), 0x7F) else 0 for b in range(256)
)
_FOLD_TABLE = np.frombuffer(_FOLD_FLAGS, dtype=np.uint8).astype(bool)
_DELETE_TABLE = np.frombuffer(_DELETE_FLAGS, dtype=np.uint8).astype(bool)
# Every alternative of NEEDS_WORD_TEXT_PATTERN holds one of these bytes (an entity's "&", an escape's
# backslash, "_x", a URL escape's "%", markup's "<" or "[", a role marker's ":"; tests/holdout/test_kernels.py
# checks it on the pattern itself), so a text without any cannot match and RE2 reads only the texts that
# hold one.
NEEDS_WORD_TEXT_TRIGGERS = b"&\\_%<[:"
_TRIGGER_TABLE = np.zeros(256, dtype=bool)
_TRIGGER_TABLE[list(NEEDS_WORD_TEXT_TRIGGERS)] = True

# (row_index, benchmark, item_id) of the registered benchmark items whose n-grams are among (row_index,
# ngram) pairs: pairstore.holdout.ngrams.lookup_ngrams on the store.
BenchmarkLookup = Callable[[np.ndarray, np.ndarray], list[tuple[int, str, str]]]
# What the benchmark stage reads with: (vocabulary of the registered items, n, lookup).
BenchmarkScan = tuple[Vocabulary, int, BenchmarkLookup]


def _large_strings(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A string array as one large_string array, nulls read as empty."""
    arr = pc.fill_null(arr.cast(pa.large_string()), "")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_string())
    return arr


def needs_fold_mask(arr: pa.Array) -> np.ndarray:
    """Per row: the text needs pairstore.normalize.word_text first (a non-ASCII or control byte, an
    escape or markup: normalize.needs_fold; the pattern is run by RE2 on the texts that hold one of its
    trigger bytes)."""
    from pairstore.holdout.kernels import rows_with_bytes

    arr = _large_strings(arr)
    data, offsets = utf8_buffers(arr)
    flagged, triggered = rows_with_bytes(data, np.ascontiguousarray(offsets), _FOLD_TABLE, _TRIGGER_TABLE)
    ask = np.flatnonzero(triggered & ~flagged)
    if len(ask):
        found = pc.match_substring_regex(arr.take(pa.array(ask)), NEEDS_WORD_TEXT_PATTERN, ignore_case=True)
        flagged[ask] = found.to_numpy(zero_copy_only=False)
    return flagged


def loose_hashes(arr: pa.Array, lengths: np.ndarray | None = None) -> np.ndarray:
    """xxh3-64 of each text lower-cased with ASCII punctuation and whitespace removed (uint64 per row).

    Given `lengths` (sorted byte lengths of that loose form), only texts of one of those lengths are
    hashed (a text of another length cannot equal a needle); the others read 0."""
    from pairstore.holdout.kernels import rows_kept_bytes

    data, offsets = utf8_buffers(_large_strings(arr))
    offsets = np.ascontiguousarray(offsets)
    kept = rows_kept_bytes(data, offsets, _DELETE_TABLE)
    out = np.zeros(len(kept), dtype=np.uint64)
    rows = np.arange(len(kept)) if lengths is None else np.flatnonzero(np.isin(kept, lengths))
    for i in rows.tolist():
        text = data[int(offsets[i]) : int(offsets[i + 1])].tobytes()
        out[i] = xxhash.xxh3_64_intdigest(text.translate(_LOWER, _LOOSE_DELETE))
    return out


def loose_length(text: str) -> int:
    """The byte length of a text's loose form (what loose_hashes hashes)."""
    return len(text.encode("utf-8").translate(_LOWER, _LOOSE_DELETE))


def loose_hash(text: str) -> int:
    """loose_hashes of one word text (a needle)."""
    return int(loose_hashes(pa.array([text], pa.large_string()))[0])


def folded(arr: pa.Array) -> pa.Array:
    """The texts (as large strings), with every one that needs it replaced by its word_text."""
    arr = _large_strings(arr)
    mask = needs_fold_mask(arr)
    if not mask.any():
        return arr
    # only the texts that need it go to Python and back
    texts = arr.filter(pa.array(mask)).to_pylist()
    return pc.replace_with_mask(
        arr, pa.array(mask), pa.array([word_text(t) for t in texts], pa.large_string())
    )


@dataclass
class Scan:
    # (row_index, needle loose hash, "user" | "other")
    exact: list[tuple[int, int, str]] = field(default_factory=list)
    # arrow tables (row_index, ngram); while streaming, None for a chunk without any (dropped at the end)
    grams: list[pa.Table | None] = field(default_factory=list)
    # arrow tables (row_index, ngram) in benchmark words, as grams
    bench_grams: list[pa.Table | None] = field(default_factory=list)
    # (row_index, benchmark, item_id)
    benchmark: list[tuple[int, str, str]] = field(default_factory=list)
    rows: int = 0  # rows read

    def gram_table(self) -> pa.Table:
        if not self.grams:
            return pa.table({"row_index": pa.array([], pa.int64()), "ngram": pa.array([], pa.uint64())})
        return pa.concat_tables(self.grams)


def _exact(
    out: Scan,
    row_index: np.ndarray,
    texts: pa.Array,
    wanted: np.ndarray,
    where: str,
    lengths: np.ndarray | None = None,
) -> None:
    """Rows whose (already folded) text has a wanted loose hash."""
    if not len(wanted) or len(texts) == 0:
        return
    hashes = loose_hashes(texts, lengths)
    for i in np.flatnonzero(np.isin(hashes, wanted)).tolist():
        out.exact.append((int(row_index[i]), int(hashes[i]), where))


class GramLookup:
    """Membership in a sorted array of n-gram hashes, for the hundreds of millions of row grams a scan looks
    up: a bit table indexed by the low bits of the hash answers "not a needle's" for almost every gram
    with one memory read, and only the few that pass are looked up in the sorted array."""

    def __init__(self, sorted_hashes: np.ndarray) -> None:
        self.sorted = np.ascontiguousarray(sorted_hashes, dtype=np.uint64)
        self._kernel_bits: tuple[np.ndarray, np.uint64] | None = None
        size = 1 << max(16, min(24, (64 * max(len(sorted_hashes), 1)).bit_length()))
        self.mask = np.uint64(size - 1)
        self._table: np.ndarray | None = None  # contains()'s bit table, made when first asked

    def __len__(self) -> int:
        return len(self.sorted)

    def kernel_bits(self) -> tuple[np.ndarray, np.uint64]:
        """The packed bit table pairstore.holdout.kernels filters with (made once)."""
        if self._kernel_bits is None:
            from pairstore.holdout.kernels import gram_bits

            self._kernel_bits = gram_bits(self.sorted)
        return self._kernel_bits

    def contains(self, grams: np.ndarray) -> np.ndarray:
        """A boolean mask: which of `grams` (uint64) are in the array."""
        if self._table is None:  # the kernels filter with their own packed table (kernel_bits)
            self._table = np.zeros(int(self.mask) + 1, dtype=bool)
            self._table[self.sorted & self.mask] = True
        found = np.zeros(len(grams), dtype=bool)
        maybe = np.flatnonzero(self._table[grams & self.mask])
        if len(maybe) and len(self.sorted):
            some = grams[maybe]
            at = np.searchsorted(self.sorted, some)
            at[at == len(self.sorted)] = 0
            found[maybe] = self.sorted[at] == some
        return found


def _grams(
    row_index: np.ndarray, hay: pa.Array, vocab: Vocabulary, n: int, wanted: GramLookup | None = None
) -> pa.Table | None:
    """(row_index, ngram) of the n-grams of `hay` made only of the vocabulary's words and, given `wanted`
    (sorted), among those (on a few threads: Arrow and numpy release the GIL, ngrams.text_ngram_table)."""
    if wanted is not None and not len(wanted):
        return None
    # Only what some needle holds can count (`lookup`); random windows of common words would fill memory.
    table = text_ngram_table(vocab, hay, n, lookup=wanted)
    if not table.num_rows:
        return None
    docs = table["doc"].to_numpy()
    grams = table["ngram"].to_numpy()
    return pa.table(
        {"row_index": pa.array(row_index[docs], pa.int64()), "ngram": pa.array(grams, pa.uint64())}
    )


def _stream(
    out: Scan,
    reader: pa.RecordBatchReader,
    wanted: np.ndarray,
    vocab3: tuple[Vocabulary, GramLookup] | None,
    bench: BenchmarkScan | None,
    lengths: np.ndarray | None = None,
    other_max_bytes: int | None = None,
) -> None:
    # The n-gram pass of a chunk (compiled, without the GIL) runs in a thread while the next chunk is
    # read, folded and hashed here: the two halves of the work then share the cores. The results are
    # collected in chunk order.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pairstore-gate-grams") as pool:
        pending: list[Future[tuple[str, pa.Table | None]]] = []
        try:
            _stream_chunks(out, reader, wanted, vocab3, bench, lengths, other_max_bytes, pool, pending)
            for future in pending:
                kind, table = future.result()
                (out.bench_grams if kind == "bench" else out.grams).append(table)
        finally:
            for future in pending:
                future.cancel()


def _stream_chunks(
    out: Scan,
    reader: pa.RecordBatchReader,
    wanted: np.ndarray,
    vocab3: tuple[Vocabulary, GramLookup] | None,
    bench: BenchmarkScan | None,
    lengths: np.ndarray | None,
    other_max_bytes: int | None,
    pool: ThreadPoolExecutor,
    pending: list[Future[tuple[str, pa.Table | None]]],
) -> None:
    def collect_ready() -> None:
        # keep at most one chunk's n-gram pass in flight: memory stays one chunk ahead
        while len(pending) > 2:
            kind, table = pending.pop(0).result()
            (out.bench_grams if kind == "bench" else out.grams).append(table)

    for batch in reader:
        rows = batch.column("row_index").to_numpy(zero_copy_only=False)
        out.rows += len(rows)
        user = folded(batch.column("user_text"))
        _exact(out, rows, user, wanted, "user", lengths)
        others = batch.column("other_turns")
        has_other = pc.fill_null(pc.greater(pc.list_value_length(others), 0), False)
        hay = user
        if pc.any(has_other).as_py():
            flat = folded(pc.list_flatten(others))
            parents = rows[pc.list_parent_indices(others).to_numpy(zero_copy_only=False)]
            if other_max_bytes is None:
                _exact(out, parents, flat, wanted, "other", lengths)
            elif other_max_bytes > 0:
                # Only texts short enough to be a short needle (longer needles are found through the
                # 3-grams and compared whole by matching): the answers, most of the bytes, are skipped.
                short = np.flatnonzero(
                    pc.binary_length(flat).to_numpy(zero_copy_only=False) <= other_max_bytes
                )
                if len(short):
                    _exact(out, parents[short], flat.take(pa.array(short)), wanted, "other", lengths)
            newline = pa.scalar("\n", pa.large_string())
            offsets = pc.subtract(others.offsets, others.offsets[0])
            joined = pc.binary_join(pa.ListArray.from_arrays(offsets, flat), newline)
            hay = pc.binary_join_element_wise(user, joined, newline)
            if not pc.all(has_other).as_py():  # (every row has answers in a mixture: no copy needed then)
                hay = pc.if_else(has_other, hay, user)
        if bench is not None:
            pending.append(pool.submit(lambda r, h: ("bench", _grams(r, h, bench[0], bench[1])), rows, hay))
        if vocab3 is not None:
            pending.append(
                pool.submit(
                    lambda r, h: ("holdout", _grams(r, h, vocab3[0], GRAM_WORDS, vocab3[1])), rows, hay
                )
            )
        collect_ready()


def scan_candidates(
    store: Store,
    cand: str,
    row_filter: str,
    needle_hashes: Iterable[int] | np.ndarray,
    vocab3: tuple[Vocabulary, np.ndarray] | None = None,
    bench: BenchmarkScan | None = None,
    needle_lengths: Iterable[int] | None = None,
    other_max_bytes: int | None = None,
) -> Scan:
    """Stream the rows of `cand` (pairstore.holdout.matching.CANDIDATE_SCHEMA, aliased c in `row_filter`, the
    SQL condition of a row to read) through the cheap stages, in whatever order DuckDB gives them (nothing is
    sorted or held). `vocab3`: (vocabulary of the needles' words, sorted array of their 3-gram hashes), or
    None; `bench`: (vocabulary, n, lookup) of the registered benchmarks, or None; `needle_lengths`: the
    loose lengths of the needles (loose_length), so only texts of those lengths are hashed;
    `other_max_bytes`: only system / assistant / answer texts of at most this many bytes go through the
    exact stage (None: all; 0: none)."""
    out = Scan()
    reader = store.con.sql(f"""
        SELECT c.row_index, array_to_string(c.user_turns, chr(10)) AS user_text, c.other_turns
        FROM {cand} c WHERE {row_filter}""").to_arrow_reader(CHUNK_ROWS)
    wanted = np.unique(np.fromiter(needle_hashes, dtype=np.uint64))
    gram_vocab = None if vocab3 is None else (vocab3[0], GramLookup(vocab3[1]))
    try:
        lengths = None if needle_lengths is None else np.array(sorted(needle_lengths), dtype=np.int64)
        _stream(out, reader, wanted, gram_vocab, bench, lengths, other_max_bytes)
    finally:
        reader.close()  # an open result would block every later statement on the connection
        # Arrow keeps freed buffers for reuse; the export's writer comes next and needs the room.
        pa.default_memory_pool().release_unused()
    out.grams = [t for t in out.grams if t is not None]
    bench_grams = [t for t in out.bench_grams if t is not None]
    if bench is not None and bench_grams:
        # After the stream: the connection runs one statement at a time.
        table = pa.concat_tables(bench_grams)
        out.benchmark = bench[2](table["row_index"].to_numpy(), table["ngram"].to_numpy())
    return out
