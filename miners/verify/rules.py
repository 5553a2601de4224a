"""Answer-span rules: where a model's output states an answer, as a list of named rules with priorities.

    from miners.verify.rules import SPAN_RULES, find_spans
    [s.rule for s in find_spans("... so \\\\boxed{6}. Final answer: 6", "math")]
    # -> ["boxed", "final_line"]

Each rule is data (SpanRule): a name, a priority, whether the form is strong (the fast path's reading
of it is trusted without a second opinion), a cheap hint (a substring that must occur for the rule to
look at all) and the finder, whose docstring names the output forms it reads, with an example. The
extractor (miners.verify.extract) takes every rule's spans, cuts the turn, and lets the span that
starts last win; at an equal start the higher priority wins, and two equal-priority spans there that
read differently make the extraction ambiguous (unknown). Adding a form is adding a rule here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from miners.verify.brackets import brace_pairs, walk
from miners.verify.lowered import lowered, matches_at_words
from miners.verify.markers import (
    ANSWER_MARKERS,
    BOOLEAN_WORDS,
    AnswerMarker,
    Substrings,
    covering_pieces,
    marker_words,
    opening_chars,
    word_trie,
)


class Span(NamedTuple):
    """One answer span a rule found: text[start:end] holds it, `text` is the answer as written."""

    start: int
    end: int
    text: str
    rule: str
    language: str | None = None  # the language of the marker that found it, where one did


@dataclass(frozen=True)
class SpanRule:
    name: str
    priority: int  # at an equal start the higher one wins
    strong: bool  # the form commits to an answer unmistakably: no second opinion needed
    # the rule looks only when one of these occurs in the lowered text (or, a function: when it says so)
    hints: tuple[str, ...] | Callable[[str], bool]
    find: Callable[[str, str, str], Iterable[Span]]  # (text, lowered text, kind) -> spans


_BOXED_RE = re.compile(r"\\(?:boxed|fbox)\s*(\{)|\\boxed\s+([^\s${}\\]+)")
# The patterns below start at a literal word (found at regex speed); where a match must begin a line
# or follow a sentence, the code checks the text before it.
_A_LINE_RE = re.compile(r"(?m)^A[ \t]*:[ \t]*(?P<ans>[^\n]+)")  # GSM8K's few-shot "A: 18"
_B_LINE_RE = re.compile(r"\s*\nB[ \t]*:")  # the next line an option "B:" (read from the end of an "A:" line)
_MD_HEADING_RE = re.compile(r"[ \t]*#{1,6}[ \t]+(?P<title>[^\n]*)")  # a markdown heading line: its title
# (four hashes not after a fifth: the lookbehind after the literal, so the search looks for "####")
_HASHES_RE = re.compile(r"####(?<!#####)(?!#)[ \t]*(?P<ans>[^\n#]+)")
_ANSWER_TAG_RE = re.compile(r"<\s*answer\s*>|\{answer[>}]|\(answer\)", re.I)
_ANSWER_CLOSE_RE = re.compile(r"<\s*/\s*answer", re.I)
# unboxed math right after the word "answer": Answer $ 9 $, the answer is: \[ 9 \]
_ANSWER_MATH_RE = re.compile(
    r"(?i)\banswer\b(?![>_])(?:\s*\([^()\n]{0,40}\))?(?:\s+is\b)?\s*[:：]?\s*(?P<open>\\\[|\$\$|\\\(|\$)"
)
# a JSON (or Python dict) field "answer": "..." or "final_answer": 42 -- the format evaluation prompts
# ask for; the string may hold escapes (\\frac, \") or LaTeX the model did not escape (\frac)
_JSON_ANSWER_RE = re.compile(
    r"""(?P<k>["'])(?:final[_ ]?)?answer(?P=k)\s*:\s*"""
    r"""(?:(?P<q>["'])(?P<s>(?:(?!(?P=q))[^\\]|\\.){0,400})(?P=q)|(?P<n>-?\d[\d.,/]*))""",
    re.I | re.S,
)
# the fields after "answer" in the same object ("confidence": 0.9, "notes": "..."): text inside them
# is commentary on the answer field, not a later answer
_JSON_NEXT_FIELD_RE = re.compile(
    r"""\s*,\s*(["'])[^"'\n]{1,40}\1\s*:\s*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[-\w.]+)""", re.S
)
_MATH_CLOSE = {"\\[": "\\]", "$$": "$$", "\\(": "\\)", "$": "$"}
_SENTENCE_END_RE = re.compile(r"[.;!?](?=\s|$)|[。！？；]")
_PLACEHOLDER_RE = re.compile(r"^[\s_.:：*-]*$")
# markup a prompt format puts after the answer ("【答案】C <eoa>", "12 <|end|>"): not part of it
_TRAILING_MARKUP_RE = re.compile(r"(?:\s*<\|?/?[A-Za-z_]{2,16}\|?>)+\s*$")


def _json_string(s: str) -> str:
    """The text of a JSON string as models write it: \\\\ and \\" are escapes, but a backslash before
    a letter is LaTeX left unescaped (\\frac, \\times, \\neq), not a form feed, a tab or a newline."""
    s = s.replace("\\\\", "\x00")
    s = re.sub(r"\\([\"'/])", r"\1", s)
    s = re.sub(r"\\[nrt](?![a-zA-Z])", " ", s)
    return s.replace("\x00", "\\")


def _cut_sentence(span: str) -> str:
    if "$" not in span and "{" not in span:  # the common case, at regex speed
        m = _SENTENCE_END_RE.search(span)
        return span[: m.start()] if m else span
    # keep "$3.5$" and "\frac{1}{2}" intact: only cut outside $...$ and braces
    in_math = False
    for i, c, depth in walk(span, "{", "}"):
        if c == "$":
            in_math = not in_math
        elif not in_math and depth <= 0 and c in "。！？；":
            return span[:i]
        elif not in_math and depth <= 0 and c in ".;!?" and (i + 1 == len(span) or span[i + 1].isspace()):
            if c == "." and i > 0 and span[i - 1].isdigit() and i + 1 < len(span) and span[i + 1].isdigit():
                continue
            return span[:i]
    return span


_FENCES = ("```", "'''", '"""', "~~~")
_QUOTE_RE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_NEXT_LINES = 10
# a list item's mark: a bullet or a number, then a space ("- 42" is an item, "-42" a number)
_LIST_ITEM_RE = re.compile(r"^(?:[-*+•·]|\d{1,2}[.)])[ \t]+(?=\S)")


def _next_line(text: str, pos: int) -> tuple[str, int]:
    """(the value on the first non-empty line after pos, where that value's block ends): "The answer
    (arabic numerals) is\\n\\n8" -> "8". A block opened there is read whole: a display block
    (\\[ ... \\], $$ ... $$), a fenced or triple-quoted block (its content), quoted lines (without
    their ">"). Nothing found: ("", pos)."""
    at = text.find("\n", pos)
    if at < 0:
        return "", pos
    starts, lines = [], []
    for _ in range(_NEXT_LINES):
        nxt = text.find("\n", at + 1)
        starts.append(at + 1)
        lines.append(text[at + 1 : len(text) if nxt < 0 else nxt])
        if nxt < 0:
            break
        at = nxt
    ends = [start + len(line) for start, line in zip(starts, lines)]
    for k, line in enumerate(lines[:6]):
        if _PLACEHOLDER_RE.match(line):
            continue
        opener = _LIST_ITEM_RE.sub("", line.strip(), count=1)  # "- 42", "1. 42", "• 42": the item's value
        if opener in ("\\[", "$$"):  # a display block opened on its own line: its content
            closer = _MATH_CLOSE[opener]
            for j in range(k + 1, len(lines)):
                if lines[j].strip().endswith(closer):
                    return "\n".join(x.strip() for x in lines[k : j + 1])[:400], ends[j]
        fence = next((f for f in _FENCES if opener.startswith(f)), None)
        if fence is not None:  # a fenced or triple-quoted block: what it holds
            rest = opener[len(fence) :]
            if rest.endswith(fence) and len(rest) > len(fence):  # '''42''' on one line
                return rest[: -len(fence)].strip()[:400], ends[k]
            held: list[str] = []
            for j in range(k + 1, len(lines)):
                if lines[j].strip().startswith(fence):
                    return "\n".join(held).strip()[:400], ends[j]
                held.append(lines[j].strip())
            return "", pos  # never closed: nothing committed
        if _QUOTE_RE.match(line):  # quoted lines: their content
            quoted: list[str] = []
            for j in range(k, len(lines)):
                if not _QUOTE_RE.match(lines[j]):
                    break
                quoted.append(_QUOTE_RE.sub("", lines[j]).strip())
            value = next((h for h in quoted if not _PLACEHOLDER_RE.match(h)), "")
            return value[:400], ends[k + len(quoted) - 1]
        return opener[:400], ends[k]
    return "", pos


# an answer that ends on an operator or "=" goes on on the next line ("The answer is 6 * 7 =" over "42")
_GOES_ON_RE = re.compile(r"(?:[-+*/=×÷·]|\\(?:times|cdot|div))$")


def _goes_on(text: str, ans: str, end: int) -> tuple[str, int]:
    """(the answer with the line that continues it, where it ends) where ans ends on an operator or
    "=" at its line's end; else (ans, end)."""
    # (the markup closed around the answer first: the "**" of a bold value is no product)
    if not _GOES_ON_RE.search(strip_answer(ans)) or text[end : end + 1] not in ("\n", "\r"):
        return ans, end
    more, more_end = _next_line(text, end)
    if not more:
        return ans, end
    return ans.rstrip(" \t*_$") + " " + strip_answer(more), more_end


def _math_block(text: str, open_at: int, opener: str) -> tuple[int, str] | None:
    """(end, content) of the math block that opens at text[open_at] with `opener`, or None."""
    start = open_at + len(opener)
    closer = _MATH_CLOSE[opener]
    i = start
    limit = min(len(text), start + 400)
    while i < limit:
        j = text.find(closer, i, limit)
        if j < 0:
            return None
        if closer == "$" and j > 0 and text[j - 1] == "\\":  # \$ is a dollar sign, not a delimiter
            i = j + 1
            continue
        return j + len(closer), text[start:j]
    return None


def _matches(regex: re.Pattern, text: str, low: str, word: str):
    """regex's matches, tried only where `word` occurs (the patterns start with it): a find per
    occurrence instead of a case-insensitive scan of the whole text."""
    if len(low) != len(text):  # lower() changed the length (some non-ASCII letters): scan
        yield from regex.finditer(text)
        return
    pos = low.find(word)
    while pos >= 0:
        m = regex.match(text, pos)
        if m:
            yield m
        pos = low.find(word, pos + 1)


def _json_fields_end(text: str, pos: int) -> int:
    """Where the fields that follow a JSON value at pos end (pos itself when none follow)."""
    while True:
        m = _JSON_NEXT_FIELD_RE.match(text, pos)
        if not m:
            return pos
        pos = m.end()


@lru_cache(maxsize=256)  # a verdict strips one span several times over (rules, extraction, the property)
def strip_answer(ans: str) -> str:
    """Markdown, quotes, outer math delimiters and trailing punctuation around an answer."""
    s = ans.strip().replace('\\"', '"').strip('*_` \t"“”')
    if s.startswith(":"):
        s = s[1:].strip()
    s = s.rstrip(" .;,")
    for lo, hi in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)")):
        if s.startswith(lo) and s.endswith(hi) and len(s) >= len(lo) + len(hi):
            s = s[len(lo) : len(s) - len(hi)].strip()
    if len(s) >= 2 and s[0] == "$" and s[-1] == "$" and s.count("$") == 2:
        s = s[1:-1].strip()
    if s.endswith(">"):
        s = _TRAILING_MARKUP_RE.sub("", s)
    return s.rstrip(" .;,。．").strip('*_` \t"“”')


