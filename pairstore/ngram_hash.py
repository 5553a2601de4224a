"""Word n-gram hashes of texts: the pure hashing half of benchmark decontamination, below the store.

    from pairstore.ngram_hash import Vocabulary, text_ngram_table, benchmark_tables
    vocab = Vocabulary.of_texts(["janet s ducks lay 16 eggs"])
    table = text_ngram_table(vocab, ["Janet's ducks lay 16 eggs a day"], n=3)   # doc, ngram
    refs, ngrams = benchmark_tables(["0"], ["Janet's ducks lay 16 eggs ..."], 13)

Registration, lookup and the gate's use of these hashes are pairstore.holdout.ngrams; this module is
what a store migration needs to re-key registered benchmarks, so it imports nothing above the base.

Normalization follows lm-evaluation-harness's decontamination janitor (ASCII
letters lower-cased, ASCII punctuation (`string.punctuation`) removed, then
split on whitespace), with one change: punctuation becomes a word break instead
of being deleted, as in pairstore.normalize, so "Question:What" is two
words and a member glued to markup is still found. An n-gram is n consecutive
words of one text. Items with fewer than n words have no n-gram.

Hash of an n-gram w_0..w_{n-1} (stable across DuckDB, Python and numpy
versions; stored as UBIGINT in `benchmark_ngrams.ngram`):

    sum_k xxh3_64(utf8(w_k)) * Q**k  mod 2**64

(a random linear combination of independent 64-bit word hashes: no further
mixing is needed, which saves passes over every window).

Computed without a per-word Python loop: the texts' bytes are normalized with
a lookup table on the Arrow buffer, and one compiled pass
(pairstore.ngram_kernel.vocabulary_ngrams) splits them into words, maps each
to the vocabulary (only the vocabulary's distinct words are hashed, with
xxh3, in Python) and sums the windows (uint64, wrap-around arithmetic). A
window holding a word the vocabulary lacks cannot match and is never formed.
Vocabulary.ngrams_by_words is the same reading vectorized with Arrow's split,
`index_in` and prefix sums times inverse powers of Q: the definition the
compiled pass is tested against (tests/holdout/test_kernels.py).
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

import os
import string
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from pairstore.errors import BadInput
from pairstore.keys import match_key
from pairstore.normalize import word_text

if TYPE_CHECKING:
    import duckdb

    from pairstore.ngram_kernel import GramFilter

# Texts as the functions here take them: an Arrow string array (chunked or not) or a list of str.
Texts: TypeAlias = "pa.Array | pa.ChunkedArray | Sequence[str | None]"
# What Vocabulary.kernel_table makes once: (word bytes, word offsets, packed first 16 bytes, slots, hashes).
KernelTable: TypeAlias = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

DEFAULT_N = 13
DEFAULT_THREADS = 4
Q = 0x9E3779B97F4A7C15  # odd, so invertible modulo 2**64
Q_INV = pow(Q, -1, 1 << 64)
_CHUNK_BYTES = 4 << 20  # normalize/split at most this much text at once (memory stays modest)

# ASCII upper -> lower, the ASCII separators \x1c-\x1f (whitespace to str.split) and ASCII
# punctuation -> space, as one bytes.translate table: bytes >= 0x80 never hold ASCII characters
# inside UTF-8, so working on the raw UTF-8 buffer keeps multi-byte characters intact, and every text
# keeps its length (offsets unchanged).
_PUNCT_BYTES = string.punctuation.encode()
_LOWER_TABLE = bytes.maketrans(
    string.ascii_uppercase.encode() + bytes(range(0x1C, 0x20)) + _PUNCT_BYTES,
    string.ascii_lowercase.encode() + b" " * (4 + len(_PUNCT_BYTES)),
)
# Lead bytes of the multi-byte characters str.split() treats as whitespace: U+0085, U+00A0 (C2 ..),
# U+1680 (E1 ..), U+2000-200A, U+2028, U+2029, U+202F, U+205F (E2 ..), U+3000 (E3 ..).
_SPACE_LEAD = np.zeros(256, dtype=bool)
_SPACE_LEAD[[0xC2, 0xE1, 0xE2, 0xE3]] = True
_UNICODE_SPACES = {chr(c).encode() for c in range(0x80, 0x3001) if chr(c).isspace()}


def _blank_unicode_spaces(data: bytes) -> bytes:
    """Multi-byte Unicode whitespace replaced by as many ASCII spaces (offsets unchanged).

    Afterwards Arrow's ASCII whitespace split equals str.split(). Only candidate lead bytes are
    looked at in Python; the buffer itself is scanned by numpy.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    if len(buf) == 0 or buf.max() < 0x80:  # pure ASCII: one vectorized reduction, nothing to do
        return data
    leads = np.flatnonzero(_SPACE_LEAD[buf])
    if len(leads) == 0:
        return data
    hits = [i for i in leads.tolist() if data[i : i + (2 if data[i] == 0xC2 else 3)] in _UNICODE_SPACES]
    if not hits:
        return data
    out = bytearray(data)
    for i in hits:
        width = 2 if data[i] == 0xC2 else 3
        out[i : i + width] = b" " * width
    return bytes(out)


