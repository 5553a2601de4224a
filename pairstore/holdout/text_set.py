"""Which texts of a stream were seen before, in bounded memory: a set of 128-bit fingerprints, compiled.

    seen = TextSet(max_entries=1 << 22)
    new = seen.add(texts)          # per text: True the first time it (its fingerprint) is added
    lo, hi = fingerprints(texts)   # the two 64-bit halves of each text's fingerprint

A file read in batches meets the same text again and again (upsampled copies, one system prompt on every
row); the holdout audit matches each text once. This set finds the copies, by fingerprint: two lanes of
64-bit multiply-rotate mixing over the UTF-8 bytes, eight at a time, each lane finished with a full
avalanche (`combined` folds the fingerprints of a sequence, a prompt's turns, into one). Two different
texts share a fingerprint with odds of about n^2 / 2^128 for n texts (1e-24 for ten million); the lanes
start from a random key drawn per process, so no text can be written to collide with another on purpose.

The set holds at most `max_entries` fingerprints (16 bytes each, in a table at most half full). Once it is
full it stops adding, and a later copy of a text it did not keep is reported new again: the caller then
matches that text twice, which costs time, never a hit. Memory stays flat whatever the file's size.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.compiled import njit

_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)
_K3 = np.uint64(0x165667B19E3779F9)
_K4 = np.uint64(0xD6E8FEB86659FD93)
_KEY = np.frombuffer(os.urandom(16), dtype=np.uint64).copy()  # per process: see the module docstring
DEFAULT_MAX_ENTRIES = 1 << 22  # 4M fingerprints: a table of 128 MB at most


@njit(nogil=True, inline="always")
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(nogil=True, inline="always")
def _avalanche(h: np.uint64) -> np.uint64:
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


@njit(nogil=True)
def _fingerprints(
    data: np.ndarray,
    offsets: np.ndarray,
    key0: np.uint64,
    key1: np.uint64,
    seed: np.uint64,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    for i in range(len(offsets) - 1):
        a = offsets[i]
        b = offsets[i + 1]
        h1 = key0 ^ seed
        h2 = key1 ^ (seed * _K1)
        p = a
        while p + 8 <= b:
            w = (
                np.uint64(data[p])
                | (np.uint64(data[p + 1]) << np.uint64(8))
                | (np.uint64(data[p + 2]) << np.uint64(16))
                | (np.uint64(data[p + 3]) << np.uint64(24))
                | (np.uint64(data[p + 4]) << np.uint64(32))
                | (np.uint64(data[p + 5]) << np.uint64(40))
                | (np.uint64(data[p + 6]) << np.uint64(48))
                | (np.uint64(data[p + 7]) << np.uint64(56))
            )
            h1 = _rotl(h1 ^ (w * _K1), 31) * _K2
            h2 = (_rotl(h2, 27) + (w ^ _K3)) * _K4
            p += 8
        if p < b:
            w = np.uint64(0)
            k = 0
            while p + k < b:
                w |= np.uint64(data[p + k]) << np.uint64(8 * k)
                k += 1
            h1 = _rotl(h1 ^ (w * _K1), 31) * _K2
            h2 = (_rotl(h2, 27) + (w ^ _K3)) * _K4
        n = np.uint64(b - a)
        h1 = _avalanche(h1 ^ n)
        h2 = _avalanche(h2 ^ (n * _K3) ^ h1)
        lo[i] = h1
        hi[i] = h2 ^ _rotl(h1, 17)


@njit(nogil=True)
def _combine(
    offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray, out_lo: np.ndarray, out_hi: np.ndarray
) -> None:
    for r in range(len(offsets) - 1):
        h1 = _K2
        h2 = _K4
        for i in range(offsets[r], offsets[r + 1]):
            h1 = _avalanche(_rotl(h1, 23) ^ lo[i]) + _K1
            h2 = _avalanche(_rotl(h2, 41) ^ hi[i] ^ h1) + _K3
        n = np.uint64(offsets[r + 1] - offsets[r])
        out_lo[r] = _avalanche(h1 ^ n)
        out_hi[r] = _avalanche(h2 ^ (n * _K1))


@njit(nogil=True)
def _add(
    table_lo: np.ndarray,
    table_hi: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    count: int,
    limit: int,
    new: np.ndarray,
) -> int:
    mask = np.uint64(len(table_lo) - 1)
    for i in range(len(lo)):
        a = lo[i]
        b = hi[i]
        if a == 0 and b == 0:
            b = np.uint64(1)  # (0, 0) marks an empty slot
        s = (a ^ _rotl(b, 29)) & mask
        while True:
            x = table_lo[s]
            y = table_hi[s]
            if x == 0 and y == 0:
                new[i] = True
                if count < limit:
                    table_lo[s] = a
                    table_hi[s] = b
                    count += 1
                break
            if x == a and y == b:
                new[i] = False
                break
            s = (s + np.uint64(1)) & mask
    return count


def _utf8(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, int64 offsets from 0) of a string array (nulls read as empty)."""
    arr = pc.fill_null(texts.cast(pa.large_string()), "")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_string())
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    start = int(offsets[0]) if n else 0
    end = int(offsets[-1]) if n else 0
    data = np.frombuffer(bufs[2], dtype=np.uint8)[start:end] if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, np.ascontiguousarray(offsets - start)


