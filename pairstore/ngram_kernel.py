"""The compiled n-gram pass of pairstore.ngram_hash, with numba: one pass over a text buffer (UTF-8
bytes and int64 offsets, as Arrow holds a string array) where the vectorized path makes several.

    table = vocabulary_table(vocab_data, vocab_offsets)          # once per vocabulary
    docs, grams = vocabulary_ngrams(data, offsets, table, n, q_powers, lookup)

vocabulary_ngrams is the n-gram reading of pairstore.ngram_hash (words, vocabulary lookup, window
hashes) in one pass. It gives exactly what the vectorized Arrow path gives (split on ASCII whitespace,
`index_in` against the vocabulary, windows of n consecutive words all in the vocabulary and in one
text) without building the word list, the index array and the prefix sums: those were three passes over
every word and most of the gate's time. The text must already be normalized (ngram_hash.normalize_texts:
ASCII lower case, punctuation and Unicode whitespace to spaces), so a word is a run of bytes that are
not ASCII whitespace. tests/holdout/test_kernels.py holds it equal to Vocabulary.ngrams_by_words on
generated text, and tests/base/test_ngram_kernel_property.py to the reading written in Python on any text.

A vocabulary word is found in an open-addressing table keyed by its first 16 bytes (packed into two
integers while the word is split) and its length; the entry found is compared on those and on any bytes
past the 16th, so no collision can map a word to another word. Given `lookup` (anything with a sorted
uint64 array `sorted` and `kernel_bits()` returning (packed bit table, mask), as
pairstore.holdout.scan.GramLookup), only windows whose hash is among those are kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pairstore.compiled import njit

_M0 = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xC2B2AE3D27D4EB4F)
_EMPTY = np.zeros(0, dtype=np.uint64)
_EMPTY_BITS = np.zeros(1, dtype=np.uint64)


@njit(nogil=True, inline="always")
def _is_space(b: int) -> bool:
    # What Arrow's ascii_split_whitespace splits on: space, \t, \n, \v, \f, \r.
    return b == 32 or (9 <= b <= 13)


@njit(nogil=True, inline="always")
def _slot_hash(p0, p1, length):
    # the low bits of a product depend only on the low bits of its factors (a word's first bytes): mixed
    # down from the high bits before the table's mask takes the low ones
    h = (p0 * _M0) ^ (p1 * _M1) ^ np.uint64(length)
    h ^= h >> np.uint64(31)
    h *= _M1
    return h ^ (h >> np.uint64(29))


@njit(nogil=True)
def _table_of(vdata, voff):
    # A word is known by its first 16 bytes packed into two integers and its length (exact for words of
    # up to 16 bytes; longer ones are compared byte by byte as well).
    n = len(voff) - 1
    size = 16
    while size < 2 * n + 2:
        size *= 2
    slots = np.full(size, -1, dtype=np.int64)
    packed = np.zeros((max(n, 1), 2), dtype=np.uint64)
    mask = np.uint64(size - 1)
    for v in range(n):
        p0 = np.uint64(0)
        p1 = np.uint64(0)
        a = voff[v]
        for k in range(min(voff[v + 1] - a, 16)):
            if k < 8:
                p0 |= np.uint64(vdata[a + k]) << np.uint64(8 * k)
            else:
                p1 |= np.uint64(vdata[a + k]) << np.uint64(8 * (k - 8))
        packed[v, 0] = p0
        packed[v, 1] = p1
        s = _slot_hash(p0, p1, voff[v + 1] - a) & mask
        while slots[s] >= 0:
            s = (s + np.uint64(1)) & mask
        slots[s] = v
    return packed, slots


def vocabulary_table(vdata: np.ndarray, voff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each word's first 16 bytes as two integers, slot -> word index or -1) of the vocabulary's words
    (UTF-8 bytes `vdata`, `voff` offsets)."""
    return _table_of(vdata, voff)