# --------------------------------------------------------------------------- option labels

# An option letter named by an explicit label inside an answer: "option E", "choice (c)", "(B)",
# "D) 3.85 miles", "B)After 12 minutes", "\\text{(C)}", "选D", "A. 12" (at the start only). A bare
# capital in prose ("A train leaves...") is no label.
_OPTION_LABEL_RES = (
    re.compile(
        r"(?i:option|choice|alternative|opción|opção|选项|選項)\s*[:：(]?\s*\(?([A-Za-z])\)?(?![A-Za-z])"
    ),
    re.compile(r"(?<![\w(\\])\(([A-Z])\)(?!\w)"),
    re.compile(r"(?:^|(?<=[\s:：*'\"“‘]))([A-Z])\)"),
    re.compile(r"\\text(?:bf|rm)?\s*\{\s*\(?([A-Z])\)?\s*\}"),
    re.compile(r"[选選]\s*[:：]?\s*([A-Z])(?![A-Za-z])"),
    re.compile(r"^\s*([A-Z])[.:：]\s"),
)
_LETTER = r"(?:\(\s*[A-Z]\s*\)|[A-Z]\)?|\\text(?:bf|rm)?\s*\{\s*\(?[A-Z]\)?\s*\})"
_LETTER_LIST_RE = re.compile(
    r"^\s*(?:(?i:options?|choices?)\s*)?"
    + _LETTER
    + r"(?:\s*(?:,|、|;|&|\band\b|\bor\b|和|及|以及|或)\s*(?:(?i:options?|choices?)\s*)?"
    + _LETTER
    + r")+\s*$"
)


