"""The lowercased text of an output, made once for the rules that read it.

Turn cutting, the span rules, the invented-turn check and the self-rating check each read the
output lowercased; a long reasoning output was lowercased four times per verdict (about 7% of its
verdict), and a str caches its hash, so the cache's lookup of the same text is cheap.
"""

from __future__ import annotations

import re
from functools import lru_cache

# the letters beyond ASCII that IGNORECASE matches to an ASCII letter (all of Unicode, checked by
# tests/verify/test_verify_speed.py): a text without them matches an ASCII word ignoring case where its
# lowered text holds the word
FOLDS_TO_ASCII_RE = re.compile("[\u0130\u0131\u017f\u212a]")


@lru_cache(maxsize=8)
def lowered(text: str) -> str:
    """text.lower()."""
    return text.lower()
