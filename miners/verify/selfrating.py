"""Self-ratings: a value a model rates its own answer with is never an answer candidate.

    from miners.verify.selfrating import is_self_rating, is_self_rating_sentence
    text = "The final answer is $\\\\boxed{5432}$, and my confidence level is $\\\\boxed{99\\\\%}$."
    # the first box is the answer, the second a self-rating
    is_self_rating_sentence("I would rate my confidence at 100%.")   # -> True
    is_self_rating_sentence("So the total is 100%.")                 # -> False

Prompts that ask for "the answer and a confidence level" get outputs whose last box, or last "... is
X" statement, is the confidence: "I am $\\\\boxed{100\\\\%}$ confident", "my confidence level in this
answer is 100%", "Confidence: 80%", "my confidence level is: \\\\[ \\\\boxed{100} \\\\]". A candidate is a
self-rating when its value is a rating (a percentage, or a bare number from 0 to 100, or a word such as
"high") and the clause it stands in says it rates the answer: a rating noun ("confidence",
"certainty", in the languages of miners.verify.markers) before it in the same clause, or, for a
percentage, a rating word before it or right after it ("I am 100% sure"). A bare number needs the
noun: "I am confident the answer is 12" rates nothing, 12 is the answer.
"""

from __future__ import annotations

import re
from functools import lru_cache

from miners.verify.lowered import lowered
from miners.verify.markers import (
    SELF_RATING_ADJECTIVES,
    SELF_RATING_NOUNS,
    Substrings,
    covering_pieces,
    word_trie,
)

# a word of a spaced script ends where its letters do ("probability that i" is not "... that it")
_LETTERS = r"A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff"
_START = r"(?<![" + _LETTERS + "])"
_END = r"(?![" + _LETTERS + "])"
# (searched for whether and where a word stands: a trie of the words finds what their alternation finds)
_NOUN_RE = re.compile(_START + word_trie(SELF_RATING_NOUNS, space=r"\ ") + _END, re.I)
_ADJ_RE = re.compile(_START + word_trie(SELF_RATING_ADJECTIVES, space=r"\ ") + _END, re.I)
_ANY_RE = re.compile(_NOUN_RE.pattern + "|" + _ADJ_RE.pattern, re.I)
_RATING_WORDS = tuple(dict.fromkeys(w.lower() for w in (*SELF_RATING_NOUNS, *SELF_RATING_ADJECTIVES)))
# any of them inside a lowercased text, as a trie: one pass over the text (a quarter faster on the
# corpora than a substring search for each word's first four letters)
_ANY_RATING_WORD_RE = re.compile(word_trie(_RATING_WORDS, space=" "))
# the words an ASCII text can hold: fewer first letters for its search to stop at (a quarter faster)
_ASCII_RATING_WORDS = [w for w in _RATING_WORDS if w.isascii()]
_ASCII_RATING_WORD_RE = re.compile(word_trie(_ASCII_RATING_WORDS, space=" "))
# pieces of them ("onfi" in "confidence" and "konfidenz", "sich" in "sicher" and "zuversicht"): a lowered
# ASCII text that holds none holds no rating word, found out in a third less time than by the trie's
# search (most outputs rate nothing)
_ASCII_RATING_PIECES = covering_pieces(
    _ASCII_RATING_WORDS,
    ("onfi", "cert", "sure", "sich", "segur", "sicur", "emin", "yakin", "pew", "zeker", "probability that"),
)
# and of every rating word, for a text beyond ASCII ("уверен" in "уверенность", "信心" in "有信心")
_RATING_PIECES = covering_pieces(
    _RATING_WORDS,
    (*_ASCII_RATING_PIECES, "уверен", "достоверн", "впевнен", "güven", "tin cậy", "tự tin", "sûr", "chắc")
    + ("置信", "信心", "把握", "确信", "確信", "自信", "信頼", "신뢰", "확신"),
)
_RATING_PIECE_SEARCH = Substrings(_RATING_PIECES)
# markup around a value: math delimiters, \boxed{, \text{, braces, bold
_MARKUP_RE = re.compile(r"\\(?:boxed|fbox|text|textbf|mathrm|mbox)\s*\{|\\[()\[\],;! ]|[{}$*_`]")
_PERCENT_RE = re.compile(r"^[~≈]?\s*(\d{1,3}(?:\.\d+)?)\s*(?:\\?%|％|percent\b|per\s*cent\b)", re.I)
_NUMBER_RE = re.compile(r"^(\d{1,3}(?:\.\d+)?)$")
_RATING_WORD_RE = re.compile(
    r"^(?:very\s+|quite\s+|extremely\s+|fairly\s+)?(?:high|low|moderate|medium|complete|absolute|full|total)\b",
    re.I,
)
_AFTER_PERCENT_RE = re.compile(r"^\s*(?:\\?%|％)")
_SENTENCE_END_RE = re.compile(r"[.!?](?=\s)|[。！？]")
# lines that only carry display math between an intro ("My confidence level is:") and its value
_DELIMITER_LINE_RE = re.compile(r"^[\s$\\\[\]()]*$")