def normalize_texts(texts: Texts) -> pa.LargeStringArray:
    """The janitor normalization of many texts at once (ASCII lower-case, punctuation to spaces).

    Unicode whitespace becomes ASCII spaces as well (same split, see words()).
    """
    arr = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(texts, type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=pa.large_string())
    arr = pc.fill_null(arr.cast(pa.large_string()), "")
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    raw = (bufs[2][start:end] if bufs[2] is not None else pa.py_buffer(b"")).to_pybytes()
    new_data = _blank_unicode_spaces(raw.translate(_LOWER_TABLE))
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets - start), pa.py_buffer(new_data))


def words(texts: Texts) -> tuple[pa.Array, np.ndarray]:
    """(words, doc index of each word): the normalized whitespace-split words of each text, as str.split()."""
    split = pc.ascii_split_whitespace(normalize_texts(texts))
    flat = split.flatten()
    lengths = pc.fill_null(pc.list_value_length(split), 0).to_numpy(zero_copy_only=False)
    doc = np.repeat(np.arange(len(split), dtype=np.int64), lengths)
    # Arrow yields "" before leading / after trailing whitespace; str.split() does not.
    if len(flat):
        nonempty = pc.greater(pc.binary_length(flat), 0)
        if not pc.all(nonempty).as_py():
            flat = flat.filter(nonempty)
            doc = doc[nonempty.to_numpy(zero_copy_only=False)]
    return flat, doc


def word_hashes(unique_words: pa.Array) -> np.ndarray:
    """xxh3_64 of each distinct word (a loop over the vocabulary, never over rows)."""
    return np.fromiter(
        (xxhash.xxh3_64_intdigest(w.encode("utf-8")) for w in unique_words.to_pylist()),
        dtype=np.uint64,
        count=len(unique_words),
    )


_POW_CACHE: dict[str, np.ndarray] = {}
_POW_LOCK = threading.Lock()


def _powers(base: int, m: int, key: str) -> np.ndarray:
    """base**0 .. base**(m-1) modulo 2**64 (cached; chunks of text bound m)."""
    cached = _POW_CACHE.get(key)
    if cached is None or len(cached) < m:
        with _POW_LOCK:
            cached = _POW_CACHE.get(key)
            if cached is None or len(cached) < m:
                size = max(m, 1 << 16, 0 if cached is None else 2 * len(cached))
                p = np.empty(size, dtype=np.uint64)
                p[0] = 1
                if size > 1:
                    p[1:] = np.full(size - 1, base, dtype=np.uint64)
                    np.cumprod(p, out=p)
                _POW_CACHE[key] = cached = p
    return cached[:m]