def option_labels(answer: str) -> tuple[tuple[str, ...], bool]:
    """(the option letters an answer names by an explicit label, in order; whether the answer is only
    a list of letters): "D) 3.85 miles" -> (("D",), False), "(B) and (D)" -> (("B", "D"), True),
    "closest to option E) $78.20" -> (("E",), False), "12" -> ((), False)."""
    s = strip_answer(answer)
    found: list[tuple[int, str]] = []
    for regex in _OPTION_LABEL_RES:
        found += [(m.start(1), m.group(1).upper()) for m in regex.finditer(s)]
    if _LETTER_LIST_RE.match(s.replace("$", "")):  # "B, D", "(B) and (D)": nothing but letters
        bare = re.sub(r"(?i:options?|choices?)|\\text(?:bf|rm)?", " ", s)
        return tuple(dict.fromkeys(re.findall(r"[A-Z]", bare))), True
    return tuple(dict.fromkeys(letter for _, letter in sorted(found))), False


# ------------------------------------------------------------------------------------- the rules


def find_boxed(text: str, low: str, kind: str) -> Iterable[Span]:
    """`\\boxed{...}`, `\\fbox{...}` and the brace-less `\\boxed 5`: "so $x = \\boxed{\\frac{1}{2}}$"
    -> "\\frac{1}{2}". An unclosed box (a truncated output) is no span."""
    closing = None
    for m in _BOXED_RE.finditer(text):
        if m.group(1) is not None:
            if closing is None:
                closing = brace_pairs(text, m.start())  # braces before the first box do not matter
            end = closing.get(m.start(1), -1)
            if end >= 0:
                yield Span(m.start(), end, text[m.start(1) + 1 : end - 1], "boxed")
        else:
            yield Span(m.start(), m.end(), m.group(2), "boxed")


