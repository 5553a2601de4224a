"""The compiled n-gram pass (pairstore.holdout.kernels) gives exactly the windows of the vectorized word
path and of a plain Python reading: same words, same vocabulary, same hashes, same order."""

from __future__ import annotations

import random
import string

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from pairstore.holdout.scan import GramLookup
from pairstore.ngram_hash import Q, Vocabulary, text_ngram_table

# Pieces that meet at word boundaries in every way the reading has to get right: each ASCII whitespace,
# the separators str.split() also splits on, Unicode spaces (one, two and three bytes), punctuation glued
# to words, upper case, non-ASCII letters, words longer than 8 and 16 bytes, words that share a prefix.
PIECES = [
    "the", "The", "THE", "cat", "ca", "cats", "sat", "on", "mat", "x1", "é", "naïve", "北京", "a.b", "Q:",
    "<p>", "it's", "abcdefghijklmnopq", "abcdefghijklmnopr", "abcdefgh", "17", "3.15", "1,250", "ß",
]  # fmt: skip
GLUE = [" ", "", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\u00a0", "\u0085", "\u2003",
        "\u3000", "\u2028", "\u1680", ",", "!", "\u200b", "-"]  # fmt: skip


def random_texts(seed: int, count: int) -> list[str | None]:
    rng = random.Random(seed)
    texts: list[str | None] = []
    for _ in range(count):
        k = rng.choice([0, 1, 2, 3, 5, 12, 40])
        texts.append("".join(rng.choice(GLUE) + rng.choice(PIECES) for _ in range(k)) + rng.choice(GLUE))
    texts += ["", None, " ", "\u3000"]
    return texts


def python_ngrams(vocab: Vocabulary, texts, n: int) -> tuple[list[int], list[int]]:
    """The reading written out plainly: janitor words (str.split after ASCII lower case and punctuation to
    spaces), windows of n words all in the vocabulary, hash sum_k xxh3_64(word_k) * Q**k mod 2**64."""
    table = str.maketrans(
        string.ascii_uppercase + string.punctuation + "\x1c\x1d\x1e\x1f",
        string.ascii_lowercase + " " * (len(string.punctuation) + 4),
    )
    known = set(vocab.words.to_pylist())
    docs, hashes = [], []
    for d, text in enumerate(texts):
        words = (text or "").translate(table).split()
        for i in range(len(words) - n + 1):
            window = words[i : i + n]
            if all(w in known for w in window):
                h = sum(
                    xxhash.xxh3_64_intdigest(w.encode()) * pow(Q, k, 1 << 64) for k, w in enumerate(window)
                )
                docs.append(d)
                hashes.append(h % (1 << 64))
    return docs, hashes


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [1, 2, 3, 13])
def test_compiled_pass_equals_the_word_path_and_plain_python(seed, n):
    texts = random_texts(seed, 400)
    # the vocabulary of a part of the texts, so some words of the rest are unknown
    vocab = Vocabulary.of_texts([t or "" for t in texts[: 40 + seed * 10]])
    arr = pa.array(texts, pa.large_string())
    docs, hashes = vocab.ngrams(arr, n, doc_base=7)
    ref_docs, ref_hashes = vocab.ngrams_by_words(arr, n, doc_base=7)
    assert docs.tolist() == ref_docs.tolist()
    assert hashes.tolist() == ref_hashes.tolist()
    py_docs, py_hashes = python_ngrams(vocab, texts, n)
    assert (docs - 7).tolist() == py_docs and hashes.tolist() == py_hashes
    if n <= 3:
        assert len(docs), "the random texts must hold windows for the comparison to mean something"


@pytest.mark.parametrize("seed", range(4))
def test_the_fused_lookup_keeps_exactly_the_windows_a_gram_lookup_keeps(seed):
    texts = random_texts(100 + seed, 600)
    vocab = Vocabulary.of_texts([t or "" for t in texts])
    arr = pa.array(texts, pa.large_string())
    all_docs, all_hashes = vocab.ngrams_by_words(arr, 3)
    rng = np.random.default_rng(seed)
    # needles: some of the texts' grams and random hashes sharing their low bits (the prefilter's table)
    some = rng.choice(all_hashes, size=max(1, len(all_hashes) // 9), replace=False)
    decoys = (some & np.uint64(0xFFFFF)) | (
        rng.integers(1, 1 << 40, len(some)).astype(np.uint64) << np.uint64(24)
    )
    lookup = GramLookup(np.unique(np.concatenate([some, decoys])))
    docs, hashes = vocab.ngrams(arr, 3, lookup=lookup)
    keep = lookup.contains(all_hashes)
    assert keep.any() and not keep.all()
    assert docs.tolist() == all_docs[keep].tolist() and hashes.tolist() == all_hashes[keep].tolist()
    empty = GramLookup(np.array([], np.uint64))
    assert len(vocab.ngrams(arr, 3, lookup=empty)[0]) == 0


def test_text_ngram_table_is_the_same_on_any_number_of_threads_and_chunks():
    rng = random.Random(5)
    words = [f"w{i}" for i in range(300)]
    # about 9 MB: three 4 MB chunks
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 300))) for _ in range(9000)]
    vocab = Vocabulary.of_texts(texts[:50])
    one = text_ngram_table(vocab, texts, 3, threads=1)
    four = text_ngram_table(vocab, texts, 3, threads=4)
    docs, hashes = vocab.ngrams_by_words(pa.array(texts, pa.large_string()), 3)
    for table in (one, four):
        assert table["doc"].to_numpy().tolist() == docs.tolist()
        assert table["ngram"].to_numpy().tolist() == hashes.tolist()


