"""Reading a value out of prose, for miners.verify.extract: number words, sentences, concluding lines.

    from miners.verify.prose import prose_value, concluding
    prose_value("Final Answer: The largest $n$ is 34. I hope it is correct.", "math")   # -> "34"
    prose_value("two hundred ninety-four dollars.", "gsm8k")                          # -> "294"
    concluding("... So she makes $18 every day at the market.", "gsm8k")              # -> "18"

prose_value: the last of the last three sentences that states a value gives it -- a bold number,
else what follows the last copula ("is", "=", ":", "是", "est" ...), else after the last "=", else
the first value (a math segment, a number with its currency/percent/scale word, \\frac{..}{..}, or
a run of number words: "one hundred eighty point seventy five" -> 180.75, "Thirty-Four Dollars and
Seventy-Two Cents" -> 34.72, "negative seven" -> -7, "3 million" -> 3000000; "6 dozen" as written).
concluding: for an output with no answer marker at all (less a closing rating of its answer:
without_closing_rating), a display block or a value line announced by a colon at the very end, or a
last sentence that concludes ("Therefore", "So", "因此", "Por lo tanto": markers.CONCLUDING_WORDS, or a
bold number), or that stands alone as the last paragraph, one short line after the working ("Harry
has 8 more trees than Ferdinand.", "Average Speed = 50 mph") -- or that computes a
result of its own right after one that concludes ("So he had 2 + 4 = 6 books. ..., he had 7 - 6 = 1
more action figure than books." is 1) --, or the one line after a program's printed output ("Four
containers were imported."); never a repetition loop, a sentence cut off mid-way or a number inside
code. Sentences end at a full stop, at display math and at a paragraph break.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

from miners.verify.lowered import FOLDS_TO_ASCII_RE, lowered
from miners.verify.markers import CONCLUDING_WORDS, covering_pieces, marker_words, opening_chars, word_trie
from miners.verify.normalize import NUMERAL
from miners.verify.selfrating import is_self_rating_sentence, might_rate, names_rating_noun

_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_WORD_RUN = (
    opening_chars([*_NUMBER_WORDS, *_SCALES, "a", "negative", "minus"])
    + r"\b(?:(?:negative|minus)\s+)?"
    + word_trie([*_NUMBER_WORDS, *_SCALES, "a"])
    + r"(?:[\s-]+(?:and\s+)?"
    + word_trie([*_NUMBER_WORDS, *_SCALES, "point"])
    + r")*\b"
)
_WORD_RUN_RE = re.compile(_WORD_RUN, re.I)
# the same runs in a lowered text with no letter that folds to ASCII (lowered.FOLDS_TO_ASCII_RE): the
# words are lowercase ASCII, so a case-sensitive search finds them there (a third faster on a long
# output, whose numbers in words rule (b) reads)
_LOWERED_WORD_RUN_RE = re.compile(_WORD_RUN)


def word_runs(text: str, *, lone_a: bool = True) -> Iterator[re.Match[str]]:
    """_WORD_RUN_RE.finditer(text): the same spans, the runs read in the lowered text where that finds
    them (group(0) lowercase; tests/verify/test_verify_speed.py holds the two equal). lone_a=False:
    none where the lowered text holds no piece of a word a run holds beyond a lone "a"
    (_NUMBER_WORD_PIECES) -- a caller that reads no lone "a" loses nothing."""
    low = lowered(text)
    if len(low) != len(text) or FOLDS_TO_ASCII_RE.search(text) is not None:
        return _WORD_RUN_RE.finditer(text)
    if not lone_a and not any(p in low for p in _NUMBER_WORD_PIECES):
        return iter(())
    return _LOWERED_WORD_RUN_RE.finditer(low)


# Pieces of the words a run holds beyond a lone "a" (a number word, a scale, "point", or the sign
# words "minus" and "negative", which make "minus a" -1): a text whose lowered form holds none
# writes no number in words. The run pattern opens on common letters and is tried at each of them;
# most outputs hold no such piece, which a few substring tests find out sooner.
_NUMBER_WORD_PIECES = covering_pieces(
    [*_NUMBER_WORDS, *_SCALES, "point", "minus", "negative"],
    ("one", "two", "thre", "four", "five", "six", "seven", "eigh", "nine", "ten", "elev", "twel")
    + ("twent", "thirt", "fort", "fift", "hundred", "thousand", "illion", "zero", "point", "minus"),
)


_CENTS_RE = re.compile(r"(?i)^\s*dollars?\s+and\s+")
_SCALED_RE = re.compile(r"(.*?\d)\s+(million|billion|thousand)$")
_NUMBER_RE = re.compile(
    # a bracketed list of numbers is one value ("So, 3w = (3, 6, 9).")
    r"[(\[]\s*[-−]?\d+(?:\.\d+)?(?:\s*,\s*[-−]?\d+(?:\.\d+)?)+\s*[)\]]"
    # a mixed number ("1 1/3", "2\\frac{1}{4}") is one value
    r"|(?<![\d.A-Za-z_])\d+(?:\s+\d+\s*/\s*\d+(?![\d/])|\s*\\[dt]?frac\s*\{\d+\}\s*\{\d+\})"
    r"|\\[dt]?frac\s*\{[^{}]*\}\s*\{[^{}]*\}|\\sqrt\s*\{[^{}]*\}"
    r"|(?<![A-Za-z0-9_.])[-−]?\$?(?:" + NUMERAL + r")(?:[eE][+-]?\d{1,3}(?!\d|\.\d))?"
    r"(?:\s*/\s*\d+)?(?:\s*(?:\\?%|percent))?"
    r"(?:\s+(?:dozen|million|billion|thousand))?|(?<![A-Za-z0-9_])\.\d+"
)
_MATH_SEG_RE = re.compile(r"\\\((?P<a>.+?)\\\)|\\\[(?P<b>.+?)\\\]|\$\$(?P<c>.+?)\$\$|\$(?P<d>[^$]+?)\$", re.S)
_BOLD_RE = re.compile(r"\*\*([^*]*\d[^*]*)\*\*")
# (opened by a lookahead for its first characters: see miners.verify.markers.opening_chars)
_COPULA_RE = re.compile(
    r"(?i)(?=[abeiswé:：是为هو])"
    r"(?:\b(?:is|are|was|were|equals?|be|becomes?|it'?s|est|sont|égale?)\b|(?<!\d)[:：](?!\d)|[是为هو])"
)
_WORDS_RE = re.compile(
    r"(?<![\\a-zA-Z])[a-zA-Z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]{3,}"
    r"|[\u0600-\u06ff\u0900-\u097f\u0e00-\u0e7f\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]"
)


def _spaced(word: str) -> bool:
    """A word of a spaced script (Latin, Greek, Cyrillic): read whole, not inside another word."""
    return all(c < "\u0530" or "\u1e00" <= c <= "\u1eff" for c in word)


# a concluding word (a word of a spaced script whole, its spaces any run of whitespace; one of an
# unspaced script anywhere), a bold value, or a chosen option. Only searched for (whether a sentence
# holds one): the words stand as two tries, which find what their alternation finds.
_CUE_RE = re.compile(
    r"(?i:" + opening_chars([*CONCLUDING_WORDS, "*", "option", "choice"]) + r")"
    r"(?:(?i:\b" + word_trie([w for w in CONCLUDING_WORDS if _spaced(w)]) + r"\b)"
    r"|(?i:" + word_trie([w for w in CONCLUDING_WORDS if not _spaced(w)]) + r")"
    r"|\*\*[^*]*\d[^*]*\*\*"
    r"|(?i:\b(?:option|choice)\s*\(?[A-Z]\)))"  # "... is closest to option E) $78.20."
)


def number_word_runs(text: str) -> int:
    """How many numbers text writes in words ("two hundred ninety-four dollars" is one; "a" and "one"
    alone are words, not numbers)."""
    return sum(m.group(0).lower() not in ("a", "one") for m in word_runs(text, lone_a=False))


def number_words_values(text: str) -> list[str]:
    """The value of every number text writes in words ("a" alone is a word, not a number)."""
    out = []
    for m in word_runs(text, lone_a=False):
        if m.group(0).lower() != "a":
            value = _words_value(m.group(0), text[m.end() : m.end() + 80])  # (cents follow within it)
            if value is not None:
                out.append(value)
    return out


def _words_value(run: str, after: str) -> str | None:
    """ "two hundred ninety-four" -> "294"; "one hundred eighty point seventy five" -> "180.75";
    "Thirty-Four" + " Dollars and Seventy-Two Cents" -> "34.72"; "negative seven" -> "-7"."""
    words = re.findall(r"[a-z]+", run.lower())
    sign = ""
    if words and words[0] in ("negative", "minus"):
        sign, words = "-", words[1:]
    if words and words[0] == "a":
        words[0] = "one"
    if "point" in words:
        k = words.index("point")
        whole, frac_words = words[:k], [w for w in words[k + 1 :] if w != "and"]
        whole_v = _words_int(whole) if whole else 0
        if whole_v is None or not frac_words:
            return None
        if all(w in _NUMBER_WORDS and _NUMBER_WORDS[w] < 10 for w in frac_words):
            frac = "".join(str(_NUMBER_WORDS[w]) for w in frac_words)
        else:
            f = _words_int(frac_words)
            if f is None:
                return None
            frac = str(f)
        return f"{sign}{whole_v}.{frac}"
    value = _words_int(words)
    if value is None:
        return None
    m = _CENTS_RE.match(after)
    if m:
        cents = _WORD_RUN_RE.match(after, m.end())
        c = _words_int(re.findall(r"[a-z]+", cents.group(0).lower())) if cents else None
        if cents and c is not None and c < 100 and re.match(r"\s*cents?\b", after[cents.end() :], re.I):
            return f"{sign}{value}.{c:02d}"
    return f"{sign}{value}"


def _words_int(words: list[str]) -> int | None:
    total = current = 0
    seen = False
    for w in words:
        if w == "and":
            continue
        if w in _NUMBER_WORDS:
            current += _NUMBER_WORDS[w]
            seen = True
        elif w == "hundred":
            current = max(current, 1) * 100
            seen = True
        elif w in _SCALES:
            total += max(current, 1) * _SCALES[w]
            current = 0
            seen = True
        else:
            return None
    return total + current if seen else None


def _scaled(token: str) -> str:
    """ "3 million" -> "3000000" (exact: Python integers). "6 dozen" stays as written: a count of
    dozens or 72 of the things counted, and the comparison reads it both ways
    (miners.verify.fast.dozens_counted)."""
    m = _SCALED_RE.match(token) if "illion" in token or "thousand" in token else None
    if not m:
        return token
    num = m.group(1).replace(",", "").lstrip("$")
    factor = {"thousand": 1000, "million": 10**6, "billion": 10**9}[m.group(2)]
    try:
        if "." in num:
            whole, frac = num.split(".", 1)
            value = (int(whole or "0") * 10 ** len(frac) + int(frac)) * factor
            text = str(value).rjust(len(frac) + 1, "0")
            return (text[: -len(frac)] + "." + text[-len(frac) :]).rstrip("0").rstrip(".")
        return str(int(num) * factor)
    except ValueError:
        return token


@lru_cache(maxsize=64)  # a sentence's value is asked of the clause after its copula, then of the same tail
def _first_value(text: str) -> str | None:
    """The first math segment, number or run of number words in text."""
    best: tuple[int, str] | None = None
    m = _MATH_SEG_RE.search(text)
    if m and not _NUMBER_RE.search(text, 0, m.start()):
        seg = next(g for g in m.groups() if g is not None)
        if "=" in seg and not _value_like(seg):
            # "is \\( 6 \\, \\text{miles} + 12 \\, \\text{miles} = 18 \\, \\text{miles} \\)": the
            # working's result, after its last "=", not the first number of the working
            result = _first_value(seg.rsplit("=", 1)[1])
            if result is not None:
                return result
    if m and _value_like(next(g for g in m.groups() if g is not None)):
        best = (m.start(), next(g for g in m.groups() if g is not None).strip())
    m = _NUMBER_RE.search(text)
    if m and (best is None or m.start() < best[0]):
        best = (m.start(), _scaled(m.group(0)).replace("−", "-"))
    for w in _WORD_RUN_RE.finditer(text):
        if best is not None and w.start() > best[0]:
            break
        if w.group(0).lower() in ("a", "one") and not re.match(
            r"\s*(?:dollars?|hundred)", text[w.end() :], re.I
        ):
            continue  # "a" and a lone "one" are words more often than numbers
        v = _words_value(w.group(0), text[w.end() :])
        if v is not None:
            best = (w.start(), v)
            break
    return best[1] if best else None


first_value = _first_value  # for miners.verify.stated


def _value_like(seg: str) -> bool:
    if re.search(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}", re.sub(r"\\(?:begin|end)\s*\{\w*\*?\}", "", seg)):
        return False  # "$? just about 1$": words, not math
    return bool(re.search(r"\d|\\(?:frac|sqrt|pi|infty)|[a-zA-Z]", seg))


def _math_free(s: str) -> str:
    """s with its math segments blanked (same length), so copulas and words are found outside math."""
    if "$" not in s and "\\" not in s:
        return s  # (no segment opens without one of them)
    return _MATH_SEG_RE.sub(lambda m: " " * len(m.group(0)), s)


# a text command's argument or an environment's name: no word of the prose
_COMMAND_RE = re.compile(
    r"\\(?:text|textbf|mathrm|mbox|textnormal)\s*\{[^{}]*\}|\\(?:begin|end)\s*\{\w*\*?\}"
)


def is_prose(span: str) -> bool:
    """Words outside math: "The largest $n$ is 34", "Jake has 7 peaches" (not "x \\in [0, 1)")."""
    plain = _math_free(span)
    if "\\" in plain:
        plain = _COMMAND_RE.sub(" ", plain)
    return any(w.lower() not in ("and", "or") for w in _WORDS_RE.findall(plain))


# a sentence that opens with a quantity ("Three trucks ...", "19 people ...") and a "be" that is a
# passive auxiliary ("will be needed to move 80 stones"), not a copula before the answer
_OPENS_WITH_VALUE_RE = re.compile(r"\s*(?:[-−]?\$?\d|(?:" + "|".join(_NUMBER_WORDS) + r")\b)", re.I)
_PASSIVE_RE = re.compile(r"\s+(?:not\s+)?[a-z]{2,}(?:ed|en)\b", re.I)


# a list of numbers after a copula ("4.37, 1.31, and -0.69"): one value, as a list
_LISTED_NUMBER = r"[-−]?\d+(?:\.\d+)?(?:\s*/\s*\d+)?"
_VALUE_LIST_RE = re.compile(
    r"\s*(?:(?:approximately|about|roughly|exactly)\s+)?(?P<values>" + _LISTED_NUMBER
    + r"(?:\s*,\s*" + _LISTED_NUMBER + r")*(?:,?\s+and\s+|\s*,\s*)" + _LISTED_NUMBER + r")\s*[.;]?\s*$"
)  # fmt: skip


def _sentence_value(s: str) -> str | None:
    bold = _BOLD_RE.findall(s)
    if bold:
        inner = bold[-1].strip()
        # a concluding clause set in bold ("**Therefore, half of 8 is 4.**") is read for its value;
        # bold around a value ("there are **5** birds", "**84 crayons**") marks the value
        if _CUE_RE.search(inner) or _COPULA_RE.search(_math_free(inner)):
            return _sentence_value(inner)
        return inner
    free = _math_free(s)
    tail = s
    copulas = list(_COPULA_RE.finditer(free))
    for cop in reversed(copulas):
        after = s[cop.end() :]
        if _first_value(after) is not None:
            if _PASSIVE_RE.match(after) and _OPENS_WITH_VALUE_RE.match(s):
                break  # "Three trucks will be needed to move 80 stones" is about the three trucks
            tail = after
            break
    eq = _math_free(tail).rfind("=")
    if eq >= 0 and _first_value(tail[eq + 1 :]) is not None:
        tail = tail[eq + 1 :]
    listed = _VALUE_LIST_RE.match(tail)
    if listed is not None:  # "are approximately 4.37, 1.31, and -0.69": the values, all of them
        return re.sub(r",?\s+and\s+", ", ", listed.group("values")).strip()
    value = _first_value(tail)
    if value is None and copulas:  # "24 is the answer"
        value = _first_value(s)
    return value


def emphasized_value(sentence: str) -> str | None:
    """The value a sentence sets in bold where it sets one span in bold and that span holds a value
    and nothing else ("there will be **84 crayons** in 7 boxes"): the output's own mark of its answer,
    which a reader of the plain text (math-verify reads the last number, 7) does not see."""
    bold = _BOLD_RE.findall(sentence)
    if len(bold) != 1 or sentence.count("**") != 2:
        return None
    inner = bold[0].strip()
    return inner if _VALUE_LINE_RE.fullmatch(inner) else None


def sentences(text: str) -> list[str]:
    """text split into sentences outside math (display math and a paragraph break end a sentence too:
    "we have:\n\n$6 + 5 = 11$\n\nSo, $x = 11$." ends in "So, $x = 11$.")."""
    return list(_sentences(text))


# A sentence ends after ".", "!" or "?" before a space, after a full stop of another script, or at a
# blank line: each scanned on its own where the text holds its character. A scan for one literal
# character skips in C to where it stands, where a scan for any of them (one alternation) tries each
# character of the text: half the time on the corpora. None of their matches holds a character
# another's holds, so their ends are the ends of the alternation's (tests/verify/test_verify_speed.py).
_SENTENCE_CUTS = (
    (".", re.compile(r"\.(?=\s)")),
    ("!", re.compile(r"!(?=\s)")),
    ("?", re.compile(r"\?(?=\s)")),
    ("\n", re.compile(r"\n[ \t]*\n")),
)
_OTHER_SENTENCE_CUT_RE = re.compile(r"[。！？।]")


def sentence_cuts(free: str) -> set[int]:
    """Where the sentences of a text outside math end (above)."""
    cuts: set[int] = set()
    for c, cut_re in _SENTENCE_CUTS:
        if c in free:
            cuts.update(m.end() for m in cut_re.finditer(free))
    if not free.isascii():
        cuts.update(m.end() for m in _OTHER_SENTENCE_CUT_RE.finditer(free))
    return cuts


@lru_cache(maxsize=16)  # the closing rating, the closing address and the concluding sentence split one text
def _sentences(text: str) -> tuple[str, ...]:
    free = _math_free(text)
    cuts = sentence_cuts(free)
    if "$" in text or "\\" in text:  # (display math ends a sentence too)
        cuts |= {
            m.end()
            for m in _MATH_SEG_RE.finditer(text)
            if m.group("b") is not None or m.group("c") is not None
        }
    out, start = [], 0
    for cut in sorted(cuts):
        if text[start:cut].strip():
            out.append(text[start:cut].strip())
        start = cut
    if text[start:].strip():
        out.append(text[start:].strip())
    return tuple(out)


# A long text's last sentences are split from a place near its end: TAIL_CHARS from it, moved on to a
# place where a split of the tail cuts where the split of the whole does (_tail_start).
TAIL_CHARS = 4_000
_ALNUM_RE = re.compile(r"[^\W_]")


def _tail_start(text: str, near: int) -> int | None:
    """A place p at or after `near` where sentences(text[p:]) cuts as sentences(text) does after p:
    outside every math segment of the whole text (a scan from p then finds the whole's segments
    after p: between two segments of the whole no segment starts, and the pattern reads nothing
    before its start), right after a letter or digit outside math (no cut ends at p, and no blank
    line runs across it). None where no such place follows `near`."""
    gap_start = 0  # where the stretch outside math that holds `near` (or follows it) begins
    for seg in _MATH_SEG_RE.finditer(text):
        if seg.end() <= near:
            gap_start = seg.end()
            continue
        found = _ALNUM_RE.search(text, max(gap_start, near), seg.start())
        if found is not None:
            return found.end()
        gap_start = seg.end()
    found = _ALNUM_RE.search(text, max(gap_start, near))
    return found.end() if found is not None else None


def last_sentences(text: str, n: int) -> list[str]:
    """sentences(text)[-n:], split from near the end of a long text, not from its start: a long
    reasoning output's closing rating is read from its last sentences, and splitting all of it was a
    fifth of its verdict. The tail's first sentence may have begun before the tail: only the ones
    after it are taken, and where they are too few, the whole is split."""
    if len(text) > 2 * TAIL_CHARS:
        at = _tail_start(text, len(text) - TAIL_CHARS)
        if at is not None:
            got = _sentences(text[at:])
            if len(got) > n:
                return list(got[-n:])
    return list(_sentences(text)[-n:])


_MONEY_SIGN_RE = re.compile(r"(?<![\\\w])\$(?=\d)")


def _money(s: str) -> str:
    return _MONEY_SIGN_RE.sub("", s) if "$" in s else s  # "$880" in prose is money, not a math delimiter


def prose_value(span: str, kind: str, look_back: int = 3) -> str | None:
    """The value the last sentence that states one states (module doc, step 4), or None."""
    s = _money(span) if kind == "gsm8k" or span.count("$") % 2 == 1 else span
    for sentence in reversed(last_sentences(s, look_back)):
        value = _sentence_value(sentence)
        if value is not None:
            return value
    return None


def looping(text: str) -> bool:
    """The tail repeats itself: among the last 60 words, a word trigram 6 or more times (a phrase
    looping), or two trigrams 4 or more times each (a sentence looping). One trigram 4 times alone
    is a phrase the working reuses ("... in the box." closing four sentences that count pencils)."""
    words = text[-600:].split()[-60:]
    if len(words) < 12:
        return False
    trigrams = list(zip(words, words[1:], words[2:]))
    if len(set(trigrams)) > len(trigrams) - 5:
        return False  # (a trigram 6 times, or two 4 times each, leave len - 5 distinct at most: uncounted)
    counts = [n for _, n in Counter(trigrams).most_common(2)]
    return counts[0] >= 6 or (len(counts) == 2 and counts[1] >= 4)


# a paragraph break, and a paragraph that holds only display math (a value under its intro line)
PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t]*\n")
_DISPLAY_ONLY_RE = re.compile(r"^\s*(?:\\\[.*\\\]|\$\$.*\$\$)\s*$", re.S)
_CLOSING_PARAGRAPHS = 12
_STATES_VALUE_RE = re.compile(r"\d|=|\\[A-Za-z]|\$")


def _states_value(sentence: str) -> bool:
    return bool(_STATES_VALUE_RE.search(sentence)) or number_word_runs(sentence) > 0


# a line that opens with an answer marker and its colon and holds a value ("ANSWER: even"): the
# committed answer, which the rating on the next line ("CONFIDENCE: 100") does not take back
_MARKED_ANSWER_LINE_RE = re.compile(
    r"(?im)^[ \t>*_#-]*(?:"
    + word_trie((w for w, _ in marker_words()), space=r"[ \t_-]+")
    + r")[ \t*_]*[:：][ \t*_]*(?P<value>[^\n]*[^\s*_.:：])"
)


def _states_marked_answer(sentence: str) -> bool:
    return any(
        not is_self_rating_sentence(m.group("value")) for m in _MARKED_ANSWER_LINE_RE.finditer(sentence)
    )


def _only_rates(sentence: str) -> bool:
    """A sentence that rates the answer and states nothing else: one number at most (the rating),
    no equation ("I am 100% confident that 6 + 6 = 12" states 12), no answer marker's line
    ("ANSWER: even" over "CONFIDENCE: 100" states "even")."""
    return (
        is_self_rating_sentence(sentence)
        and len(re.findall(r"\d+(?:[.,]\d+)?", sentence)) <= 1
        and "=" not in sentence
        and not _states_marked_answer(sentence)
    )


@lru_cache(maxsize=8)  # extraction, the concluding sentence and the second opinion ask about one text
def without_closing_rating(body: str) -> str:
    """body less the model's closing rating of its own answer, which commits to nothing new (like a
    loop or a cut, convention 4): the trailing paragraphs from the first one that rates the answer
    ("Confidence level: 100%", "I am 95% confident in this answer. This is because ...", "My
    confidence level is:" over a display box), where every paragraph after it rates too or states no
    value ("Reason: the steps are correct."), and no sentence of them but a rating states one; then
    any rating sentences left at the end of the last paragraph ("So x = 3. I am 100% sure.").

    A rating paragraph that states a value in another sentence ("With confidence 100%, the solution
    is y = 2x.") is no closing rating: it stays, and so does everything before it."""
    if not might_rate(body):
        return body
    # a closing rating is a few paragraphs at the end: the last dozen are read, no more
    starts = ([0] + [m.end() for m in PARAGRAPH_BREAK_RE.finditer(body)])[-_CLOSING_PARAGRAPHS:]
    paragraphs = [(start, body[start:end]) for start, end in zip(starts, starts[1:] + [len(body)])]
    merged: list[tuple[int, str]] = []
    for start, text in paragraphs:  # a display block under its intro is one paragraph with it
        if merged and _DISPLAY_ONLY_RE.match(text):
            merged[-1] = (merged[-1][0], merged[-1][1].rstrip() + "\n" + text)
        else:
            merged.append((start, text))
    cut = None
    for start, text in reversed(merged):
        said = sentences(text)
        # (a sentence is asked whether it only rates where the answer matters, the last first: most
        # closing paragraphs end on a sentence that states a value and rates nothing)
        if any(_states_value(s) and not _only_rates(s) for s in reversed(said)):
            break
        # a rating by its noun or its value ("Confidence level: 100%", "I am 95% sure"); a doubt in
        # words alone ("I'm not sure how to proceed.") opens no rating
        if any((names_rating_noun(s) or re.search(r"\d", s)) and _only_rates(s) for s in said):
            cut = start
    kept = body if cut is None else body[:cut].rstrip()
    said = last_sentences(kept, _CLOSING_PARAGRAPHS)  # the loop reads no more of them
    for _ in range(_CLOSING_PARAGRAPHS):
        if not said or not _only_rates(said[-1]):
            break
        at = kept.rfind(said.pop())
        if at < 0:
            break
        kept = kept[:at].rstrip()
    return kept


# a closing word to the reader: a question or an offer addressed to them ("Does this make sense? Do you
# have any questions about the steps?", "Let me know if you need more help.")
_TO_THE_READER_RE = re.compile(
    r"(?i)\b(?:you|your|let me know|hope (?:this|that) helps|does (?:this|that) make sense|any questions)\b"
)


_DIGIT_OR_MATH_SIGN_RE = re.compile(r"[\d$\\=]")


def without_closing_address(body: str) -> str:
    """body less its last paragraphs (two at most) that only address the reader: every sentence a
    question or an offer to them, and no digit or math in it; they commit to nothing (like a closing
    rating). A doubt of the model's own ("Wait, is that right?") addresses no one and stays."""
    for _ in range(2):
        body = body.rstrip()
        parts = PARAGRAPH_BREAK_RE.split(body)
        last = parts[-1]
        if len(parts) < 2 or _DIGIT_OR_MATH_SIGN_RE.search(last):
            break
        said = sentences(last)
        if not said or not all(_TO_THE_READER_RE.search(sentence) for sentence in said):
            break
        body = body[: len(body) - len(last)]
    return body.rstrip()


def concluding(text: str, kind: str, whole: bool = True) -> str | None:
    """The value of a concluding last sentence or of a display block after a colon, or None. `whole`:
    text is the whole output, not its part before a cut (where a last line is where the cut fell, no
    closing statement)."""
    body = text.rstrip()
    if not body or looping(body):
        return None  # a repetition loop commits to nothing
    if "```" in body:
        # a tool-integrated solution: code, its printed output, then a sentence that reports the
        # result. Only what follows the last closed block is prose; a number in the code is none.
        parts = body.split("```")
        if len(parts) % 2 == 0:
            return None  # the output ends inside a code block: cut off, no commitment
        body = parts[-1].strip()
        if not body:
            return None
    body = without_closing_address(without_closing_rating(body))
    if not body:
        return None
    for opener, closer in (("\\[", "\\]"), ("$$", "$$")):
        if body.endswith(closer):  # "... is worth \\$675:\n\\[ V = \\$675 \\]"
            start = body.rfind(opener, 0, len(body) - len(closer))
            if start >= 0 and body[:start].rstrip().endswith((":", "：")):
                block = body[start + len(opener) : len(body) - len(closer)].strip()
                if 0 < len(block) < 300:
                    return block
    lines = [line for line in body.rsplit("\n", 4) if line.strip()][-2:]  # (blank lines between)
    if len(lines) >= 2 and lines[-2].rstrip(" *_").endswith((":", "：")):
        # a value on the last line under an intro line that announces it ("The eigenvalues are:\n5/4,
        # 19/8, 19/8"): the plain-text form of the display block above
        announced = lines[-1].strip()
        if 0 < len(announced) < 200 and _value_like(announced) and re.search(r"\d", announced):
            return announced
    # the last paragraph, where it is one short line after the working ("...\n\nHarry has 8 more trees
    # in his yard than Ferdinand."): a closing statement of the result, as a one-line output is
    closing_paragraph = PARAGRAPH_BREAK_RE.split(body)[-1].strip()
    closing_line = (
        whole
        and "\n" not in closing_paragraph
        and len(closing_paragraph) <= 200
        and _LIST_ITEM_RE.match(closing_paragraph) is None
    )
    eq = closing_paragraph.rfind("=")
    # (such a line that ends on a unit after its last "=", "Average Speed = 50 mph", is a result
    # line, not a sentence cut off)
    result_line = (
        closing_line and eq >= 0 and _VALUE_LINE_RE.fullmatch(closing_paragraph[eq + 1 :]) is not None
    )
    if not (body[-1] in ".。!！।" or body[-1].isdigit() or body.endswith(("**", "$")) or result_line):
        return None  # cut off mid-sentence: no commitment
    single = "\n" not in body.strip() and len(body) <= 200
    last_two = last_sentences(body, 2)
    for k, sentence in reversed(list(enumerate(last_two))):
        # a last sentence after a concluding one that computes a result of its own ("So he had 2 + 4 =
        # 6 books. Since he had 7 action figures, he had 7 - 6 = 1 more action figure than books.")
        # states the final result: the concluding sentence's value was a step towards it
        continues = k == 1 and bool(_CUE_RE.search(last_two[0])) and _computes_result(sentence)
        # (a last line holding only a value, "42" or "$\\frac{3}{4}$" under the working, states it)
        alone = k == len(last_two) - 1 and _VALUE_LINE_RE.fullmatch(sentence.strip()) is not None
        # (the last paragraph, where it is one short line holding this one sentence and no other)
        closing = k == len(last_two) - 1 and closing_line and sentence.strip() == closing_paragraph
        read_anyway = bool(_CUE_RE.search(sentence)) or single or continues or alone
        if read_anyway or closing:
            value = _sentence_value(_money(sentence) if kind == "gsm8k" else sentence)
            # (a closing line read for its own sake states a number: "the area is $$ x \pi $$" restates
            # the problem's unknown)
            if value is not None and (read_anyway or re.search(r"\d", value)):
                return value
    return None


# a list item's or a step's label ("- ", "3. ", "Step 4:"): a line that opens with one is a step of the
# working, not a closing statement
_LIST_ITEM_RE = re.compile(r"(?i)[ \t>]*(?:[-*+•·][ \t]|\d{1,2}[.)][ \t]|(?:step|part|case)\s*\d)")

# a line that holds a value and nothing else: markup, a sign, a currency, a percent, a unit word
_VALUE_LINE_RE = re.compile(
    r"[*_`$\s]*[-−]?[$€£¥₹]?\s*(?:" + NUMERAL + r")(?:\s*/\s*\d+)?(?:[eE][+-]?\d{1,3})?"
    r"\s*(?:\\?%|[^\W\d_]{1,12}\.?)?[*_`$\s.]*"
)


def _computes_result(sentence: str) -> bool:
    """The sentence holds an equation with a value after its last "=" ("7 - 6 = 1 more")."""
    free = _math_free(sentence)
    eq = free.rfind("=")
    if eq < 0:
        segs = [next(g for g in m.groups() if g is not None) for m in _MATH_SEG_RE.finditer(sentence)]
        return any("=" in seg and _first_value(seg.rsplit("=", 1)[1]) is not None for seg in segs)
    return _first_value(sentence[eq + 1 :]) is not None