def _sentence_span(text: str, m: re.Match, rule: str, talk: re.Pattern | None) -> Span | None:
    """The answer group of `m` to the end of its sentence, or of the next line's where it holds a
    placeholder ("the answer is:" then the value below) or ends on an operator ("is 6 * 7 =" over
    "42"); None where it talks about an answer instead of giving one: words of `talk` ("the answer is
    correct"), or, where a language lists none, no value ("La réponse est correcte")."""
    ans = _cut_sentence(m.group("ans"))
    placeholder = _PLACEHOLDER_RE.match(ans) is not None
    if not placeholder and (talk.match(ans) if talk is not None else not _VALUE_LIKE_RE.search(ans[:40])):
        return None
    end = m.start("ans") + len(ans)
    if placeholder:
        value, value_end = _next_line(text, m.start("ans"))
        if value:
            return Span(m.start(), value_end, _cut_sentence(value), rule)
        return Span(m.start(), end, "", rule)
    ans, end = _goes_on(text, ans, end)
    return Span(m.start(), end, ans, rule)


def find_answer_math(text: str, low: str, kind: str) -> Iterable[Span]:
    """Unboxed math right after the word "answer": "Answer $ 9 $", "the answer is: \\[ x = 9 \\]" ->
    "x = 9". A "$" before a digit in a GSM8K output is money, not math."""
    if "$" not in text and "\\" not in text:
        return
    for m in _matches(_ANSWER_MATH_RE, text, low, "answer"):
        if m.group("open") == "$" and (kind == "gsm8k" or text[m.end() : m.end() + 1].isdigit()):
            continue
        block = _math_block(text, m.start("open"), m.group("open"))
        if block is not None and not block[1].rstrip().endswith(("+", "-", "=")):
            yield Span(m.start(), block[0], block[1], "answer_math")


def find_json_field(text: str, low: str, kind: str) -> Iterable[Span]:
    """A JSON (or Python dict) field `"answer": "..."` / `"final_answer": 42`, the format some
    evaluation prompts ask for: `{"reasoning": "...", "answer": "\\\\frac{3}{4}"}` -> "\\frac{3}{4}"
    (JSON escapes undone, LaTeX the model left unescaped kept)."""
    if 'answer"' not in low and "answer'" not in low:
        return
    for m in _JSON_ANSWER_RE.finditer(text):
        value = _json_string(m.group("s")) if m.group("n") is None else m.group("n")
        yield Span(m.start(), m.end(), value, "json_field")


def find_answer_tag(text: str, low: str, kind: str) -> Iterable[Span]:
    """The last answer tag that holds something: `<answer> 12 </answer>`, `{answer} 21 </answer>`,
    `(answer) 7`; an r1-style rollout "<think>...</think> <answer>The number is 12.</answer>" -> "12"."""
    if "answer>" not in low and "answer}" not in low and "(answer)" not in low:
        return
    tags = list(_ANSWER_TAG_RE.finditer(text))
    for k in range(len(tags) - 1, -1, -1):
        m = tags[k]
        close = _ANSWER_CLOSE_RE.search(text, m.end())
        end = min(
            close.start() if close else len(text), tags[k + 1].start() if k + 1 < len(tags) else len(text)
        )
        if strip_answer(text[m.end() : end]) or k == 0:
            yield Span(m.start(), end, text[m.end() : end], "answer_tag")
            return


def find_a_line(text: str, low: str, kind: str) -> Iterable[Span]:
    """GSM8K's few-shot "A: X" line: "A: The answer is 18." -> "18". An "A:" line that a "B:" line
    follows is the first of a list of options ("A: 12 apples is too few.\nB: 18 apples fits."), no
    answer: read as one, option A's value was a definite "wrong" for the right answer after it."""
    for m in _A_LINE_RE.finditer(text):
        if not _B_LINE_RE.match(text, m.end()):
            yield Span(m.start(), m.end(), m.group("ans"), "a_line")


def find_hashes(text: str, low: str, kind: str) -> Iterable[Span]:
    """GSM8K's "#### X": "#### 72" -> "72". A markdown heading of level four ("#### Step 2: Result",
    "#### 2. Final count", "#### Thousands place:") is a title over what follows, no answer: read as
    one, its step number was a definite "wrong" for the right answer stated under it."""
    for m in _HASHES_RE.finditer(text):
        if not is_heading(m.group("ans")):
            yield Span(m.start(), m.end(), m.group("ans"), "hashes")


# one "#" opening the output's last line (or, where a source stored the reply with its line breaks
# flattened to runs of spaces, after two spaces): "... for her class.\n# 16 yards", "# \\( x = 24 \\)"
_HASH_LINE_RE = re.compile(r"(?:\A|\n|[ \t]{2,})#(?!#)[ \t]*(?P<ans>[^#\n]{1,60}?)\s*\Z")
_MATH_PARTS_RE = re.compile(r"\\\(.*?\\\)|\$[^$]*\$|\\text\s*\{[^{}]*\}")
_HEADING_WORDS = frozenset("step part case question problem solution answer example section".split())
_ENUMERATION_RE = re.compile(r"\s*\d+[.)]\s+[^\W\d]")  # "2. Final count", "3) Check" (not "2.5")
_VALUE_FIRST_RE = re.compile(r"\s*[-+−]?\s*[$€£¥]?\s*\d")  # "18 dollars per hour", "$5 each"