def _value(text: str) -> str:
    return _MARKUP_RE.sub(" ", text).strip().rstrip(".;,").strip()


def _clause_before(text: str, start: int, floor: int = 0) -> str:
    """The clause a candidate at text[start] stands in, up to it: back to the last sentence end, and
    across lines only to an intro line that ends with ":" or "is" over nothing but display math."""
    lo = max(floor, start - 240)
    before = text[lo:start]
    lines = before.split("\n")
    kept = [lines[-1]]
    if _DELIMITER_LINE_RE.match(lines[-1]):
        for line in reversed(lines[:-1]):
            if _DELIMITER_LINE_RE.match(line):
                kept.insert(0, line)
                continue
            if line.rstrip(" *_").endswith((":", "：", " is", "为", "是")):
                kept.insert(0, line)
            break
    clause = "\n".join(kept)
    ends = list(_SENTENCE_END_RE.finditer(clause))
    return clause[ends[-1].end() :] if ends else clause


@lru_cache(maxsize=8)  # read_answer asks about one text two or three times in turn (a str caches its hash)
def might_rate(text: str) -> bool:
    """Whether text names a rating at all (no candidate of a text that does not is a self-rating)."""
    low = lowered(text)
    if not low.isascii():
        return _RATING_PIECE_SEARCH.any_in(low) and _ANY_RATING_WORD_RE.search(low) is not None
    return any(p in low for p in _ASCII_RATING_PIECES) and _ASCII_RATING_WORD_RE.search(low) is not None


def is_self_rating(text: str, start: int, end: int, value_text: str, floor: int = 0) -> bool:
    """Whether the candidate text[start:end] (its value as written: value_text) is the model's rating
    of its own answer (module doc). floor: where the clause may begin at the latest (the end of the
    candidate before it: "\\\\boxed{5} and my confidence is \\\\boxed{90}" rates only the second)."""
    value = _value(value_text)
    after = text[end : end + 60]
    after_value = _MARKUP_RE.sub(" ", after)
    percent = bool(_PERCENT_RE.match(value)) or (
        bool(_NUMBER_RE.match(value)) and bool(_AFTER_PERCENT_RE.match(after_value))
    )
    number = _NUMBER_RE.match(value)
    if not percent and not (number and float(number.group(1)) <= 100) and not _RATING_WORD_RE.match(value):
        return False
    clause = _clause_before(text, start, floor)
    if _NOUN_RE.search(clause):
        return True
    if not percent:
        return False
    if _ADJ_RE.search(clause):
        return True
    rest = _AFTER_PERCENT_RE.sub("", after_value, count=1)
    # the rating word stands in the percentage's own line: "ANSWER: 44%" then "CONFIDENCE: 100" on the
    # next is an answer and its rating, not "44% confident"
    return bool(re.match(r"^[ \t]*(?:" + _ANY_RE.pattern + ")", rest, re.I))


def rating_word(text: str) -> re.Match | None:
    """The first word in text that names a rating or says the model is sure ("confidence", "sure"),
    or None."""
    return _ANY_RE.search(text) if might_rate(text) else None


def names_rating_noun(text: str) -> bool:
    """Whether text names a rating by its noun ("confidence", "certainty", ...), not only by an
    adjective ("I'm not sure how to proceed" rates nothing)."""
    return bool(_NOUN_RE.search(text))


def is_self_rating_sentence(sentence: str) -> bool:
    """Whether a whole sentence rates the answer: a percentage, or a number after a rating noun, in a
    sentence that names a rating ("I am 100% confident in this answer because ...", "Confidence
    level: 100%", "I would rate my confidence at 100%")."""
    if not might_rate(sentence) or not _ANY_RE.search(sentence):
        return False
    numbers = list(re.finditer(r"\d+(?:\.\d+)?", sentence))
    if not numbers:
        # talk about the rating with no value in it ("I am confident in my answer.") states no answer
        return True
    for m in numbers:
        tail = _MARKUP_RE.sub(" ", sentence[m.end() : m.end() + 12])
        if _AFTER_PERCENT_RE.match(tail) or re.match(r"^\s*(?:percent|per\s*cent)\b", tail, re.I):
            return True
        if float(m.group()) <= 100 and _NOUN_RE.search(sentence[: m.start()]):
            return True
    return False
