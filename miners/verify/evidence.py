"""What a definite verdict needs, and the one function that grants it (`settle`).

    from miners.verify.evidence import gold_stated, numeric_gold
    gold_stated("Time to dig the hole = 216 seconds\\nMinutes = 216 seconds ÷ 60 =", "216", "gsm8k")  # True
    gold_stated("She saw 15 * 2 = <<15*2=30>>30 bees.\\nShe saw 30 - 6 = <<30", "75", "gsm8k")  # False
    numeric_gold("46.0")   # -> Fraction(46, 1); numeric_gold("x+1") -> None

The property (docs/design.md, "The answer verifier"), enforced by `settle` and nowhere else:

  - WRONG only where (a) the output commits to a complete answer that a second, independent reading
    of its statement confirms, and that compares unequal to the gold; or (b) the gold's value is
    stated nowhere in the output. Rule (b) decides an output with no committed answer, and one whose
    weak reading was compared unequal and nothing confirmed (against a plain-number gold, or where the
    output was cut off); never a reading no verifier could compare, which may hide the gold's value.
  - CORRECT only where the committed answer compares equal to the gold.
  - Everything else is UNKNOWN, with its reason.

A complete answer (`open_reason` says why one is not): non-empty; not ending on an operator, an "="
or a word no sentence ends on; not a list of alternatives ("12 or 15", "x = 2 oder x = 3") against a
gold that is one value; not the left side of an equation whose right side follows it
("$\\boxed{a+b} = 12$", "Answer: 3 × 4" over "= 12"); not read with no marker or box out of the
working before the point where the output was cut off (`Commitment.after_cut`: "truncated after a
possible answer"). The second reading (`confirms`) reads the answer's statement past the span the
rules took: the rest of its sentence, and the lines that continue it (a line opening with "=" or an
operator, a fenced, quoted or display block right after it). Where that text states the gold's
value, the two readings differ and nothing is confirmed. A weak form (a value chosen out of prose)
needs math-verify's reading of the whole output as well (miners.verify.verifier).

"Stated" is read generously (a wrong "stated" costs coverage; a wrong "not stated" would put a right
answer on the rejected side):

- a gold that is a plain number (an integer, a decimal, a fraction, a percentage): every number the
  text writes, anywhere, compared by magnitude (a sign, a percent sign, a currency and a unit are
  ignored: "-3" and "3%" may both state 3, and "50%" states 0.5 as well) -- digits in any script
  (full-width, Arabic-Indic, Devanagari, ...), thousands grouped by commas, dots, spaces or
  apostrophes, a decimal comma ("3,5", "1.234,5"), LaTeX groupings (`1{,}234`, `1\\,234`),
  `\\frac{a}{b}`, `a/b` (and its two parts), mixed numbers (`2\\frac{1}{4}`, "2 1/4"), e-notation and
  powers of ten ("2.5e3", `1.2 \\times 10^{3}`), base prefixes and subscripts ("0x1F", `1010_2`),
  a scale ("1.5k", "3 million"), number words ("five", "two hundred"), Chinese and Japanese
  numerals ("十二", "三百零五"); the labels of a numbered list ("1. ... 2. ...") count items, no value;
- an option-letter gold: the letter standing alone anywhere, or its option's value stated;
- a task gold (a loop-fix generator's string): its text, or its numbers;
- any other gold (an expression, a set, an equation): every result the text states (what follows an
  "=" or a copula up to the end of its clause), every math segment and box, and every alternative of
  a committed answer, compared with the gold by the fast path; one equal or one it cannot decide
  could be the answer, where it could be a value at all: not a clause that opens with a word, and,
  against a gold of digits and no variable, not a candidate with no digit or with a variable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache, partial
from itertools import chain

from miners.verify.brackets import closing_index, depth_zero
from miners.verify.fast import fast_compare
from miners.verify.lowered import FOLDS_TO_ASCII_RE, lowered
from miners.verify.markers import (
    ALTERNATIVE_WORDS,
    NUMBER_WORDS_ANY_TEXT,
    NUMBER_WORDS_IN_LANGUAGE,
    covering_pieces,
    opening_chars,
    word_trie,
)
from miners.verify.normalize import ascii_forms
from miners.verify.parse import numeral_fraction
from miners.verify.prose import first_value, number_words_values
from miners.verify.rules import strip_answer
from miners.verify.selfrating import rating_word
from miners.verify.types import (
    ALTERNATIVES,
    AMBIGUOUS,
    CORRECT,
    EMPTY_AFTER_VALUE,
    EMPTY_ANSWER,
    EMPTY_OUTPUT,
    EQUAL,
    FAST,
    GOLD_ABSENT,
    INCOMPLETE,
    LOOPED,
    LOOPED_AFTER_VALUE,
    NO_ANSWER,
    TRUNCATED,
    TRUNCATED_AFTER_VALUE,
    UNCONFIRMED,
    UNDECIDED,
    UNEQUAL,
    UNKNOWN,
    WEAK_UNCONFIRMED,
    WRONG,
    Verdict,
)

# ------------------------------------------------------------------------- numbers, as written
# (A number's readers below open with the digit itself and look behind it, "\\d(?<![\\d.]\\d)", not
# with "(?<![\\d.])\\d": a pattern that opens with a character class is searched for that class
# first, where a lookbehind is tried at every character; a long reasoning output is read by all of
# them for rule (b). tests/verify/test_verify_speed.py holds each equal to its lookbehind-first form.)

# a gold that is one plain number: "216", "-3", "46.0", "1,250", "3/4", "\\frac{3}{4}", "50\\%"
_PLAIN_GOLD_RE = re.compile(
    r"^\s*\\?\$?\s*(?P<sign>[-−])?\s*\\?\$?\s*(?:\\[dt]?frac\s*\{\s*(?P<fn>\d+)\s*\}\s*\{\s*(?P<fd>\d+)\s*\}"
    r"|(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:\s*/\s*(?P<d>\d+))?)"
    r"\s*(?:\\?%|\\text\{\s*\\?%\s*\})?\s*\.?\s*$"
)
# every number an output writes: \frac{a}{b}, a/b, digits with or without thousands commas, decimals
_TEXT_NUMBER_RE = re.compile(
    r"\\[dt]?frac\s*\{\s*(?P<fn>\d+)\s*\}\s*\{\s*(?P<fd>\d+)\s*\}"
    r"|(?P<n>\d(?<![\d.]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d*(?:\.\d+)?)|\.(?<![\d.]\.)\d+)"
    r"(?:\s*/\s*(?P<d>\d+)(?!\d|\.\d))?"
    r"(?P<pct>\s*(?:\\?%|percent\b))?"
)
# other ways to write a number, read as well (generous): thousands grouped by a space, a dot, an
# apostrophe or a LaTeX spacing ("1 000", "1.000", "1'000", "1{,}000", "1\\,000"), e-notation
# ("2.5e3"), a scale after digits ("1.5k", "3 million")
_GROUP_SEP = r"(?:[ .'’\u00a0\u2009\u202f,]|\{,\}|\\[,! ])"
_GROUPED_RE = re.compile(r"(\d(?<![\d.]\d)\d{0,2}(?:" + _GROUP_SEP + r"\d{3})+)(?:\.(\d+))?(?![\d])")
# a decimal comma, with or without thousands groups before it ("3,5", "1.234,5", "1 234,56")
_DECIMAL_COMMA_RE = re.compile(
    r"(\d(?<![\d.,]\d)(?:\d{0,2}(?:" + _GROUP_SEP + r"\d{3})*|\d*)),(\d+)(?![\d,])"
)
_SCALED_RE = re.compile(
    r"(\d(?<![\d.]\d)\d*(?:\.\d+)?)\s*(?:[eE]\s*([+-]?\d{1,3})(?!\d)|(k|K|thousand|million|billion)\b)"
)
_SCALES = {"k": 1000, "K": 1000, "thousand": 1000, "million": 10**6, "billion": 10**9}
# a power of ten, alone or times a mantissa: "1.2 \\times 10^{3}", "3·10^5", "10^{6}", "10^{−2}"; an
# exponent of four digits or more is none it reads ("10^1234" is not 10^123)
_POWER_OF_TEN_RE = re.compile(
    r"(?:(?<![\d.])(\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|×|·|\*|x)\s*)?10\s*\^\s*\{?\s*([-+−]?\d{1,3}(?!\d))\s*\}?"
)
# a mixed number: "2\\frac{1}{4}", "2 1/4"
_MIXED_RE = re.compile(
    r"(\d(?<![\d.]\d)\d*)\s*(?:\\[dt]?frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}|\s(\d+)\s*/\s*(\d+)(?!\d|\.\d))"
)
# a numeral in another base: "0x1F", "0b1010", "0o17", "1010_2", "1010_{2}", "(1010)_2"
_BASED_RE = re.compile(r"(?<![\w.])0([xXbBoO])([0-9a-fA-F]+)\b|\(?\b([0-9A-Fa-f]+)\)?_\{?(\d{1,2})\}?")
_PREFIX_BASE = {"x": 16, "b": 2, "o": 8}
# what _BASED_RE cannot match without: a base prefix ("0x"), or a subscript's "_" before a digit (a
# text with neither, most of them, is not scanned: _BASED_RE has no literal to search for and is tried
# everywhere; most subscripts, "x_i", and markdown's "__" have no digit)
_BASE_SIGN_RE = re.compile(r"0[xXbBoO]|_\{?\d")
# what _POWER_OF_TEN_RE cannot match without: "10" and its "^"
_TEN_TO_THE_RE = re.compile(r"10\s*\^")


def _fraction(n: str | None, d: str | None, fn: str | None = None, fd: str | None = None) -> Fraction | None:
    try:
        if fn is not None and fd is not None:
            return Fraction(int(fn), int(fd)) if int(fd) else None
        if n is None:
            return None
        value = numeral_fraction(n.replace(",", ""))
        if d is not None:
            return value / int(d) if int(d) else None
        return value
    except (ValueError, ZeroDivisionError):
        return None


@lru_cache(maxsize=64)  # asked about one gold by the verdict, its settling and the readers of rule (b)
def numeric_gold(gold_text: str) -> Fraction | None:
    """The magnitude of a gold that is one plain number (module doc), else None."""
    m = _PLAIN_GOLD_RE.match(gold_text)
    if m is None:
        return None
    value = _fraction(m.group("n"), m.group("d"), m.group("fn"), m.group("fd"))
    return abs(value) if value is not None else None


def _exact(number: str, divisor: int = 1, factor: Fraction = Fraction(1)) -> Fraction:
    return abs(numeral_fraction(number)) / divisor * factor


Written = tuple[float, Callable[[], Fraction]]


def read_plain(text: str) -> str:
    """text as the number readers below read it: digits of other scripts in ASCII, a LaTeX comma
    ("223{,}28") a comma, JSON's doubled backslashes single."""
    text = ascii_forms(text)
    if "{," in text or "\\\\" in text:
        text = text.replace("{,}", ",").replace("\\\\", "\\")
    return text