def test_an_empty_vocabulary_or_no_text_gives_no_windows():
    empty = Vocabulary.of_texts([])
    assert len(empty.ngrams(pa.array(["a b c"], pa.large_string()), 1)[0]) == 0
    vocab = Vocabulary.of_texts(["a b c"])
    assert len(vocab.ngrams(pa.array([], pa.large_string()), 1)[0]) == 0
    assert vocab.ngrams(pa.array(["a b c"], pa.large_string()), 3)[0].tolist() == [0]


def _mandatory_chars(items) -> set[str] | None:
    """Characters every match of a parsed regex sequence must hold (None: cannot tell, i.e. everything)."""
    from re import _constants as c  # type: ignore[attr-defined]

    must: set[str] = set()
    for op, arg in items:
        if op is c.LITERAL:
            must.add(chr(arg))
        elif op is c.SUBPATTERN:
            must |= _mandatory_chars(arg[-1]) or set()
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1:
            must |= _mandatory_chars(arg[2]) or set()
        elif op is c.BRANCH:
            branches = [_mandatory_chars(b) or set() for b in arg[1]]
            must |= set.intersection(*branches) if branches else set()
    return must


def test_every_alternative_of_the_fold_pattern_holds_a_trigger_byte():
    """needs_fold_mask sends to RE2 only the texts holding a trigger byte: that is sound only while every
    alternative of the pattern must match one of them. Read from the pattern itself, so a new alternative
    without one fails here."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    from pairstore.holdout.scan import NEEDS_WORD_TEXT_TRIGGERS
    from pairstore.normalize import NEEDS_WORD_TEXT_PATTERN

    parsed = list(_parser.parse(NEEDS_WORD_TEXT_PATTERN))
    assert len(parsed) == 1 and parsed[0][0] is c.BRANCH
    triggers = set(NEEDS_WORD_TEXT_TRIGGERS.decode())
    alternatives = parsed[0][1][1]
    assert len(alternatives) >= 8
    for alt in alternatives:
        assert _mandatory_chars(alt) & triggers, f"an alternative holds no trigger byte: {alt}"
    # and the reader of the pattern is not vacuous: a sequence of plain letters has no trigger
    assert not _mandatory_chars(_parser.parse("abc")) & triggers


@pytest.mark.parametrize("seed", range(3))
def test_fold_mask_and_loose_hashes_agree_with_the_python_rule(seed):
    from pairstore.holdout.scan import _LOOSE_DELETE, _LOWER, loose_hashes, needs_fold_mask
    from pairstore.normalize import needs_fold

    rng = random.Random(seed)
    extra = ["&amp;", "&#39;", "\\n", "\\u0041", "_x0041_", "<|im_end|>", "[INST]", "<p>", "Question:",
             "\n### Response:", "a:b", "\x07", "\x7f", "&", "\\", "_", "<", "[", ":", "<<SYS>>"]  # fmt: skip
    texts = [
        "".join(rng.choice(GLUE + extra) + rng.choice(PIECES) for _ in range(rng.randint(0, 8)))
        for _ in range(2000)
    ]
    arr = pa.array(texts, pa.large_string())
    mask = needs_fold_mask(arr)
    assert mask.tolist() == [needs_fold(t) for t in texts]
    assert mask.any() and not mask.all()

    def loose(t: str) -> bytes:
        return t.encode().translate(_LOWER, _LOOSE_DELETE)

    lengths = np.array(sorted({len(loose(t)) for t in texts[::5]}), dtype=np.int64)
    got = loose_hashes(arr, lengths)
    want = [
        xxhash.xxh3_64_intdigest(loose(t)) if len(loose(t)) in set(lengths.tolist()) else 0 for t in texts
    ]
    assert got.tolist() == want
    assert loose_hashes(arr).tolist() == [xxhash.xxh3_64_intdigest(loose(t)) for t in texts]


def test_every_character_breaks_words_exactly_where_str_split_breaks_them():
    """Each code point up to U+3100 (and every 7th beyond, to U+FFFF) between two known words: the
    compiled pass sees two words exactly when str.split() does, and reads the punctuation and upper case
    of ASCII as the janitor does."""
    points = [*range(1, 0x3100), *range(0x3100, 0x10000, 7)]
    texts = [f"ab{chr(c)}cd" for c in points if not 0xD800 <= c <= 0xDFFF]
    vocab = Vocabulary.of_texts(["ab cd"])
    arr = pa.array(texts, pa.large_string())
    docs, hashes = vocab.ngrams(arr, 2)
    py_docs, py_hashes = python_ngrams(vocab, texts, 2)
    assert docs.tolist() == py_docs and hashes.tolist() == py_hashes
    assert 40 < len(py_docs) < 100  # the separators of str.split and ASCII punctuation, nothing else


def test_many_one_byte_texts_fill_the_output_without_overrunning_it():
    """The compiled pass writes into an array sized from the text's bytes and count (no bounds checks in
    compiled code): one-byte texts, each a word and a window, are the most windows per byte there are."""
    texts = ["a", "b", "a", "b"] * 5000 + ["a b a b a"]
    vocab = Vocabulary.of_texts(["a b"])
    arr = pa.array(texts, pa.large_string())
    docs, hashes = vocab.ngrams(arr, 1)
    assert len(docs) == 20005
    assert docs.tolist() == vocab.ngrams_by_words(arr, 1)[0].tolist()
    assert hashes.tolist() == vocab.ngrams_by_words(arr, 1)[1].tolist()
