"""The lowercased text of an output, made once for the rules that read it.

Turn cutting, the span rules, the invented-turn check and the self-rating check each read the
output lowercased; a long reasoning output was lowercased four times per verdict (about 7% of its
verdict), and a str caches its hash, so the cache's lookup of the same text is cheap. A pattern whose
matches open with known words is tried only where the lowered text holds one (matches_at_words).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

# the letters beyond ASCII that IGNORECASE matches to an ASCII letter (all of Unicode, checked by
# tests/verify/test_verify_speed.py): a text without them matches an ASCII word ignoring case where its
# lowered text holds the word
FOLDS_TO_ASCII_RE = re.compile("[\u0130\u0131\u017f\u212a]")


@lru_cache(maxsize=8)
def lowered(text: str) -> str:
    """text.lower()."""
    return text.lower()


def matches_at_words(regex: re.Pattern, text: str, low: str, words: tuple[str, ...]) -> Iterator[re.Match]:
    """regex.finditer(text) for a regex whose every match opens with one of `words` (as low, the
    lowered text, writes them): tried only where a word begins, not at every character -- a long
    reasoning output is read once per marker language (and by math-verify's "answer" patterns), and
    the search from every position cost most of the verdict there. Where lowering changed the text's
    length, positions differ: finditer."""
    if len(low) != len(text):
        yield from regex.finditer(text)
        return
    starts: set[int] = set()
    for word in words:
        at = low.find(word)
        while at >= 0:
            starts.add(at)
            at = low.find(word, at + 1)
    done = 0
    for at in sorted(starts):
        if at < done:  # inside the match before (finditer goes on from its end)
            continue
        m = regex.match(text, at)
        if m is not None:
            yield m
            done = max(m.end(), at + 1)