# Every character a match of the digit readers below (all but the CJK numerals') may hold: digits,
# spacing, the marks and signs they read, the letters of their words ("frac", "percent", "times",
# "cdot", "thousand", "million", "billion", "k", "e") and of base prefixes and hex digits. A match
# lies within a run of these that holds a digit, and its lookarounds see a character of that run or
# the one next to it. So a run of them with no digit, between two other characters, is no part of
# any match and no neighbour a lookaround sees: dropped, it leaves every reader the same matches
# (tests/verify/test_verify_speed.py), and a long reasoning output's prose (a third of it is left) is
# not scanned by each reader in turn.
_NUMBER_CHARS = r"\s\\{},.'’/%^*+\-−×·()_!abcdefhiklmnoprstuxABCDEFKOX"
_NO_NUMBER_RUN_RE = re.compile(
    r"(?<![" + _NUMBER_CHARS + r"\d])[" + _NUMBER_CHARS + r"]++(?![" + _NUMBER_CHARS + r"\d])"
)


def _written(text: str, distinct: bool = False) -> Iterator[Written]:
    """Every number text writes (module doc), as (its magnitude as a float, a thunk for the exact
    magnitude): the float rules most out cheaply, the exact value decides the few left. A number no
    reader can take (5,000 digits, "1e999") is skipped. distinct: a reader's match written the same
    way again (the same text, the same groups: the same values) is read once -- for a caller that
    asks whether a value is among them, not how often (a long output repeats its numbers)."""
    text = read_plain(text)
    numbers = _NO_NUMBER_RUN_RE.sub("", text)  # (what the digit readers read: the same matches)
    # lazily, in the same order: a caller that finds its value early (_writes) scans no further
    for values_of, reader, may_match, whole in _READERS:
        # (every character a reader needs is in `numbers`: its test reads the shorter text)
        if may_match is not None and not may_match(numbers):
            continue
        read = text if whole else numbers
        seen: set[tuple] | None = set() if distinct else None
        for m in reader.finditer(read):
            if seen is not None:
                key = (m.group(0), m.groups())
                if key in seen:
                    continue
                seen.add(key)
            try:
                yield from values_of(m)
            except (ValueError, OverflowError, ZeroDivisionError):
                continue
    words_values = number_words_values(text)
    for words in dict.fromkeys(words_values) if distinct else words_values:
        yield abs(float(words)), partial(_exact, words)