def window_hashes(
    token_hash: np.ndarray, valid: np.ndarray, doc: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """(doc index, n-gram hash) of every window of n valid words inside one document."""
    m = len(token_hash)
    if m < n:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    with np.errstate(over="ignore"):
        prefix = np.zeros(m + 1, dtype=np.uint64)
        np.cumsum(token_hash * _powers(Q, m, "q"), out=prefix[1:], dtype=np.uint64)
        starts = m - n + 1
        sums = (prefix[n:] - prefix[:starts]) * _powers(Q_INV, starts, "qinv")
        bad = np.zeros(m + 1, dtype=np.int32)
        np.cumsum(~valid, out=bad[1:], dtype=np.int32)
        ok = bad[n:] == bad[:starts]
        ok &= doc[:starts] == doc[n - 1 :]
        return doc[:starts][ok], sums[ok]


def utf8_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes as uint8, int64 offsets from 0) of a large_string array without nulls."""
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    start, end = (int(offsets[0]), int(offsets[-1])) if n else (0, 0)
    data = np.frombuffer(bufs[2], dtype=np.uint8)[start:end] if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets - start


@dataclass
class Vocabulary:
    """A benchmark's distinct normalized words and their hashes (sorted for index_in)."""

    words: pa.Array
    hashes: np.ndarray
    _table: KernelTable | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of_texts(cls, texts: Texts) -> Vocabulary:
        flat, _ = words(texts)
        uniq = pc.unique(flat) if len(flat) else pa.array([], type=pa.large_string())
        return cls(uniq, word_hashes(uniq))

    def kernel_table(self) -> KernelTable:
        """(word bytes, word offsets, packed first bytes, slots, token hashes) for the kernel (made once)."""
        if self._table is None:
            from pairstore.ngram_kernel import vocabulary_table

            words_arr = self.words.cast(pa.large_string())
            if isinstance(words_arr, pa.ChunkedArray):
                words_arr = words_arr.combine_chunks()
            vdata, voff = utf8_buffers(words_arr)
            vdata, voff = np.ascontiguousarray(vdata), np.ascontiguousarray(voff)
            packed, slots = vocabulary_table(vdata, voff)
            self._table = (vdata, voff, packed, slots, np.ascontiguousarray(self.hashes, dtype=np.uint64))
        return self._table

    def ngrams(
        self, texts: Texts, n: int = DEFAULT_N, *, doc_base: int = 0, lookup: GramFilter | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(doc index + doc_base, hash) of the n-grams of `texts` made only of vocabulary words (and, given
        `lookup`, a pairstore.holdout.scan.GramLookup, only those among its hashes).

        The words are those of words(texts) and the hashes those of window_hashes over them
        (tests/holdout/test_kernels.py compares the two paths); pairstore.ngram_kernel reads them in one
        compiled pass over the normalized bytes."""
        if len(self.words) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        from pairstore.ngram_kernel import vocabulary_ngrams

        normalized = normalize_texts(texts)
        data, offsets = utf8_buffers(normalized)
        docs, hashes = vocabulary_ngrams(
            np.ascontiguousarray(data),
            np.ascontiguousarray(offsets),
            self.kernel_table(),
            n,
            np.ascontiguousarray(_powers(Q, n, "q")),
            lookup,
        )
        return docs + doc_base, hashes

    def ngrams_by_words(
        self, texts: Texts, n: int = DEFAULT_N, *, doc_base: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """ngrams() the vectorized way (the word list, index_in, prefix sums): the reference the compiled
        pass is tested against."""
        flat, doc = words(texts)
        if len(flat) < n or len(self.words) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        idx = pc.fill_null(pc.index_in(flat, value_set=self.words), -1).to_numpy(zero_copy_only=False)
        valid = idx >= 0
        docs, hashes = window_hashes(self.hashes[np.where(valid, idx, 0)], valid, doc, n)
        return docs + doc_base, hashes


def iter_text_chunks(
    texts: pa.Array | pa.ChunkedArray, max_bytes: int | None = None
) -> Iterator[tuple[int, pa.Array]]:
    """(first row, slice) pieces of a string array, each about max_bytes (default _CHUNK_BYTES) of text."""
    max_bytes = max_bytes or _CHUNK_BYTES
    arr = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    total = len(arr)
    if total == 0:
        return
    sizes = pc.fill_null(pc.binary_length(arr), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    cum = np.cumsum(sizes)
    start = 0
    while start < total:
        base = cum[start - 1] if start else 0
        stop = int(np.searchsorted(cum, base + max_bytes, side="right"))
        stop = min(max(stop, start + 1), total)
        yield start, arr.slice(start, stop - start)
        start = stop


def text_ngram_table(
    vocab: Vocabulary,
    texts: Texts,
    n: int = DEFAULT_N,
    *,
    threads: int | None = None,
    lookup: GramFilter | None = None,
) -> pa.Table:
    """pa.Table(doc int64, ngram uint64): the candidate n-grams of each text (position in `texts`).

    Chunks of about 4 MB run on a thread pool of `threads` workers (default: the CPU count, at most
    DEFAULT_THREADS); the compiled pass releases the GIL. The result is in text order whatever the
    number of workers. Given `lookup` (a pairstore.holdout.scan.GramLookup), only the windows among
    its hashes are returned.
    """
    if threads is None:
        threads = min(DEFAULT_THREADS, os.cpu_count() or 1)
    arr = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(texts, type=pa.large_string())
    pieces = list(iter_text_chunks(arr))
    workers = max(1, min(threads, len(pieces)))
    if workers == 1:
        parts = [vocab.ngrams(piece, n, doc_base=first, lookup=lookup) for first, piece in pieces]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(lambda fp: vocab.ngrams(fp[1], n, doc_base=fp[0], lookup=lookup), pieces))
    # Chunked columns: no copy to concatenate; DuckDB and Arrow read chunked tables as they are.
    return pa.table(
        {
            "doc": pa.chunked_array([d for d, _ in parts], type=pa.int64()),
            "ngram": pa.chunked_array([h for _, h in parts], type=pa.uint64()),
        }
    )


def arrow_query(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> pa.Table:
    """A query's result as an Arrow table.

    DuckDB refuses con.sql() while the connection holds a result that was only partly fetched
    (fetchone() leaves one); running and draining a trivial statement first finishes it.
    """
    con.execute("SELECT 1").fetchall()
    return con.sql(sql, params=params).to_arrow_table()


def check_n(n: int) -> int:
    if not isinstance(n, int) or n < 1:
        raise BadInput(f"n must be a positive integer, got {n!r}", field="n")
    return n


def benchmark_tables(ids: list[str], texts: list[str], n: int) -> tuple[pa.Table, pa.Table]:
    """(refs: item_id, text, match_key; ngrams: item_id, ngram) of a benchmark's items, the n-grams read
    from each item's word_text. Registration and the re-keying of a store use this."""
    vocab = Vocabulary.of_texts([word_text(t) for t in texts])
    table = text_ngram_table(vocab, [word_text(t) for t in texts], n)
    ngrams = pa.table(
        {"item_id": pa.array(ids, type=pa.string()).take(table["doc"]), "ngram": table["ngram"]}
    )
    refs = pa.table(
        {
            "item_id": pa.array(ids, type=pa.string()),
            "text": pa.array(texts, type=pa.string()),
            "match_key": pa.array([match_key(t) for t in texts], type=pa.string()),
        }
    )
    return refs, ngrams