def fingerprints(texts: pa.Array, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The two 64-bit halves of each text's fingerprint (`seed` keeps kinds of text apart)."""
    data, offsets = _utf8(texts)
    lo = np.empty(len(offsets) - 1, dtype=np.uint64)
    hi = np.empty(len(offsets) - 1, dtype=np.uint64)
    _fingerprints(data, offsets, _KEY[0], _KEY[1], np.uint64(seed), lo, hi)
    return lo, hi


def combined(offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One fingerprint per run of fingerprints (run r: offsets[r] to offsets[r + 1]), order counted: the
    fingerprint of a sequence of texts (a prompt's turns)."""
    n = len(offsets) - 1
    out_lo = np.empty(n, dtype=np.uint64)
    out_hi = np.empty(n, dtype=np.uint64)
    _combine(np.ascontiguousarray(offsets, dtype=np.int64), lo, hi, out_lo, out_hi)
    return out_lo, out_hi


class TextSet:
    """Fingerprints of the texts added so far, at most `max_entries` of them."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self.count = 0
        self._lo = np.zeros(1 << 10, dtype=np.uint64)
        self._hi = np.zeros(1 << 10, dtype=np.uint64)

    @property
    def full(self) -> bool:
        return self.count >= self.max_entries

    @property
    def nbytes(self) -> int:
        return self._lo.nbytes + self._hi.nbytes

    def _grow_for(self, more: int) -> None:
        want = min(self.count + more, self.max_entries)
        size = len(self._lo)
        while 2 * want > size:
            size *= 2
        if size == len(self._lo):
            return
        kept = (self._lo != 0) | (self._hi != 0)
        lo, hi = self._lo[kept], self._hi[kept]
        self._lo = np.zeros(size, dtype=np.uint64)
        self._hi = np.zeros(size, dtype=np.uint64)
        self.count = _add(self._lo, self._hi, lo, hi, 0, size, np.zeros(len(lo), dtype=np.bool_))

    def add_fingerprints(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Per fingerprint: True when it was not in the set (it is now, unless the set is full)."""
        self._grow_for(len(lo))
        new = np.zeros(len(lo), dtype=np.bool_)
        limit = min(self.max_entries, len(self._lo) // 2)
        self.count = _add(self._lo, self._hi, lo, hi, self.count, limit, new)
        return new

    def add(self, texts: pa.Array, seed: int = 0) -> np.ndarray:
        """Per text: True the first time its fingerprint is added."""
        lo, hi = fingerprints(texts, seed)
        return self.add_fingerprints(lo, hi)