def _number_values(m: re.Match) -> list[Written]:
    n, d, fn, fd = m.group("n"), m.group("d"), m.group("fn"), m.group("fd")
    if fn is not None:
        return [(int(fn) / int(fd), partial(_exact, fn, int(fd)))]
    plain = n.replace(",", "")
    out: list[Written] = [(float(plain), partial(_exact, plain))]
    if m.group("pct"):  # "50%" may state 0.5
        out.append((float(plain) / 100, partial(_exact, plain, 100)))
    if d is not None:  # "25/5" may be a division (its result follows), or 25 and 5
        out.append((float(d), partial(_exact, d)))
        out.append((float(plain) / int(d), partial(_exact, plain, int(d))))
    return out


def _grouped_values(m: re.Match) -> list[Written]:
    digits = re.sub(r"\D", "", m.group(1))
    out: list[Written] = [(float(digits), partial(_exact, digits))]
    if m.group(2) is not None:  # "1'000.1", "12 345.5": the decimals after the groups
        number = f"{digits}.{m.group(2)}"
        out.append((float(number), partial(_exact, number)))
    return out


def _decimal_comma_values(m: re.Match) -> list[Written]:
    number = re.sub(r"\D", "", m.group(1)) + "." + m.group(2)
    return [(float(number), partial(_exact, number))]


def _scaled_values(m: re.Match) -> list[Written]:
    base, exponent, scale = m.group(1), m.group(2), m.group(3)
    if exponent is not None:
        factor = Fraction(10) ** int(exponent)
        return [(float(f"{base}e{exponent}"), partial(_exact, base, 1, factor))]
    factor = Fraction(_SCALES[scale])
    return [(float(base) * float(factor), partial(_exact, base, 1, factor))]


def _power_values(m: re.Match) -> list[Written]:
    base, exponent = m.group(1) or "1", int(m.group(2).replace("−", "-"))
    factor = Fraction(10) ** exponent
    return [(float(Fraction(base) * factor), partial(_exact, base, 1, factor))]


def _mixed_values(m: re.Match) -> list[Written]:
    whole = int(m.group(1))
    num, den = (m.group(2), m.group(3)) if m.group(2) is not None else (m.group(4), m.group(5))
    value = whole + Fraction(int(num), int(den))
    return [(float(value), lambda: value)]


def _based_values(m: re.Match) -> list[Written]:
    if m.group(1) is not None:
        digits, base = m.group(2), _PREFIX_BASE[m.group(1).lower()]
    else:
        digits, base = m.group(3), int(m.group(4))
    if not 2 <= base <= 36:
        return []
    value = int(digits, base)  # (a digit the base lacks raises ValueError: no reading)
    return [(float(value), lambda: Fraction(value))]


_CJK_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CJK_UNITS = {"十": 10, "百": 100, "千": 1000}
_CJK_BIG = {"万": 10**4, "亿": 10**8}
# a number in Chinese or Japanese numerals: "十二", "三百零五", "两万"
_CJK_NUMERAL_RE = re.compile("[" + "".join((*_CJK_DIGITS, *_CJK_UNITS, *_CJK_BIG)) + "]+")


def _cjk_values(m: re.Match) -> list[Written]:
    total = section = number = 0
    for ch in m.group(0):
        if ch in _CJK_DIGITS:
            number = _CJK_DIGITS[ch]
        elif ch in _CJK_UNITS:
            section += (number or 1) * _CJK_UNITS[ch]
            number = 0
        else:
            total += (section + number) * _CJK_BIG[ch]
            section = number = 0
    value = total + section + number
    out: list[Written] = [(float(value), lambda: Fraction(value))]
    if all(ch in _CJK_DIGITS for ch in m.group(0)) and len(m.group(0)) > 1:  # "一二三" digit by digit
        digits = int("".join(str(_CJK_DIGITS[ch]) for ch in m.group(0)))
        out.append((float(digits), lambda: Fraction(digits)))
    return out


# The number readers in the order _written reads them: (the values of a match, the reader, what a text
# must hold for the reader to match at all, None where nothing is needed, whether it reads the whole
# text rather than its digit runs). A reader that opens with a lookbehind or an optional group has no
# first character for the regex engine to search for and is tried at every position: on a long output,
# skipping the scans that cannot match is most of the cost (tests/verify/test_verify_speed.py holds the
# result equal to every scan in turn). The CJK numerals are read in the whole text: two of them may
# stand on either side of a run _NO_NUMBER_RUN_RE drops.
_READERS: tuple[
    tuple[Callable[[re.Match], list[Written]], re.Pattern, Callable[[str], bool] | None, bool], ...
] = (
    (_number_values, _TEXT_NUMBER_RE, None, False),
    (_grouped_values, _GROUPED_RE, None, False),
    (_scaled_values, _SCALED_RE, None, False),
    (_decimal_comma_values, _DECIMAL_COMMA_RE, lambda t: "," in t, False),
    (_power_values, _POWER_OF_TEN_RE, lambda t: "^" in t and _TEN_TO_THE_RE.search(t) is not None, False),
    (_mixed_values, _MIXED_RE, lambda t: "/" in t or "frac" in t, False),
    (_based_values, _BASED_RE, lambda t: _BASE_SIGN_RE.search(t) is not None, False),
    (_cjk_values, _CJK_NUMERAL_RE, lambda t: not t.isascii() and _CJK_NUMERAL_RE.search(t) is not None, True),
)


