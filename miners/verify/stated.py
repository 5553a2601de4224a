"""Whether a cut-off output could hold the right answer: does it state the gold's value anywhere?

    from miners.verify.stated import could_hold, numeric_gold
    could_hold("Time to dig the hole = 216 seconds\\nMinutes = 216 seconds ÷ 60 =", "216", "gsm8k")  # True
    could_hold("She saw 15 * 2 = <<15*2=30>>30 bees fly out.\\nShe saw 30 - 6 = <<30", "75", "gsm8k")  # False
    numeric_gold("46.0")   # -> Fraction(46, 1); numeric_gold("x+1") -> None

A truncated output commits to nothing new, but an answer stated before the cut still counts
(bench/data/README.md, convention 4). So a cut-off output is `wrong` only where it could not hold the
right answer, and this module decides that generously (a wrong "could hold" costs coverage, a wrong
"could not" would put a right answer on the rejected side):

- a gold that is a plain number (an integer, a decimal, a fraction, a percentage): every number the
  output writes anywhere -- digits with or without thousands commas (or spaces, dots, apostrophes),
  decimals, `a/b` (and its two parts), `\\frac{a}{b}`, e-notation, "1.5k" and "3 million", number
  words ("five", "two hundred") -- is compared by magnitude (a sign, a percent
  sign and a unit are ignored: "-3" and "3%" may both state 3, and "50%" states 0.5 as well); any
  equal one could be the answer;
- any other gold (an expression, a set, an equation): every result the output states -- what follows
  an "=" or a copula ("is", "are", "equals", ...) up to the end of its clause (a line end, a sentence
  end, the next "=", a closing math delimiter) -- is compared with the gold by the fast path; one
  equal, or one the fast path cannot decide, could be the answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import partial
from itertools import chain

from miners.verify.fast import fast_compare
from miners.verify.prose import first_value, number_words_values

# a gold that is one plain number: "216", "-3", "46.0", "1,250", "3/4", "\\frac{3}{4}", "50\\%"
_PLAIN_GOLD_RE = re.compile(
    r"^\s*\\?\$?\s*(?P<sign>[-−])?\s*\\?\$?\s*(?:\\[dt]?frac\s*\{\s*(?P<fn>\d+)\s*\}\s*\{\s*(?P<fd>\d+)\s*\}"
    r"|(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:\s*/\s*(?P<d>\d+))?)"
    r"\s*(?:\\?%|\\text\{\s*\\?%\s*\})?\s*\.?\s*$"
)
# every number an output writes: \frac{a}{b}, a/b, digits with or without thousands commas, decimals
_TEXT_NUMBER_RE = re.compile(
    r"\\[dt]?frac\s*\{\s*(?P<fn>\d+)\s*\}\s*\{\s*(?P<fd>\d+)\s*\}"
    r"|(?<![\d.])(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:\s*/\s*(?P<d>\d+)(?![\d.]))?"
    r"(?P<pct>\s*(?:\\?%|percent\b))?"
)
# other ways to write a number, read as well (generous): thousands grouped by a space, a dot or an
# apostrophe ("1 000", "1.000", "1'000"), e-notation ("2.5e3"), a scale after digits ("1.5k", "3
# million")
_GROUPED_RE = re.compile(r"(?<![\d.])\d{1,3}(?:[ .'’\u00a0\u202f]\d{3})+(?![\d])")
_SCALED_RE = re.compile(
    r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:[eE]\s*([+-]?\d{1,3})\b|(k|K|thousand|million|billion)\b)"
)
_SCALES = {"k": 1000, "K": 1000, "thousand": 1000, "million": 10**6, "billion": 10**9}
# where a result is stated: after an "=" or a copula, up to the end of its clause
_RESULT_START_RE = re.compile(
    r"(?<![<>!=])=(?!=)|(?i:\b(?:is|are|was|were|equals?|becomes?|gives?|yields?)\b)|[≈:：]"
)
_CLAUSE_END_RE = re.compile(r"\n|(?<![<>!])=|[.!?;](?=\s|$)|\$|\\\]|\\\)|,\s+(?:and|so|then|which)\b")
_MAX_RESULT_CHARS = 160


def _fraction(n: str | None, d: str | None, fn: str | None = None, fd: str | None = None) -> Fraction | None:
    try:
        if fn is not None and fd is not None:
            return Fraction(int(fn), int(fd)) if int(fd) else None
        if n is None:
            return None
        value = Fraction(n.replace(",", ""))
        if d is not None:
            return value / int(d) if int(d) else None
        return value
    except (ValueError, ZeroDivisionError):
        return None


def numeric_gold(gold_text: str) -> Fraction | None:
    """The magnitude of a gold that is one plain number (module doc), else None."""
    m = _PLAIN_GOLD_RE.match(gold_text)
    if m is None:
        return None
    value = _fraction(m.group("n"), m.group("d"), m.group("fn"), m.group("fd"))
    return abs(value) if value is not None else None


def _exact(number: str, divisor: int = 1, factor: Fraction = Fraction(1)) -> Fraction:
    return abs(Fraction(number)) / divisor * factor


Written = tuple[float, Callable[[], Fraction]]


def _written(text: str) -> Iterator[Written]:
    """Every number text writes (module doc), as (its magnitude as a float, a thunk for the exact
    magnitude): the float rules most out cheaply, the exact value decides the few left. A number no
    reader can take (5,000 digits, "1e999") is skipped."""
    # lazily, in the same order: a caller that finds its value early (_writes) scans no further
    matches = chain(
        ((_number_values, m) for m in _TEXT_NUMBER_RE.finditer(text)),
        ((_grouped_values, m) for m in _GROUPED_RE.finditer(text)),
        ((_scaled_values, m) for m in _SCALED_RE.finditer(text)),
    )
    for values_of, m in matches:
        try:
            yield from values_of(m)
        except (ValueError, OverflowError, ZeroDivisionError):
            continue
    for words in number_words_values(text):
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
    digits = re.sub(r"\D", "", m.group(0))
    return [(float(digits), partial(_exact, digits))]


def _scaled_values(m: re.Match) -> list[Written]:
    base, exponent, scale = m.group(1), m.group(2), m.group(3)
    if exponent is not None:
        factor = Fraction(10) ** int(exponent)
        return [(float(f"{base}e{exponent}"), partial(_exact, base, 1, factor))]
    factor = Fraction(_SCALES[scale])
    return [(float(base) * float(factor), partial(_exact, base, 1, factor))]


def stated_numbers(text: str) -> set[Fraction]:
    """The magnitude of every number text writes, in digits or in words (module doc)."""
    return {exact() for _, exact in _written(text)}


def _writes(text: str, value: Fraction) -> bool:
    target = float(value)
    return any(
        math.isclose(approx, target, rel_tol=1e-9, abs_tol=1e-12) and exact() == value
        for approx, exact in _written(text)
    )


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


def could_hold(text: str, gold_text: str, kind: str) -> bool:
    """Whether text states the gold's value anywhere (module doc): a cut-off output that does could
    have answered right before the cut."""
    gold = numeric_gold(gold_text)
    if gold is not None:
        return _writes(text, gold) or ("%" in gold_text and _writes(text, gold / 100))  # gold 50%, "0.5"
    for result in stated_results(text):
        # the clause whole, and its first value ("\\frac{1}{2} and then the" states \\frac{1}{2})
        for candidate in {result, first_value(result) or result}:
            try:
                if fast_compare(candidate, gold_text, kind) is not False:
                    return True  # equal, or the fast path cannot tell: it could be the answer
            except Exception:  # an input the fast path cannot take: it could be the answer
                return True
    return False