def is_heading(line: str) -> bool:
    """Whether what follows a "#" or "####" is a heading's title rather than a value: a heading word
    ("Step 2", "Solution"), an enumeration ("2. Final count"), a title that ends in a colon, or more
    than two words outside math where no value opens the line (a value may carry a unit)."""
    if line.rstrip().endswith((":", "：")) or _ENUMERATION_RE.match(line):
        return True
    words = re.findall(r"[A-Za-z]{2,}", _MATH_PARTS_RE.sub(" ", line))
    if not _HEADING_WORDS.isdisjoint(w.lower() for w in words):
        return True
    return len(words) > 2 and not _VALUE_FIRST_RE.match(line)


def find_hash_line(text: str, low: str, kind: str) -> Iterable[Span]:
    """A last line that is "#" and a value alone, the format a prompt asked for ("# <answer>"): "# 16
    yards" -> "16 yards", "# \\(x = 6\\)". A heading of words ("# Step 2", "# Solution") is none: a
    value, and two words at most outside math (a unit)."""
    # (the line is the text's last: its one "#" is the last, and the pattern runs from a little before it)
    hash_at = text.rfind("#")
    if hash_at < 0:
        return
    start = max(0, text.rfind("\n", 0, hash_at), hash_at - 8)
    m = _HASH_LINE_RE.search(text, start)
    if m is not None and re.search(r"\d", m.group("ans")) and not is_heading(m.group("ans")):
        yield Span(m.start("ans") - 1, m.end(), m.group("ans"), "hash_line")


# a yes/no word alone in square brackets, the answer format a prompt asked for ('answer "[Yes]" or
# "[No]"'): not "\\[ ... \\]" display math, not a markdown link "[Yes](...)"
_BRACKETED_WORD_RE = re.compile(
    r"\[(?<!\\\[)[ \t]*(?P<ans>"  # (the "[" first: the regex engine skips to each one)
    + "|".join(
        re.escape(w) for w in sorted({*BOOLEAN_WORDS[True], *BOOLEAN_WORDS[False]}, key=len, reverse=True)
    )
    + r")[ \t]*\](?!\()",
    re.I,
)


def find_bracketed_word(text: str, low: str, kind: str) -> Iterable[Span]:
    """A yes/no word alone in square brackets, the format a prompt asked for: "Therefore, 14533 is a
    prime number.\n\n[Yes]" -> "Yes", "Therefore, [No], 4479 is not a prime number." -> "No"."""
    for m in _BRACKETED_WORD_RE.finditer(text):
        yield Span(m.start(), m.end(), m.group("ans"), "bracketed_word")


# ------------------------------------------------------------------------- answer markers
# Built from miners.verify.markers.ANSWER_MARKERS (data, one row per language, English included):
# a marker before a colon, in brackets or as a heading (marker_line, marker_heading), and a marker
# with its copula (marker_copula).
_MARKERS = marker_words()
# (the words of a marker may be joined by an underscore or a hyphen: "FINAL_ANSWER:", "Final-Answer:")
# (a trie of the words: _MARKERS is longest first, and a trie matches what that alternation matches)
_MARKER_ALT = word_trie((w for w, _ in _MARKERS), space=r"[ \t_-]+")
_MARKER_OF = {w.lower(): m for w, m in _MARKERS}
_SAME_LINE = {w for m in ANSWER_MARKERS for w in m.same_line}
_ANYWHERE = {w.lower() for m in ANSWER_MARKERS for w in m.anywhere}
# what follows a marker before its value: a colon of any script, or a table's cell border
_COLONS = ":：﹕︓∶꞉"
_AFTER_MARKER = r"[ \t*_]*(?:[" + _COLONS + r"]|\|(?=[^|\n]*\|[ \t]*(?:\n|$)))"
# a marker word may not continue a word of a spaced script ("Responsable:", "ответственный")
_NO_LETTER_BEFORE = r"(?<![A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff])"
_NO_LETTER_AFTER = r"(?![A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff])"
# the number of a numbered answer between its marker and the colon: "Answer 3: 42", "Answer (2): 7"
_MARKER_INDEX = r"(?:[ \t]*(?:#[ \t]*)?\d{1,3}|[ \t]*\(\d{1,3}\))?"
_MARKER_COLON_RE = re.compile(
    _NO_LETTER_BEFORE + r"(?P<w>" + _MARKER_ALT + r")" + _NO_LETTER_AFTER + _MARKER_INDEX
    + _AFTER_MARKER + r"[ \t*_]*(?P<ans>[^\n]*)",
    re.I,
)  # fmt: skip
_MARKER_BRACKET_RE = re.compile(
    r"[【〖\[]\s*(?P<w>" + _MARKER_ALT + r"|final\s+answer|answer)\s*[】〗\]]"
    r"[ \t*_]*[:：]?[ \t*_]*(?P<ans>[^\n]*)",
    re.I,
)
_MARKER_HEADING_RE = re.compile(
    r"(?im)^[ \t]*(?:#{1,6}[ \t]*(?:\*\*|__)?|\*\*|__)[ \t]*(?P<w>" + _MARKER_ALT
    + r"|final\s+answer|answer)[ \t]*(?:\*\*|__)?[ \t]*[:：]?[ \t]*(?:\*\*|__)?[ \t]*$"
)  # fmt: skip
# after a copula, a value: a number, math, or an option letter ("答案是 D"). Words are talk about an
# answer more often than one ("La réponse est correcte", "Die Antwort ist richtig").
_VALUE_LIKE_RE = re.compile(r"[0-9$\\]|^[ \t*_(（]*[A-Z](?![A-Za-z])")
# what may stand before a marker's colon: a line's start (after markup), a sentence's or a clause's
# end, or a word that concludes ("故", "所以", "因此") -- not the middle of a sentence
_MARKER_LEAD_RE = re.compile(
    r"(?:^|\n)[ \t>*_#\-【\[|]*$|[.!?。！？;；,，:：)）】\]][ \t*_]*$"
    r"|(?:故|所以|因此|综上所述|综上|则|即|于是)[ \t]*$"
)