@njit(nogil=True)
def _ngrams(data, offsets, vdata, voff, packed, slots, tok, n, qpow, bits, bmask, wanted, filtered):
    total = offsets[len(offsets) - 1] - offsets[0]
    # In one text, words are at least one byte and one separator apart; each text adds at most one more
    # (a text of one byte is a word). No bounds checks run in compiled code: this bound must hold.
    cap = total // 2 + len(offsets)
    out_doc = np.empty(cap, dtype=np.int64)
    out_hash = np.empty(cap, dtype=np.uint64)
    ring = np.zeros(n, dtype=np.uint64)
    tmask = np.uint64(len(slots) - 1)
    nw = len(wanted)
    count = 0
    for d in range(len(offsets) - 1):
        i = offsets[d]
        stop = offsets[d + 1]
        run = 0  # vocabulary words in a row, in this text
        while i < stop:
            while i < stop and _is_space(data[i]):
                i += 1
            if i >= stop:
                break
            j = i
            p0 = np.uint64(0)
            p1 = np.uint64(0)
            while j < stop and not _is_space(data[j]):
                k = j - i
                if k < 8:
                    p0 |= np.uint64(data[j]) << np.uint64(8 * k)
                elif k < 16:
                    p1 |= np.uint64(data[j]) << np.uint64(8 * (k - 8))
                j += 1
            length = j - i
            s = _slot_hash(p0, p1, length) & tmask
            found = -1
            while slots[s] >= 0:
                v = slots[s]
                if packed[v, 0] == p0 and packed[v, 1] == p1 and voff[v + 1] - voff[v] == length:
                    same = True
                    a = voff[v]
                    for k in range(16, length):
                        if vdata[a + k] != data[i + k]:
                            same = False
                            break
                    if same:
                        found = v
                        break
                s = (s + np.uint64(1)) & tmask
            i = j
            if found < 0:
                run = 0
                continue
            # the last n words, oldest first (shifted, not a ring: no division in the loop)
            for k in range(n - 1):
                ring[k] = ring[k + 1]
            ring[n - 1] = tok[found]
            run += 1
            if run < n:
                continue
            g = np.uint64(0)
            for k in range(n):
                g += ring[k] * qpow[k]
            if filtered:
                b = g & bmask
                if not (bits[b >> np.uint64(6)] >> (b & np.uint64(63))) & np.uint64(1):
                    continue
                lo = 0
                hi = nw
                while lo < hi:
                    mid = (lo + hi) // 2
                    if wanted[mid] < g:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo == nw or wanted[lo] != g:
                    continue
            if count == cap:  # cannot happen (see cap); checked, as compiled code checks no bounds
                raise IndexError("vocabulary_ngrams: more windows than the output holds")
            out_doc[count] = d
            out_hash[count] = g
            count += 1
    return out_doc[:count].copy(), out_hash[:count].copy()


def vocabulary_ngrams(
    data: np.ndarray,
    offsets: np.ndarray,
    vocab: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    n: int,
    qpow: np.ndarray,
    lookup: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(doc index, n-gram hash) of every window of n consecutive vocabulary words inside one text.

    `data`: the normalized UTF-8 bytes (uint8), `offsets`: int64 text boundaries into it; `vocab`: (word
    bytes, word offsets, packed first 16 bytes, slot -> word, token hash of each word); `qpow`: Q**0..Q**(n-1)
    (uint64); `lookup`: a GramLookup, or None to keep every window."""
    vdata, voff, packed, slots, tok = vocab
    if lookup is None:
        bits, bmask, wanted, filtered = _EMPTY_BITS, np.uint64(0), _EMPTY, False
    else:
        bits, bmask = lookup.kernel_bits()
        wanted, filtered = lookup.sorted, True
    return _ngrams(data, offsets, vdata, voff, packed, slots, tok, n, qpow, bits, bmask, wanted, filtered)