def stated_numbers(text: str) -> set[Fraction]:
    """The magnitude of every number text writes, in digits or in words (module doc)."""
    return {exact() for _, exact in _written(text, distinct=True)}


def _writes(text: str, value: Fraction) -> bool:
    target = float(value)
    return any(
        math.isclose(approx, target, rel_tol=1e-9, abs_tol=1e-12) and exact() == value
        for approx, exact in _written(text, distinct=True)
    )


# ----------------------------------------------------------------- values other than numbers

# where a result is stated: after an "=" or a copula, up to the end of its clause
_RESULT_START_RE = re.compile(
    r"(?<![<>!=])=(?!=)|(?i:\b(?:is|are|was|were|equals?|becomes?|gives?|yields?)\b)|[≈:：]"
)
_CLAUSE_END_RE = re.compile(r"\n|(?<![<>!])=|[.!?;](?=\s|$)|\$|\\\]|\\\)|,\s+(?:and|so|then|which)\b")
_MAX_RESULT_CHARS = 160
_MATH_SEGMENT_RE = re.compile(r"\$\$(.+?)\$\$|\$([^$]+)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_MAX_SEGMENTS = 200  # a long output's every segment is not needed: a bound on the work


def stated_results(text: str) -> list[str]:
    """Every result text states: what follows an "=" or a copula, to the end of its clause."""
    out = []
    for m in _RESULT_START_RE.finditer(text):
        rest = text[m.end() : m.end() + _MAX_RESULT_CHARS]
        end = _CLAUSE_END_RE.search(rest)
        result = (rest[: end.start()] if end else rest).strip(" \t*_")
        if result:
            out.append(result)
    return out


def _math_segments(text: str) -> Iterator[str]:
    """Every math segment and the content of every box ($...$, \\(...\\), \\[...\\], \\boxed{...})."""
    if "$" in text or "\\" in text:
        for k, m in enumerate(_MATH_SEGMENT_RE.finditer(text)):
            if k >= _MAX_SEGMENTS:
                break
            yield next(g for g in m.groups() if g is not None)
    for m in _BOX_RE.finditer(text):
        end = closing_index(text, m.end() - 1)
        yield text[m.end() : end - 1 if end >= 0 else len(text)]


def _fast_reading(candidate: str, gold_text: str, kind: str) -> bool | None:
    """The fast path's comparison, None where it cannot tell or cannot take the input."""
    try:
        return fast_compare(candidate, gold_text, kind)
    except Exception:  # an input the fast path cannot take: it could be the answer
        return None


def _may_equal(candidate: str, gold_text: str, kind: str) -> bool:
    return _fast_reading(candidate, gold_text, kind) is not False  # equal, or it cannot tell


# how a number word stands in a text (markers.NUMBER_WORD_PLACES): a word whole; the start of a word
# (a language that joins them, "dreiundzwanzig"); anywhere (one that attaches prefixes, "وثلاثة")
_PLACED = {"word": r"(?<![^\W\d_])(?:{})(?![^\W\d_])", "start": r"(?<![^\W\d_])(?:{})", "anywhere": "(?:{})"}


def _words_re(placed: str, words: tuple[str, ...]) -> str:
    # (these patterns are searched, never read for what they matched: as a trie, the same finds)
    return opening_chars(words) + _PLACED[placed].replace("{}", word_trie(words, space=r"\ "))


_OTHER_NUMBER_WORD_RE = re.compile(
    opening_chars(w for words in NUMBER_WORDS_ANY_TEXT.values() for w in words)
    + "(?:"
    + "|".join(_words_re(placed, words) for placed, words in NUMBER_WORDS_ANY_TEXT.items() if words)
    + ")",
    re.I,
)


def _ascii_reachable(word: str) -> bool:
    """Whether a case-insensitive match of word can be all ASCII: each of its letters is ASCII or
    matches an ASCII letter ignoring case (Turkish "ı" matches "I")."""
    ascii_letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return all(c.isascii() or any(re.fullmatch(re.escape(c), a, re.I) for a in ascii_letters) for c in word)


# the words of _OTHER_NUMBER_WORD_RE an ASCII text can hold: a text that is all ASCII (most outputs)
# is searched for these only, with the same answer
_OTHER_NUMBER_WORD_IN_ASCII_RE = re.compile(
    "|".join(
        _words_re(placed, reachable)
        for placed, words in NUMBER_WORDS_ANY_TEXT.items()
        if (reachable := tuple(w for w in words if _ascii_reachable(w)))
    )
    or r"(?!)",
    re.I,
)
_IN_LANGUAGE = tuple(
    (re.compile(_words_re("word", markers), re.I), re.compile(_words_re(placed, words), re.I))
    for markers, placed, words in NUMBER_WORDS_IN_LANGUAGE
)
# any marker of those languages: a text with none (most outputs) needs no search per language
_ANY_MARKER_IN_LANGUAGE_RE = re.compile(
    opening_chars(w for markers, _, _ in NUMBER_WORDS_IN_LANGUAGE for w in markers)
    + "(?:"
    + ("|".join(marker.pattern for marker, _ in _IN_LANGUAGE) or r"(?!)")
    + ")",
    re.I,
)

# The searches above open on common letters ("a", "r", "s") and so are tried at most positions of a
# long output: each is asked only where a _WordSieve below says its words may be there.
_BEYOND_ASCII = {
    p: tuple(w for w in words if not _ascii_reachable(w)) for p, words in NUMBER_WORDS_ANY_TEXT.items()
}
_OTHER_NUMBER_WORD_BEYOND_ASCII_RE = re.compile(
    opening_chars(w for words in _BEYOND_ASCII.values() for w in words)
    + "(?:"
    + ("|".join(_words_re(placed, words) for placed, words in _BEYOND_ASCII.items() if words) or r"(?!)")
    + ")",
    re.I,
)
_MARKER_WORDS = {w for markers, _, _ in NUMBER_WORDS_IN_LANGUAGE for w in markers}


def _ascii_form(word: str) -> str:
    """word as a text with no letter that folds to ASCII (FOLDS_TO_ASCII_RE) writes it, lowercased:
    each letter the ASCII letter it matches ignoring case ("kırk" -> "kirk")."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "".join(
        c.lower() if c.isascii() else next(a for a in letters if re.fullmatch(re.escape(c), a, re.I))
        for c in word
    )


def _beyond_letters(word: str) -> frozenset[str]:
    """The letters of word that no ASCII letter matches ignoring case."""
    return frozenset(c for c in word if not _ascii_reachable(c))


class _WordSieve:
    """False from `may_hold(text)` only where text holds none of words, matched ignoring case: a test
    far cheaper than a search for the words on a long output (the searches open on common letters, and
    a math output's "π" or "Δ" is a letter of a Greek number word). A word an ASCII letter can match
    throughout is held, in a text with no letter that folds to ASCII, as its _ascii_form in the lowered
    text, so the lowered text holds a piece of that form (`pieces`, and any form none of them is in:
    markers.covering_pieces); any other word needs each of its letters beyond ASCII matched by one of
    the text's (_letters_beyond_ascii). tests/verify/test_verify_speed.py holds _other_number_word and
    _marker_of_a_language equal to their searches."""

    def __init__(self, words: Iterable[str], pieces: Iterable[str] = ()):
        words = tuple(dict.fromkeys(words))
        forms = [_ascii_form(w) for w in words if _ascii_reachable(w)]
        # (a few substring tests, each skipping in C: a search for the forms, even as one trie, stops
        # at every letter one of them opens with -- most of an English text's)
        self.ascii_pieces = covering_pieces(forms, pieces) if forms else ()
        self.letters_of_words = tuple(
            dict.fromkeys(_beyond_letters(w) for w in words if not _ascii_reachable(w))
        )

    def may_hold(self, text: str) -> bool:
        if self.ascii_pieces:
            if FOLDS_TO_ASCII_RE.search(text) is not None:
                return True
            low = lowered(text)
            if any(p in low for p in self.ascii_pieces):
                return True
        if not self.letters_of_words or text.isascii():
            return False
        found = _letters_beyond_ascii(text)
        return any(letters <= found for letters in self.letters_of_words)


# (pieces no common English word holds: "resp" would let "response" through to the search)
_MARKER_SIEVE = _WordSieve(
    _MARKER_WORDS, ("antwo", "cevap", "jawa", "jibu", "respue", "respos", "rispos", "svar", "yanit")
)
_REACHABLE_WORD_SIEVE = _WordSieve(
    w for words in NUMBER_WORDS_ANY_TEXT.values() for w in words if _ascii_reachable(w)
)
_BEYOND_WORD_SIEVE = _WordSieve(w for words in _BEYOND_ASCII.values() for w in words)
_SIEVED_LETTERS = sorted(
    {
        c
        for sieve in (_MARKER_SIEVE, _BEYOND_WORD_SIEVE)
        for letters in sieve.letters_of_words
        for c in letters
    }
)
_SIEVED_LETTER_RE = re.compile("[" + "".join(map(re.escape, _SIEVED_LETTERS)) + "]", re.I)


def _case_key(c: str) -> str:
    """One key for every character IGNORECASE matches to c (checked over all of Unicode by
    tests/verify/test_verify_speed.py): its lowercase, uppercased and lowercased again ("ς", "Σ" and
    "σ" are "σ"; "ſ" and "s" are "s")."""
    return c.lower().upper().lower()


_LETTERS_BY_KEY: dict[str, frozenset[str]] = {
    key: frozenset(c for c in _SIEVED_LETTERS if _case_key(c) == key)
    for key in map(_case_key, _SIEVED_LETTERS)
}


def _letters_matched_by(c: str) -> frozenset[str]:
    """The sieved letters (_SIEVED_LETTERS) a text's character c may match ignoring case: those of its
    case key (every one it matches, and no fewer)."""
    return _LETTERS_BY_KEY.get(_case_key(c), frozenset())


@lru_cache(maxsize=8)  # both sieves ask about one text
def _letters_beyond_ascii(text: str) -> frozenset[str]:
    """The sieved letters that some character of text matches ignoring case (one charset search finds
    every character that matches one)."""
    return frozenset().union(*map(_letters_matched_by, set(_SIEVED_LETTER_RE.findall(text))))


def _marker_of_a_language(text: str) -> bool:
    """Whether text holds an answer marker of a language of NUMBER_WORDS_IN_LANGUAGE."""
    return _MARKER_SIEVE.may_hold(text) and _ANY_MARKER_IN_LANGUAGE_RE.search(text) is not None


@lru_cache(maxsize=64)  # (one output is asked about by several readings; a str caches its hash)
def _other_number_word(text: str) -> bool:
    """Whether text holds a number word of another language than English (markers.NUMBER_WORDS_ANY_TEXT;
    one in ASCII letters only where an answer marker of its language stands)."""
    if _REACHABLE_WORD_SIEVE.may_hold(text) and _OTHER_NUMBER_WORD_IN_ASCII_RE.search(text) is not None:
        return True
    if _BEYOND_WORD_SIEVE.may_hold(text) and _OTHER_NUMBER_WORD_BEYOND_ASCII_RE.search(text) is not None:
        return True
    if not _marker_of_a_language(text):
        return False
    return any(marker.search(text) and words.search(text) for marker, words in _IN_LANGUAGE)


_LETTER_GOLD_RE = re.compile(r"\(?([A-Z])\)?|([A-Z]{2,10})")
# a gold of numbers and brackets only ("(3,034, 3,466)", "[-2, 7]", "\\{1, 2\\}")
_NUMBERS_ONLY_RE = re.compile(r"(?:[\s()\[\]{},;.\d/%$+-]|\\[{}]|\\left|\\right|−)+")
_STATES_A_VALUE_RE = re.compile(r"\d|\$|\\[a-zA-Z]|[=≈]")


def gold_stated(
    text: str, gold_text: str, kind: str, gold_value: str | None = None, also: Iterable[str] = ()
) -> bool:
    """Whether text states the gold's value anywhere (module doc). `gold_value`: the gold letter's
    option, where the options are known; `also`: answers read from the text that count as stated
    values too (the alternatives of an answer that lists them)."""
    if not also and (not text or text.isspace()):
        return False  # nothing written states nothing (what most statements hold past their answer)
    gold_text = gold_text.strip()
    letters = _LETTER_GOLD_RE.fullmatch(gold_text) if kind != "task" else None
    if letters is not None:
        wanted = letters.group(1) or letters.group(2)
        if all(re.search(r"(?<![A-Za-z])" + c + r"(?![a-z])", text) for c in wanted):
            return True
        if any(_may_equal(a, gold_text, kind) for a in also):
            return True
        if gold_value is None:  # the option's value is not known: any value the text states may be it
            return _STATES_A_VALUE_RE.search(text) is not None or number_words_values(text) != []
        return gold_stated(text, gold_value, kind)
    gold = numeric_gold(gold_text)
    if gold is not None:
        body = "\n".join((without_list_labels(text), *also))
        if _writes(body, gold) or ("%" in gold_text and _writes(body, gold / 100)):  # gold 50%, "0.5"
            return True
        # a number in words of another language ("zwölf", "douze") may be the gold's: not computed
        return _other_number_word(body)
    if kind == "task":
        return _task_stated(text, gold_text)
    numbers = _NUMBERS_ONLY_RE.fullmatch(gold_text) and _TEXT_NUMBER_RE.findall(gold_text)
    if numbers and len(numbers) >= 2:  # a tuple, a list or an interval of numbers: each one written
        values = [_fraction(n or None, d or None, fn or None, fd or None) for fn, fd, n, d, _ in numbers]
        body = "\n".join((text, *also))
        if all(v is not None and _writes(body, abs(v)) for v in values):
            return True
    gold_digits = _DIGIT_RE.search(gold_text) is not None and not _letters(gold_text)
    for candidate in chain(also, stated_results(text), _math_segments(text)):
        # the clause whole, and its first value ("\\frac{1}{2} and then the" states \\frac{1}{2})
        first = first_value(candidate)
        if any(c and _may_state(c, gold_text, kind, gold_digits) for c in (candidate, first)):
            return True
    return False


_DIGIT_RE = re.compile(r"\d")
# a LaTeX environment's name is no word of the text ("\\begin{pmatrix}")
_ENVIRONMENT_RE = re.compile(r"\\(?:begin|end)\{[A-Za-z]+\*?\}")
# a word of letters that no backslash makes a command ("radius", "Total" in "\\text{Total}", not "mathbf")
_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]+")
# a clause that opens with a word ("the other leg (radius \\( r"), not with a value ("x^2+2x+1 in all")
_OPENS_WITH_WORD_RE = re.compile(r"[\s*_(\[{]*[A-Za-z]{3,}")


def _letters(text: str) -> list[str]:
    return _WORD_RE.findall(_ENVIRONMENT_RE.sub(" ", text))


def _may_state(candidate: str, gold_text: str, kind: str, gold_digits: bool) -> bool:
    """Whether a candidate may state the gold's value: equal, or a value the fast path cannot decide.
    What cannot be a value is not one it cannot decide: a clause that opens with a word ("the other
    leg (radius \\( r"; its first value is a candidate of its own), and, against a gold of digits
    and no variable, a candidate with no digit or with a variable ("\\pi r s", "Q(17)")."""
    equal = _fast_reading(candidate, gold_text, kind)
    if equal is not None:
        return equal
    if _OPENS_WITH_WORD_RE.match(candidate):
        return False
    # against a gold of digits and no variable: a candidate with no digit, or with a variable (a
    # letter standing alone other than the constants e and i: "\\pi r^2", "10 \\implies Q(17)"),
    # states no value of its own
    variables = {w for w in _letters(candidate) if len(w) == 1} - {"e", "i"}
    return not (gold_digits and (_DIGIT_RE.search(candidate) is None or variables))


# a list item's label at a line's start, text after it ("2. **Subtract the cost", "3) We add")
_LIST_LABEL_RE = re.compile(r"(?m)^([ \t>*_#]*)(\d{1,2})([.)])(?=[ \t]+\S)")


def without_list_labels(text: str) -> str:
    """text less the numbers that label the items of a numbered list: a label n where n - 1 or n + 1
    labels another item ("1. ... 2. **Subtract the cost of t"). They count items and state no value;
    a lone "2. That is because ..." may be an answer stated first, and stays."""
    if not _LIST_LABEL_RE.search(text):
        return text
    numbers = {int(m.group(2)) for m in _LIST_LABEL_RE.finditer(text)}

    def blank(m: re.Match[str]) -> str:
        n = int(m.group(2))
        listed = n - 1 in numbers or n + 1 in numbers
        return m.group(1) + " " * len(m.group(2) + m.group(3)) if listed else m.group(0)

    return _LIST_LABEL_RE.sub(blank, text)


def _task_stated(text: str, gold_text: str) -> bool:
    """A loop-fix task's gold ("253 R 9", "0.1(6)", "hll wrld") is stated where its text is, or
    every number it holds is written."""
    key = re.sub(r"[\W_]+", "", gold_text.lower())
    if key and key in re.sub(r"[\W_]+", "", text.lower()):
        return True
    numbers = re.findall(r"\d+(?:\.\d+)?", gold_text)
    return bool(numbers) and all(_writes(text, Fraction(n)) for n in numbers)


could_hold = gold_stated  # (its name where a cut-off output is read: it could hold the right answer)


# ------------------------------------------------------------------- a complete commitment

# an answer that ends on an operator or a relation was cut mid-expression
_OPEN_END_RE = re.compile(
    r"(?:[-+*/=^_(\[{,:\\≤≥×÷·]|\\(?:times|cdot|div|pm|frac|sqrt|le|ge|leq|geq|approx))\s*$"
)
# words no sentence ends on (lowercase: a last "A" may be an option letter)
CUT_WORDS = frozenset(
    "the an of to and or is are was were be by with for from that which than as at into we then if "
    "because where when let whose each so".split()
)
# the text after a span that makes it the left side of an equation, or one term of an expression: on
# its line, after closing markup ("**", "$", "}", "\\)"), an "=" or an operator; or a next line that
# opens with an "=" ("Answer: 3 × 4" over "= 12")
_CLOSING = r"(?:[ \t*_`$}\])]|\\\)|\\\])*+"  # (possessive: "**" closes, it is no product)
_CONTINUES_RE = re.compile(
    _CLOSING + r"(?:=(?!=)|≈|\\approx\b|\\equiv\b|[+*/×÷^·]|\\(?:times|cdot|div)\b|-(?=[ \t]*[\d(\\$]))"
    r"|" + _CLOSING + r"\n[ \t>*_`$]*(?:=(?!=)|≈|\\approx\b)"
)
# a word of a spaced script may not begin or end inside a longer word ("or" in "for", "o" in "dos");
# a word of an unspaced one (或, หรือ) stands anywhere
_SPACED_LETTER = r"A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff\u0590-\u06ff\u0900-\u097f\uac00-\ud7af"
_ALTERNATIVES_RE = re.compile(
    opening_chars(ALTERNATIVE_WORDS)
    + r"(?<!["
    + _SPACED_LETTER
    + r"\\])(?:"
    + "|".join(re.escape(w) for w in ALTERNATIVE_WORDS)
    + r")"
    r"(?![" + _SPACED_LETTER + r"])",
    re.I,
)
_VALUE_CHAR_RE = re.compile(r"[\d$\\]|(?<![A-Za-z])[A-Z](?![A-Za-z])")


@dataclass(frozen=True)
class Commitment:
    """An answer the output committed to, where it stands: `text` is the text it was read from (the
    output, or its part before a cut), text[start:end] the span that holds it, `span_text` the span as
    written (before it was reduced to a value). `after_cut`: read with no answer marker out of the
    working before the point where the output was cut off ("... = $22,800\n$22,800 is 30% of $76,000,
    so the calculation is"): the last value the working wrote, not a final commitment."""

    answer: str
    text: str
    start: int
    end: int
    span_text: str | None = None
    after_cut: bool = False


def alternatives(span: str) -> list[str]:
    """The alternatives an answer lists ("12 or 15" -> ["12", "15"]; "x = 2 oder x = 3"), or []: a
    word of ALTERNATIVE_WORDS outside brackets between two value-like parts."""
    if not _ALTERNATIVES_RE.search(span):
        return []
    outside = depth_zero(span)
    cuts = [m for m in _ALTERNATIVES_RE.finditer(span) if outside[m.start()]]
    parts, at = [], 0
    for m in cuts:
        parts.append(span[at : m.start()])
        at = m.end()
    parts.append(span[at:])
    parts = [strip_answer(p.strip(" ,;")) for p in parts]
    # a value on both sides of every word ("for 12 apples" and "either way" join nothing)
    if len(parts) < 2 or not all(
        _VALUE_CHAR_RE.search(p[:20]) and (k == len(parts) - 1 or _VALUE_CHAR_RE.search(p[-20:]))
        for k, p in enumerate(parts)
    ):
        return []
    return parts


# a number in a sentence (grouped or decimal kept whole)
_SENTENCE_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_JOINED_RE = re.compile(r"\d[^\d=]*?(?:\s(?:and|und|et|y|e|и|і)\s|[,;&])[^\d=]*?\d")


def _several_values(sentence: str) -> bool:
    """A sentence that states two values or more side by side, with no '=' to say which is the result
    ("Tim has 4 blue shoe boxes and 6 red shoe boxes left")."""
    return (
        "=" not in sentence
        and len(set(_SENTENCE_NUMBER_RE.findall(sentence))) >= 2
        and bool(_JOINED_RE.search(sentence))
    )


_GROUPING_COMMA_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_SEVERAL_VALUES_RE = re.compile(r",|\\cup|\\\{|;|(?<!\w)(?:or|and)(?!\w)")


def _is_list(gold_text: str) -> bool:
    """A gold of several values (a set, a list, a union of intervals, a "1 or 2" of its own), not a
    number grouped by commas ("1,250")."""
    ungrouped = _GROUPING_COMMA_RE.sub("", gold_text)
    return _SEVERAL_VALUES_RE.search(ungrouped) is not None


def open_reason(c: Commitment, gold_text: str) -> str | None:
    """Why the committed answer is not a complete one (module doc), or None where it is."""
    answer = strip_answer(c.answer)
    if not answer:
        return EMPTY_ANSWER
    written = strip_answer(c.span_text) if c.span_text else answer
    for s in {answer, written}:
        if _OPEN_END_RE.search(s):
            return INCOMPLETE
    last = written.rsplit(None, 1)[-1] if written.split() else ""
    if last in CUT_WORDS and len(written.split()) >= 2:
        return INCOMPLETE
    if not _is_list(gold_text) and (alternatives(written) or alternatives(answer)):
        return ALTERNATIVES
    if written != answer and numeric_gold(gold_text) is not None and _several_values(written):
        return AMBIGUOUS  # "4 blue boxes and 6 red boxes" read as 4: which value answers is a guess
    if _CONTINUES_RE.match(c.text, c.end):
        return INCOMPLETE  # the left side of an equation whose right side follows, or one term
    return None


# the end of the answer's sentence on its line ("12. This is ..." ends at the full stop)
_SENTENCE_END_RE = re.compile(r"(?<!\d)[.!?](?=\s|$)|[.!?](?=\s+[A-Z])|[。！？]")
_FENCES = ("```", "'''", '"""')
_DISPLAY = {"\\[": "\\]", "$$": "$$"}
_OPERATOR_LINE_RE = re.compile(r"[ \t]*(?:=|≈|[-+*/×÷·](?=\s*[\d(\\$])|\\(?:times|cdot|approx)\b)")
_STATEMENT_LINES = 12


def statement_rest(text: str, end: int) -> str:
    """What the answer's statement says after its span (module doc): the rest of the sentence on the
    span's line, and, where the line ends without a sentence's end, the block that continues it
    (after one blank line at most): lines opening with "=" or an operator, a fenced or triple-quoted
    block, quoted lines, or a display block."""
    line_end = text.find("\n", end)
    rest = text[end:] if line_end < 0 else text[end:line_end]
    m = _SENTENCE_END_RE.search(rest)
    if m is not None:
        return rest[: m.start()]
    if line_end < 0:
        return rest
    lines = text[line_end + 1 :].split("\n", _STATEMENT_LINES)[:_STATEMENT_LINES]
    if lines and not lines[0].strip():
        lines = lines[1:]
    if not lines:
        return rest
    first = lines[0].strip()
    block: list[str] = []
    closer = next((f for f in _FENCES if first.startswith(f)), None) or _DISPLAY.get(first)
    if closer is not None:
        for k, line in enumerate(lines):
            block.append(line)
            if k > 0 and line.strip().endswith(closer):
                break
    elif first.startswith(">"):
        block = [line for line in _while(lines, lambda x: x.lstrip().startswith(">"))]
    elif _OPERATOR_LINE_RE.match(lines[0]):
        block = [line for line in _while(lines, lambda x: bool(_OPERATOR_LINE_RE.match(x)))]
    return "\n".join([rest, *block])


def _while(lines: list[str], keep: Callable[[str], bool]) -> Iterator[str]:
    for line in lines:
        if not keep(line):
            return
        yield line


_CLAUSE_RE = re.compile(r"(?i)\b(?:and|with|but|so)\b|[,;:(]")


def confirms(c: Commitment, gold_text: str, kind: str, gold_value: str | None = None) -> bool:
    """The second reading: the answer's statement, past the span, states no value the gold could be.
    (A rating of the answer there, "and we are $\\boxed{100\\%}$ confident", states none.)"""
    rest = statement_rest(c.text, c.end)
    rating = rating_word(rest)
    if rating is not None:  # from the clause that holds the rating on
        clause = max((m.start() for m in _CLAUSE_RE.finditer(rest, 0, rating.start())), default=0)
        rest = rest[:clause]
    return not gold_stated(rest, gold_text, kind, gold_value)


# ------------------------------------------------------------------------------- the verdict


def _decided_unequal(proposed: Verdict) -> bool:
    """An unknown whose reading the fast path compared unequal and no second reading confirmed (math-verify
    could not read the output) and none read equal: rule (b) may decide it. A reading no verifier could
    compare ("2 hours 30 minutes", "\\sqrt25") may hide the gold's value in a form no number reader sees,
    and one read equal states it: neither is tried. ("verifiers disagree" has been asked already: two
    unequal readings of other values are unknown only where the output states the gold's value.)"""
    readings = proposed.readings or ()
    return (
        proposed.reason == WEAK_UNCONFIRMED
        and any(r.verifier == FAST and r.label == WRONG for r in readings)
        and all(r.label != CORRECT for r in readings)
    )


# a verdict with no committed answer to compare is WRONG only where the gold is stated nowhere; where
# it is stated, the answer may be there: unknown, for this reason
_WITHOUT_ANSWER = {
    GOLD_ABSENT: NO_ANSWER,
    EMPTY_OUTPUT: NO_ANSWER,
    EMPTY_ANSWER: EMPTY_AFTER_VALUE,
    LOOPED: LOOPED_AFTER_VALUE,
    TRUNCATED: TRUNCATED_AFTER_VALUE,
}


def settle(
    proposed: Verdict,
    output: str,
    gold_text: str,
    kind: str,
    commitment: Commitment | None = None,
    gold_value: str | None = None,
    *,
    cut_off: bool = False,
) -> Verdict:
    """The verdict the property allows (module doc) for a proposed one: a CORRECT must be a committed
    answer compared equal; a WRONG must be (a) a complete commitment the statement confirms, compared
    unequal, or (b) an output that states the gold's value nowhere. Anything else is UNKNOWN with the
    reason it fell short, or WRONG by rule (b): an UNKNOWN is tried against it where the gold is a
    plain number (read most generously) or the output was cut off (`cut_off`: as for a cut-off
    output with no answer, any gold). Every verdict miners.verify returns passes through here."""
    label, reason = proposed.label, proposed.reason
    if label == CORRECT:
        if reason == EQUAL and commitment is not None and strip_answer(commitment.answer):
            return proposed
        return Verdict(UNKNOWN, UNDECIDED, proposed.answer, proposed.rule, proposed.readings)
    also: list[str] = []
    why: str | None
    if label == UNKNOWN:
        # readings compared unequal that nothing confirmed are still readings of this output: where
        # it writes the gold's value nowhere, no reading of it holds the right answer (rule (b))
        if not _decided_unequal(proposed) or (numeric_gold(gold_text) is None and not cut_off):
            return proposed
        why, wrong_reason = reason, GOLD_ABSENT
        also = [proposed.answer] if proposed.answer else []
    elif reason == UNEQUAL and commitment is not None:
        # an output cut off in an unfinished clause has no final commitment at its end: a value its
        # working wrote before the cut, with no marker or box to commit to it, may not be its answer
        why = TRUNCATED_AFTER_VALUE if commitment.after_cut else open_reason(commitment, gold_text)
        if why is None:
            if confirms(commitment, gold_text, kind, gold_value):
                return proposed
            why = UNCONFIRMED
        also = alternatives(commitment.span_text or commitment.answer) or [commitment.answer]
        wrong_reason = GOLD_ABSENT
    elif reason in _WITHOUT_ANSWER:
        why, wrong_reason = _WITHOUT_ANSWER[reason], reason
    else:  # a WRONG no rule of the property grants
        why, wrong_reason = UNDECIDED, GOLD_ABSENT
    if not gold_stated(output, gold_text, kind, gold_value, also):
        return Verdict(WRONG, wrong_reason, proposed.answer, proposed.rule, proposed.readings)
    return Verdict(UNKNOWN, why, proposed.answer, proposed.rule, proposed.readings)