def _copula_res(marker: AnswerMarker) -> re.Pattern | None:
    if not marker.copulas:
        return None
    words = "|".join(re.escape(w) for w in sorted(marker.words, key=len, reverse=True))
    # a copula of a spaced script may not begin a longer word ("est" in "estimate"); one of an
    # unspaced script (是, は) stands right before the value; words inside may be spaced any way
    cops = "|".join(
        re.escape(c).replace("\\ ", r"\s+") + (_NO_LETTER_AFTER if c.isascii() or c < "\u0530" else "")
        for c in marker.copulas
    )
    # (a note in brackets may stand between the marker and its copula: "answer (arabic numerals) is")
    return re.compile(
        _NO_LETTER_BEFORE + r"(?:" + words + r")[ \t]*(?:\([^()\n]{0,40}\)[ \t]*)?(?:" + cops + r")"
        + r"[ \t]*[:：]?[ \t]*(?=(?P<ans>[^\n]{0,400}))",
        re.I,
    )  # fmt: skip


def _talk_re(marker: AnswerMarker) -> re.Pattern | None:
    return re.compile(r"(?i)\s*(?:" + marker.talk + r")\b") if marker.talk else None


def _talk_words(marker: AnswerMarker) -> tuple[str, ...]:
    """The talk words as plain text ("as\\s+follows" -> "as follows"), to know a word cut short."""
    return tuple(w.replace(r"\s+", " ").lower() for w in marker.talk.split("|") if w) if marker.talk else ()


_COPULA_RES = tuple((m, _copula_res(m), _talk_re(m), _talk_words(m)) for m in ANSWER_MARKERS if m.copulas)
# The marker words an ASCII text can hold, none containing another ("respuesta final" holds
# "respuesta"): an ASCII text with none of them holds no marker, which spares the three marker
# regexes on most outputs; a text with any other character is read by them.
# "answer" first: most outputs hold it, and _marker_hint's search stops at the first word found.
_ASCII_MARKER_WORDS = tuple(
    sorted(
        (
            w
            for w, _ in _MARKERS
            if w.isascii() and not any(o != w and o in w for o, _ in _MARKERS if o.isascii())
        ),
        key=lambda w: w != "answer",
    )
)


# pieces of them ("option" in "best option", "sposta" in "risposta" and "resposta"): a text that holds
# none holds none of the words, found out by ten substring searches sooner than by one per word
_ASCII_MARKER_PIECES = covering_pieces(
    _ASCII_MARKER_WORDS, ("answer", "option", "choice", "spuesta", "sposta", "antwo", "jawa", "cevap", "svar")
)


# Every other marker word, each searched for only where its first character beyond ASCII stands ("×"
# and "→" in an English output call for no marker search)
_BEYOND_ASCII_MARKER_WORDS = Substrings(w for w, _ in _MARKERS if not w.isascii())


@lru_cache(maxsize=8)  # the three marker rules ask about one text in turn (a str caches its hash)
def _marker_hint(low: str) -> bool:
    if any(p in low for p in _ASCII_MARKER_PIECES) and any(w in low for w in _ASCII_MARKER_WORDS):
        return True
    return not low.isascii() and _BEYOND_ASCII_MARKER_WORDS.any_in(low)


def _heading_hint(low: str) -> bool:
    return ("#" in low or "**" in low or "__" in low) and _marker_hint(low)


_SENTENCE_MARK_RE = re.compile(r"[。！？]|[.!?](?=\s)")


def _marker_value(text: str, m: re.Match) -> tuple[str, int] | None:
    """(the value after a marker, where it ends): the rest of its line (with the next where it ends on
    an operator), or the next line where the marker ends its own -- unless that line is a paragraph
    (two sentences or more: working, or a refusal, not a value), which is no value at all."""
    ans = m.group("ans")
    if "|" in m.group(0)[: m.start("ans") - m.start()]:  # a table's cell: the value is the next one
        ans = ans.split("|", 1)[0]
    end = m.start("ans") + len(ans)
    if not _PLACEHOLDER_RE.match(ans):
        return _goes_on(text, ans, end)
    if _marker_word(m) in _SAME_LINE:
        return None  # "解答：" over a worked solution: a heading, not an empty answer
    value, value_end = _next_line(text, m.start("ans"))
    if len(_SENTENCE_MARK_RE.findall(value)) >= 2:
        return None
    return (value, value_end) if value else (value, end)


