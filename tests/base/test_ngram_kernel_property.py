"""The compiled n-gram pass (pairstore.ngram_kernel, through Vocabulary.ngrams) is the plain Python
reading of pairstore.ngram_hash's docstring on any text: unicode of any code point, empty and very long
texts, words past 8 and 16 bytes that share a prefix, any vocabulary, window length and needle set."""

from __future__ import annotations

import string

import numpy as np
import pyarrow as pa
import xxhash
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pairstore.holdout.scan import GramLookup
from pairstore.ngram_hash import Q, Vocabulary

_JANITOR = str.maketrans(
    string.ascii_uppercase + string.punctuation + "\x1c\x1d\x1e\x1f",
    string.ascii_lowercase + " " * (len(string.punctuation) + 4),
)


def janitor_words(text: str | None) -> list[str]:
    """The words of the docstring: ASCII letters lower-cased, ASCII punctuation and the separators
    \\x1c-\\x1f to spaces, then str.split()."""
    return (text or "").translate(_JANITOR).split()


def ngrams_definition(vocabulary: set[str], texts, n: int, wanted: set[int] | None = None):
    """(doc, hash) of every window of n consecutive words of one text, all in the vocabulary; the hash is
    sum_k xxh3_64(utf8(w_k)) * Q**k mod 2**64; given `wanted`, only hashes among them."""
    out = []
    for d, text in enumerate(texts):
        words = janitor_words(text)
        for i in range(len(words) - n + 1):
            window = words[i : i + n]
            if all(w in vocabulary for w in window):
                h = sum(
                    xxhash.xxh3_64_intdigest(w.encode()) * pow(Q, k, 1 << 64) for k, w in enumerate(window)
                )
                h %= 1 << 64
                if wanted is None or h in wanted:
                    out.append((d, h))
    return out


# Words that collide on the kernel's packed first 16 bytes or its length, long words, non-ASCII and
# upper case; separators of every kind str.split() knows, punctuation, and any character at all.
WORDS = ["a", "ab", "abcdefgh", "abcdefghi", "abcdefghijklmnop", "abcdefghijklmnopq", "abcdefghijklmnopr",
         "ABC", "é", "北京", "naïve", "x" * 40, "x" * 41, "😀", "0", "17", "\x00", "a\x00"]  # fmt: skip
SEPARATORS = [" ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u1680", "\u2000",
              "\u2028", "\u3000", ",", "!", "'", "\u200b", "-"]  # fmt: skip
WORD_THEN_SEPARATOR = st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)).map("".join)
PIECE = st.one_of(WORD_THEN_SEPARATOR, WORD_THEN_SEPARATOR, st.text(max_size=4), st.characters(codec="utf-8"))
TEXT = st.one_of(st.lists(PIECE, max_size=40).map("".join), st.text(), st.none())


@settings(max_examples=150)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=12),
    vocab_texts=st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=20)), max_size=12),
    n=st.sampled_from([1, 1, 2, 2, 3, 5]),
    take=st.integers(0, 12),
    base=st.integers(0, 1000),
)
@example(texts=[], vocab_texts=["a"], n=1, take=0, base=0)
@example(texts=["", None, " ", "\u3000"], vocab_texts=["a b"], n=1, take=0, base=0)
@example(texts=[("abcdefghijklmnopq " * 30_000).strip()], vocab_texts=WORDS, n=3, take=1, base=5)
@example(texts=["a", "a"], vocab_texts=["a"], n=1, take=2, base=0)
def test_the_compiled_pass_is_the_definition(texts, vocab_texts, n, take, base):
    # part of the texts' own words join the vocabulary, so windows form
    vocab = Vocabulary.of_texts(vocab_texts + [w for t in texts[:take] for w in janitor_words(t)])
    vocabulary = set(vocab.words.to_pylist())
    # a slice of a larger array: the Arrow offsets start past zero
    arr = pa.array(["pad ab", None, *texts], pa.large_string()).slice(2)
    want = ngrams_definition(vocabulary, texts, n)
    docs, hashes = vocab.ngrams(arr, n, doc_base=base)
    assert list(zip((docs - base).tolist(), hashes.tolist())) == want
    # a needle set: every other window's hash, and hashes sharing their low bits (the kernel's prefilter)
    needles = {h for _, h in want[::2]} | {(h ^ (1 << 40)) for _, h in want[1::3]}
    lookup = GramLookup(np.array(sorted(needles), dtype=np.uint64))
    docs, hashes = vocab.ngrams(arr, n, lookup=lookup)
    assert list(zip(docs.tolist(), hashes.tolist())) == ngrams_definition(vocabulary, texts, n, needles)
