"""The gate's compiled byte passes (pairstore.holdout.kernels) and the compiled fingerprint set
(pairstore.holdout.text_set) are their plain definitions on any input: text of any code point, empty and
very long texts, any byte table, any hashes; written out here in Python."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pairstore.holdout import text_set
from pairstore.holdout.kernels import gram_bits, rows_kept_bytes, rows_with_bytes
from pairstore.holdout.scan import _DELETE_TABLE, _FOLD_TABLE, _TRIGGER_TABLE

M64 = (1 << 64) - 1
TEXTS = st.lists(st.one_of(st.text(), st.text(st.characters(max_codepoint=0x7F))), max_size=20)
TABLE = st.one_of(
    st.lists(st.booleans(), min_size=256, max_size=256).map(lambda t: np.array(t, dtype=bool)),
    st.sampled_from([_FOLD_TABLE, _TRIGGER_TABLE, _DELETE_TABLE, np.zeros(256, bool), np.ones(256, bool)]),
)
HUGE = "a\u00e9\u5317\U0001f600 " * 250_000  # 2.5 MB of one, two, three and four byte characters


def buffers(texts: list[str], pad: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes, int64 offsets) of the texts after `pad`: the offsets start where the pad ends."""
    raw = [t.encode("utf-8") for t in texts]
    offsets = np.cumsum([len(pad)] + [len(r) for r in raw], dtype=np.int64)
    return np.frombuffer(pad + b"".join(raw), dtype=np.uint8), offsets


@settings(max_examples=200)
@given(texts=TEXTS, flag=TABLE, trigger=TABLE, pad=st.binary(max_size=5))
@example(texts=[], flag=_FOLD_TABLE, trigger=_TRIGGER_TABLE, pad=b"")
@example(texts=["", HUGE, "", "x&"], flag=_FOLD_TABLE, trigger=_TRIGGER_TABLE, pad=b"\xff")
def test_rows_with_bytes_and_rows_kept_bytes_are_their_definitions(texts, flag, trigger, pad):
    data, offsets = buffers(texts, pad)
    flagged, triggered = rows_with_bytes(data, offsets, flag, trigger)
    encoded = [t.encode("utf-8") for t in texts]
    # a row holds a byte of a table; its bytes outside a table, counted
    assert flagged.tolist() == [any(flag[b] for b in e) for e in encoded]
    assert triggered.tolist() == [any(trigger[b] for b in e) for e in encoded]
    assert rows_kept_bytes(data, offsets, flag).tolist() == [sum(not flag[b] for b in e) for e in encoded]


def gram_bits_definition(hashes: list[int]) -> tuple[set[int], int]:
    """(the bits set in the table, mask): 16 bits per hash rounded up to a power of two, at least 64 and
    at most 2**27; bit (h & mask) set for every hash h, no other."""
    size = 64
    while size < 16 * len(hashes) and size < 1 << 27:
        size *= 2
    return {h & (size - 1) for h in hashes}, size - 1


@settings(max_examples=200)
@given(st.lists(st.integers(0, M64), max_size=300, unique=True).map(sorted))
@example([])
@example([0, 63, 64, M64])
@example(list(range(0, 1 << 40, (1 << 27) + 1)))  # 8,192 needles: a table of 2**17 bits
def test_gram_bits_is_its_definition(hashes):
    words, mask = gram_bits(np.array(hashes, dtype=np.uint64))
    table, want_mask = gram_bits_definition(hashes)
    assert int(mask) == want_mask
    assert len(words) == (want_mask + 1) // 64
    set_bits = np.flatnonzero(np.unpackbits(words.astype("<u8").view(np.uint8), bitorder="little"))
    assert set(set_bits.tolist()) == table


# ---------------------------------------------------------------------------- the fingerprint set

K1, K2, K3, K4 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93


def rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def fingerprint_definition(data: bytes, key0: int, key1: int, seed: int) -> tuple[int, int]:
    """The module docstring's fingerprint: two lanes of multiply-rotate mixing over the bytes read as
    little-endian 64-bit words (the last one zero-padded), each finished with the length and a full
    avalanche."""
    h1, h2 = key0 ^ seed, key1 ^ ((seed * K1) & M64)
    for p in range(0, len(data), 8):
        w = int.from_bytes(data[p : p + 8], "little")
        h1 = (rotl(h1 ^ ((w * K1) & M64), 31) * K2) & M64
        h2 = ((rotl(h2, 27) + (w ^ K3)) * K4) & M64
    n = len(data)
    h1 = avalanche(h1 ^ n)
    h2 = avalanche(h2 ^ ((n * K3) & M64) ^ h1)
    return h1, h2 ^ rotl(h1, 17)


def combined_definition(parts: list[tuple[int, int]]) -> tuple[int, int]:
    """One fingerprint of a run of fingerprints, order counted."""
    h1, h2 = K2, K4
    for lo, hi in parts:
        h1 = (avalanche(rotl(h1, 23) ^ lo) + K1) & M64
        h2 = (avalanche(rotl(h2, 41) ^ hi ^ h1) + K3) & M64
    n = len(parts)
    return avalanche(h1 ^ n), avalanche(h2 ^ ((n * K1) & M64))


@settings(max_examples=200)
@given(texts=st.lists(st.one_of(st.text(), st.none()), max_size=20), seed=st.integers(0, M64))
@example(texts=[], seed=0)
@example(texts=["", None, "12345678", "123456789", HUGE], seed=M64)
def test_fingerprints_are_their_definition(texts, seed):
    lo, hi = text_set.fingerprints(pa.array(texts, pa.large_string()), seed)
    key0, key1 = (int(k) for k in text_set._KEY)
    want = [fingerprint_definition((t or "").encode("utf-8"), key0, key1, seed) for t in texts]
    assert list(zip(lo.tolist(), hi.tolist())) == want


@settings(max_examples=200)
@given(st.lists(st.lists(st.tuples(st.integers(0, M64), st.integers(0, M64)), max_size=6), max_size=10))
@example([])
@example([[], [(0, 0)], [(M64, M64), (0, 1)]])
def test_combined_is_its_definition(runs):
    offsets = np.cumsum([0] + [len(r) for r in runs], dtype=np.int64)
    flat = [p for r in runs for p in r]
    lo = np.array([p[0] for p in flat], dtype=np.uint64)
    hi = np.array([p[1] for p in flat], dtype=np.uint64)
    got_lo, got_hi = text_set.combined(offsets, lo, hi)
    assert list(zip(got_lo.tolist(), got_hi.tolist())) == [combined_definition(r) for r in runs]


# Fingerprints from a small pool, so copies are common; (0, 0) (the empty slot's mark) among them.
FINGERPRINT = st.tuples(st.sampled_from([0, 1, 2, M64, 1 << 63, 12345]), st.sampled_from([0, 1, 7, M64]))


@settings(max_examples=200)
@given(
    batches=st.lists(st.lists(FINGERPRINT, max_size=30), max_size=6),
    max_entries=st.integers(1, 40),
)
@example(batches=[[(0, 0), (0, 1), (0, 0)]], max_entries=5)
def test_the_set_is_a_set_that_stops_adding_when_full(batches, max_entries):
    """add_fingerprints: new where not kept (then kept while fewer than max_entries are); (0, 0) is stored
    as (0, 1), the empty slot's mark being (0, 0)."""
    seen = text_set.TextSet(max_entries=max_entries)
    kept: set[tuple[int, int]] = set()
    for batch in batches:
        want = []
        for lo, hi in batch:
            key = (lo, 1) if (lo, hi) == (0, 0) else (lo, hi)
            want.append(key not in kept)
            if key not in kept and len(kept) < max_entries:
                kept.add(key)
        lo = np.array([f[0] for f in batch], dtype=np.uint64)
        hi = np.array([f[1] for f in batch], dtype=np.uint64)
        assert seen.add_fingerprints(lo, hi).tolist() == want
        assert seen.count == len(kept)
        assert seen.full == (len(kept) >= max_entries)