def find_marker_line(text: str, low: str, kind: str) -> Iterable[Span]:
    """An answer marker (miners.verify.markers) before a colon of any script, a table's cell border
    or in brackets, to the end of the line: "**Answer:** $12$" -> "12", "Final Answer: 72", "Ответ:
    12", "【答案】: C <eoa>" -> "C", "Réponse : $\\frac{1}{2}$", "[Answer] 7", "| Antwort | 42 |" ->
    "42"; at a line's start or after a sentence or a clause (a word read anywhere, "final answer", at
    any place); with the value on the next lines where the marker ends its line (a fenced, quoted or
    display block read whole; a paragraph there is no value: "【答案】\\n首先，我们需要……因此无法直接给出
    具体的答案。" commits to none)."""
    for m in _marker_colons(text):
        lead = _MARKER_LEAD_RE.search(text, max(0, m.start() - 40), m.start())
        if lead is not None or _marker_word(m) in _ANYWHERE:
            read = _marker_value(text, m)
            if read is not None:
                yield Span(m.start(), read[1], read[0], "marker_line", _language(m))
    if "[" in text or "【" in text or "〖" in text:
        for m in _MARKER_BRACKET_RE.finditer(text):
            read = _marker_value(text, m)
            if read is not None:
                yield Span(m.start(), read[1], read[0], "marker_line", _language(m))


_MARKER_WORD_GAP_RE = re.compile(r"[ \t_-]+")


def _marker_word(m: re.Match) -> str:
    """The marker word a match found, as the marker table writes it ("FINAL_ANSWER" -> "final answer")."""
    return _MARKER_WORD_GAP_RE.sub(" ", m.group("w").lower())


def _language(m: re.Match) -> str | None:
    marker = _MARKER_OF.get(_marker_word(m))
    return marker.language if marker is not None else None


# a marker word, its number ("Answer (12)") and the markup before its colon
_MARKER_WINDOW = max(len(w) for w, _ in _MARKERS) + 14
_COLON_RE = re.compile("[" + _COLONS + "|]")
# its one ASCII colon, for an ASCII text without "|": a scan for one character skips to it in C where a
# scan for any of several tries each character (half the time on the corpora)
_ASCII_COLON_RE = re.compile(":")
_BEFORE_COLON_RE = re.compile(
    opening_chars(w for w, _ in _MARKERS)
    + _NO_LETTER_BEFORE + r"(?:" + _MARKER_ALT + r")" + _NO_LETTER_AFTER + _MARKER_INDEX + r"[ \t*_]*$",
    re.I,
)  # fmt: skip


# what a marker and its number end on, right before the markup and the colon after them: a marker
# word's last letter (ignoring case), a digit or ")" (_MARKER_INDEX). A colon after anything else
# ("x:", "= 3:", "Step 1):"... most of a long output's colons but a marker's) needs no search.
_MARKER_END_RE = re.compile("[" + "".join(sorted({re.escape(w[-1]) for w, _ in _MARKERS})) + r"]|\d|\)", re.I)


def _marker_colons(text: str) -> Iterable[re.Match]:
    """_MARKER_COLON_RE's matches, found from each colon back (a few short searches, where a scan of
    the whole text would try every marker word at every character)."""
    done = 0
    colons = _ASCII_COLON_RE if text.isascii() and "|" not in text else _COLON_RE
    for colon in colons.finditer(text):
        c = colon.start()
        if c < done:
            continue
        lo = max(0, c - _MARKER_WINDOW)
        end = lo + len(text[lo:c].rstrip(" \t*_")) - 1  # (the character the marker or its number ends on)
        if end < lo or _MARKER_END_RE.match(text, end) is None:
            continue
        before = _BEFORE_COLON_RE.search(text, max(done, lo), c)
        if before is not None:
            m = _MARKER_COLON_RE.match(text, before.start())
            if m is not None:
                done = m.start("ans")  # (a later marker inside its value is a span of its own)
                yield m


# where a heading or a bold line can begin: _MARKER_HEADING_RE is tried there only (a search of a
# pattern anchored at line starts is tried at every character of the text)
_HEADING_START_RE = re.compile(r"\n[ \t]*(?:#|\*\*|__)")


def marker_headings(text: str) -> Iterator[re.Match]:
    """_MARKER_HEADING_RE.finditer(text), matched at the text's start and where _HEADING_START_RE says
    a line opens with a heading's or a bold line's mark."""
    done = 0
    for at in (0, *(m.start() + 1 for m in _HEADING_START_RE.finditer(text))):
        if at < done:
            continue  # inside the match before (finditer's matches do not overlap)
        m = _MARKER_HEADING_RE.match(text, at)
        if m is not None:
            done = m.end()
            yield m


def find_marker_heading(text: str, low: str, kind: str) -> Iterable[Span]:
    """A heading or a bold line that is only an answer marker, the value on the next line:
    "## Final Answer\\n\\n12" -> "12", "**Antwort**\\n$x = 3$" -> "x = 3"."""
    for m in marker_headings(text):
        if _marker_word(m) not in _SAME_LINE:
            value, value_end = _next_line(text, m.end() - 1)
            heading = _MD_HEADING_RE.fullmatch(value)
            if heading is not None and is_heading(heading.group("title")):
                continue  # "## Answer" over "### Step 1": the next line is a section's title, no value
            if len(_SENTENCE_MARK_RE.findall(value)) < 2:
                yield Span(m.start(), max(m.end(), value_end), value, "marker_heading", _language(m))


