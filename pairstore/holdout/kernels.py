"""The compiled inner loops of the gate's streaming scan (pairstore.holdout.scan), with numba: each is one
pass over a text buffer (UTF-8 bytes and int64 offsets, as Arrow holds a string array).

    flagged, triggered = rows_with_bytes(data, offsets, flag_table, trigger_table)
    kept = rows_kept_bytes(data, offsets, delete_table)
    bits, mask = gram_bits(sorted_hashes)      # the prefilter pairstore.ngram_kernel.vocabulary_ngrams reads

Each has a plain Python definition, written in tests/holdout/test_kernels_property.py, that a hypothesis
property holds it equal to on any text. The n-gram pass itself is pairstore.ngram_kernel (below the store:
re-keying needs it).
"""

from __future__ import annotations

import numpy as np

from pairstore.compiled import njit

# Bits per needle gram in the kernel's own prefilter: a table of a few MB at most stays in cache, and one
# window in 16 that passes it by chance costs a binary search.
_BITS_PER_GRAM = 16
_MAX_BITS = 1 << 27


def gram_bits(sorted_hashes: np.ndarray) -> tuple[np.ndarray, np.uint64]:
    """(packed bit table, bit mask) of a sorted array of n-gram hashes, for vocabulary_ngrams."""
    size = 64
    while size < _BITS_PER_GRAM * len(sorted_hashes) and size < _MAX_BITS:
        size *= 2
    mask = np.uint64(size - 1)
    low = sorted_hashes & mask
    words = np.zeros(size // 64, dtype=np.uint64)
    np.bitwise_or.at(words, (low >> np.uint64(6)).astype(np.int64), np.uint64(1) << (low & np.uint64(63)))
    return words, mask


@njit(nogil=True)
def _rows_with_bytes(data, offsets, bits):
    # one load and an OR per byte, no branch: faster than stopping at the first flagged byte, since
    # almost every text has none and is read to its end either way
    rows = len(offsets) - 1
    flagged = np.zeros(rows, dtype=np.bool_)
    triggered = np.zeros(rows, dtype=np.bool_)
    for r in range(rows):
        seen = np.uint8(0)
        for i in range(offsets[r], offsets[r + 1]):
            seen |= bits[data[i]]
        flagged[r] = (seen & 1) != 0
        triggered[r] = (seen & 2) != 0
    return flagged, triggered


def rows_with_bytes(
    data: np.ndarray, offsets: np.ndarray, flag_table: np.ndarray, trigger_table: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: (holds a byte of `flag_table`, holds a byte of `trigger_table`) (256-entry bool tables)."""
    bits = flag_table.astype(np.uint8) | (trigger_table.astype(np.uint8) << np.uint8(1))
    return _rows_with_bytes(data, offsets, bits)


@njit(nogil=True)
def _rows_kept_bytes(data, offsets, delete_table):
    rows = len(offsets) - 1
    kept = np.zeros(rows, dtype=np.int64)
    for r in range(rows):
        k = 0
        for i in range(offsets[r], offsets[r + 1]):
            if not delete_table[data[i]]:
                k += 1
        kept[r] = k
    return kept


def rows_kept_bytes(data: np.ndarray, offsets: np.ndarray, delete_table: np.ndarray) -> np.ndarray:
    """Per row: how many of its bytes are not in `delete_table` (a 256-entry bool table)."""
    return _rows_kept_bytes(data, offsets, delete_table)