def _cut_talk(answer: str, talk_words: tuple[str, ...]) -> bool:
    """Whether an answer that the end of the reply cut is a word that begins a talk word."""
    word = answer.strip().lower()
    return len(word) >= 2 and word.isalpha() and any(w.startswith(word) for w in talk_words)


# Every copula marker's word under a key word it holds: the shortest other marker word inside it
# ("final answer" -> "answer", "svaret" -> "svar"), else its last word ("best choice" -> "choice",
# "only possible option" -> "option"). A text holds the marker word only if it holds the key, so a long
# output is searched once for "answer", not once for each of the marker words that hold it.
_COPULA_WORDS = tuple(dict.fromkeys(w for m, *_ in _COPULA_RES for w in m.words))


def _key_word(word: str) -> str:
    inside = [o for o in _COPULA_WORDS if o != word and o in word]
    return min(inside, key=len) if inside else word.split()[-1]


def _by_key_word(words: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    groups: dict[str, list[str]] = {}
    for w in words:
        groups.setdefault(_key_word(w), []).append(w)
    return tuple((key, tuple(ws)) for key, ws in groups.items())


_COPULA_GROUPS = _by_key_word(_COPULA_WORDS)
_ASCII_COPULA_GROUPS = _by_key_word(w for w in _COPULA_WORDS if w.isascii())  # what an ASCII text can hold
_COPULA_WORDS_BY_KEY = dict(_COPULA_GROUPS)
_COPULA_KEYS = Substrings(_COPULA_WORDS_BY_KEY)  # (for a text beyond ASCII)


@lru_cache(maxsize=8)  # asked once per text and rule pass (a str caches its hash)
def _copula_words_in(low: str) -> frozenset[str]:
    """The copula markers' words that occur in low (substring tests, as `w in low`)."""
    found: list[str] = []
    if low.isascii():
        for key, words in _ASCII_COPULA_GROUPS:
            if key in low:
                found += [w for w in words if w == key or w in low]
    else:
        for key in _COPULA_KEYS.found_in(low):
            found += [w for w in _COPULA_WORDS_BY_KEY[key] if w == key or w in low]
    return frozenset(found)


def find_marker_copula(text: str, low: str, kind: str) -> Iterable[Span]:
    """An answer marker and its copula, to the end of the sentence: "So the answer is 18 dollars." ->
    "18 dollars" (prose: reduced to 18), "the correct option is:\\nB)After 12 minutes", "answer
    (arabic numerals) is\\n\\n8", "所以答案是D。" -> "D", "La réponse est 12." -> "12", "Die Antwort
    lautet $x=3$". Talk about an answer is none: "the answer is correct", "答案是正确的"."""
    present = _copula_words_in(low)
    if not present:
        return
    for marker, regex, talk, talk_words in _COPULA_RES:
        if regex is None or present.isdisjoint(marker.words):
            continue
        words = tuple(w for w in marker.words if w in present)
        for m in matches_at_words(regex, text, low, words):
            span = _sentence_span(text, m, "marker_copula", talk)
            if span is not None and span.end == len(text) and _cut_talk(span.text, talk_words):
                continue  # "That answer is incor" where the reply is cut: the start of talk, no value
            if span is not None:
                yield span._replace(language=marker.language)


# The rules, in the order they are tried (the order does not decide: position and priority do).
SPAN_RULES: tuple[SpanRule, ...] = (
    SpanRule("boxed", 3, True, ("boxed", "fbox"), find_boxed),
    SpanRule("answer_tag", 2, True, ("answer",), find_answer_tag),
    SpanRule("json_field", 1, True, ("answer",), find_json_field),
    SpanRule("hashes", 1, True, ("####",), find_hashes),
    SpanRule("hash_line", 1, True, ("#",), find_hash_line),
    SpanRule("a_line", 1, True, ("a:",), find_a_line),
    SpanRule("answer_math", 0, True, ("answer",), find_answer_math),
    SpanRule("marker_line", 1, True, lambda low: _marker_hint(low) or "answer]" in low, find_marker_line),
    SpanRule("marker_heading", 1, True, _heading_hint, find_marker_heading),
    SpanRule("marker_copula", 1, True, _marker_hint, find_marker_copula),
    SpanRule("bracketed_word", 1, True, lambda low: "[" in low and "]" in low, find_bracketed_word),
)
RULES_BY_NAME = {r.name: r for r in SPAN_RULES}


def find_spans(text: str, kind: str = "math", rules: tuple[SpanRule, ...] = SPAN_RULES) -> list[Span]:
    """Every answer span every rule finds in text; spans inside the fields that follow a JSON answer
    field (its "confidence", "notes") are commentary on that answer, not later answers."""
    low = lowered(text)
    found: list[Span] = []
    for rule in rules:
        hints = rule.hints  # (inline: this loop runs for every rule of every output)
        if type(hints) is tuple:
            for h in hints:
                if h in low:
                    break
            else:
                continue
        elif not hints(low):  # type: ignore[operator]
            continue
        found.extend(rule.find(text, low, kind))
    objects = [(c.end, _json_fields_end(text, c.end)) for c in found if c.rule == "json_field"]
    if objects:
        found = [c for c in found if c.rule == "json_field" or not any(a <= c.start < b for a, b in objects)]
    return found
