"""Text normalization behind the match key: what a disguise or a tool's encoding changes, this takes away.

    from pairstore.normalize import word_text, compact_text, STEPS
    word_text("Wh\u200bat is the саpital of Peru??")          # -> "what is the capital of peru"
    word_text("<|im_start|>user\nWhat&#39;s 1,250 + 3?<|im_end|>")  # -> "what s 1 250 + 3"
    compact_text(word_text("What is 12 + 7?"))                 # -> "whatis12+7"

`word_text(text)` runs one pipeline of ordered, named steps (STEPS), the same on both sides of every
comparison (held-out members and training rows), each a pure function tested on its own
(tests/base/test_normalize.py):

1. ``decode_escapes`` - the layers tools add, undone until nothing changes (at most 3 rounds): HTML
   entities (`&#39;`, `&amp;`, `&nbsp;`), JSON / C backslash escapes of a double JSON encoding (`\\n`,
   `\\"`, `\\u00e9`), spreadsheet (OOXML) escapes `_x000D_`;
2. ``strip_markup`` - rendered chat templates and prompt formats become line breaks: ChatML
   `<|im_start|>user` / `<|im_end|>`, Llama `[INST]` `<<SYS>>` `<s>`, Llama-3 `<|start_header_id|>user
   <|end_header_id|>` `<|eot_id|>`, Gemma `<start_of_turn>model`, Alpaca `### Instruction:` /
   `### Response:`, `Question:` / `Answer:` / `Human:` / `User:` at the start of a line, HTML tags;
3. ``nfkc`` - Unicode NFKC (fullwidth, ligatures, compatibility forms);
4. ``ascii_digits`` - a decimal digit of any script (Arabic-Indic, Devanagari, ...) becomes its ASCII digit;
5. ``fold`` - case folding that holds for every script, with the translation table (`fold_table`):
   invisible and format characters, controls and combining marks removed; every non-ASCII character
   that Unicode's confusables data (UTS #39, pairstore/data/confusables.tsv) maps to a prototype replaced
   by it; non-ASCII punctuation becomes a space (or its ASCII look-alike). A text written in its own
   script (it holds a letter with no ASCII look-alike in either case: Cyrillic "л", Greek "λ") is case-
   folded *before* the table, so upper, title and lower case give one key; a Latin text with look-alike
   letters slipped in (no such letter) is mapped by each letter's own shape first (Greek "Η" is "h").
   ASCII itself is never remapped: 0/O, 1/l and rn/m are different text there;
6. ``number_forms`` - numbers made comparable: thousands separators (`1,250`, `1.250`, `1'250`) become a
   word break inside the number ("1 250", so the key reads 1250), a decimal comma (`1,5`) a decimal
   point, a time `3.15 pm` is `3:15 pm`;
7. ``punctuation`` - every ASCII punctuation character becomes a word break (never glueing two words);
   the arithmetic signs `+ - * / = < > ^` are kept between two numbers ("12 + 7", "2^10"), `+`/`-` as the
   sign of a number ("-5"), `%` after one ("20%"), a dot between two digits ("3.5");
8. ``spaces`` - whitespace collapsed to single spaces, trimmed.

`compact_text` drops the spaces too: the text behind the match key, so spacing and punctuation do not
matter. The same question with other numbers, another operator or another word keeps a key of its own.
`sentences(text)` is the word text of each sentence and line (the unit a short member is looked for as).

Plain ASCII text skips the Unicode steps; the table's entry for a character is computed the first time a
text holds it.
"""

from __future__ import annotations

import functools
import html
import re
import string
import unicodedata
from collections.abc import Callable
from importlib import resources

TURN_SEP = "\x1e"  # separates turns inside a match text; whitespace to every normalizer
OPERATORS = "+-*/=<>^%"
_ASCII_WS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_ASCII_CONTROLS = "".join(chr(c) for c in [*range(0, 9), *range(0x0E, 0x1C), 0x7F])
# ASCII punctuation that always becomes a space: everything but the operators and the dot (step 7 decides).
_ASCII_PUNCT = "".join(c for c in string.punctuation if c not in OPERATORS + ".")

# Default-ignorable code points that are not in category Cf (DerivedCoreProperties.txt): the combining
# grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian variation selectors, variation
# selectors, the halfwidth Hangul filler, the tag and variation-selector supplement planes.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)
# Blank-looking symbols that are not whitespace to Unicode: read as a space.
_BLANKS = (0x2800,)

ASCII_TABLE = str.maketrans(
    _ASCII_WS + _ASCII_PUNCT, " " * (len(_ASCII_WS) + len(_ASCII_PUNCT)), _ASCII_CONTROLS
)

# -- step 1: decode_escapes ------------------------------------------------------------------------------

_BACKSLASH = re.compile(r"\\(u[0-9a-fA-F]{4}|[nrtbf\"'/\\])")
_BACKSLASH_CHARS = {
    "n": "\n",
    "r": "\n",
    "t": " ",
    "b": " ",
    "f": " ",
    '"': '"',
    "'": "'",
    "/": "/",
    "\\": "\\",
}
_OOXML = re.compile(r"_x([0-9A-Fa-f]{4})_")


def _unbackslash(m: re.Match) -> str:
    s = m.group(1)
    if s[0] == "u":
        cp = int(s[1:], 16)
        return " " if 0xD800 <= cp <= 0xDFFF else chr(cp)
    return _BACKSLASH_CHARS[s]


def decode_escapes(text: str) -> str:
    """HTML entities, backslash escapes and spreadsheet escapes, decoded until nothing changes (3 rounds
    at most: `&amp;#39;` is two layers)."""
    for _ in range(3):
        if "&" not in text and "\\" not in text and "_x" not in text:
            return text
        new = html.unescape(text) if "&" in text else text
        if "\\" in new:
            new = _BACKSLASH.sub(_unbackslash, new)
        if "_x" in new:
            new = _OOXML.sub(lambda m: chr(int(m.group(1), 16)), new)
        if new == text:
            return text
        text = new
    return text


# -- step 2: strip_markup --------------------------------------------------------------------------------

# The role marker of a question/answer or instruction format at a line start ("Question:", "### Response:").
ROLE_MARKER_PATTERN = (
    r"(?m:^[ \t]*(?:#{1,4}[ \t]*)?(?:instruction|input|response|question|answer|human|user|assistant"
    r"|system|context|q|a)[ \t]*:)"
)
# Written for both Python's re and RE2 (pairstore.holdout.scan runs it over Arrow arrays): no lookaround.
MARKUP_PATTERN = (
    r"<\|im_start\|>[ \t]*(?:system|user|assistant|tool)?"
    r"|<\|start_header_id\|>[^<]{0,20}<\|end_header_id\|>"
    r"|<\|[a-z_]{1,24}\|>"
    r"|<start_of_turn>[ \t]*(?:user|model|system)?|<end_of_turn>"
    r"|\[/?INST\]|<</?SYS>>|</?s>|<bos>|<eos>"
    r"|</?[a-z][a-z0-9]{0,15}(?:[ \t][^<>]{0,200})?/?>"
    r"|" + ROLE_MARKER_PATTERN
)
_MARKUP = re.compile(MARKUP_PATTERN, re.IGNORECASE)


def strip_markup(text: str) -> str:
    """Chat-template markup, role markers of common prompt formats and HTML tags -> a line break."""
    if "<" not in text and "[" not in text and ":" not in text:
        return text
    return _MARKUP.sub("\n", text)


# -- step 3: nfkc ----------------------------------------------------------------------------------------


def nfkc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


# -- step 4: ascii_digits ----------------------------------------------------------------------------------


@functools.cache
def _digits_table() -> dict[int, str]:
    return {
        cp: str(unicodedata.decimal(chr(cp)))
        for cp in range(0x80, 0x323B0)
        if unicodedata.category(chr(cp)) == "Nd"
    }


def ascii_digits(text: str) -> str:
    """Decimal digits of every script (Unicode category Nd) as ASCII digits."""
    return text if text.isascii() else text.translate(_digits_table())


# -- step 5: fold ----------------------------------------------------------------------------------------


def _load_confusables() -> dict[int, str]:
    text = (resources.files("pairstore") / "data" / "confusables.tsv").read_text(encoding="utf-8")
    table = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            source, target = line.split("\t")
            table[int(source, 16)] = "".join(chr(int(h, 16)) for h in target.split())
    return table


def _base_action(cp: int, confusables: dict[int, str]) -> str | None | int:
    """What step 2 does to one code point: None (remove), a replacement string, or 0 (keep as it is)."""
    ch = chr(cp)
    if cp < 0x80:
        if ch in _ASCII_WS:
            return " "
        # ASCII punctuation is left to steps 6 and 7 (a comma may be a number's separator)
        return None if ch in _ASCII_CONTROLS else 0
    cat = unicodedata.category(ch)
    if cat in ("Cf", "Cs", "Mn", "Me") or any(lo <= cp <= hi for lo, hi in _IGNORABLE_RANGES):
        return None
    if cat == "Cc":
        return " " if ch.isspace() else None
    if cat[0] == "Z" or cp in _BLANKS:
        return " "
    if cat == "Nd":
        return str(unicodedata.decimal(ch))  # step 4 did it; the table alone is right too
    if cat[0] == "P":
        # Punctuation is a word break, unless it looks like an arithmetic sign or a dot ("‐" U+2010 in
        # "12 ‐ 7"): step 7 decides those.
        proto = confusables.get(cp, "")
        return proto if len(proto) == 1 and proto in OPERATORS + "." else " "
    if cp in confusables:
        proto = confusables[cp]
        # A capital that looks like I has the prototype "l" (TR39 maps I, l, 1 and | to it); after case
        # folding the Latin "I" is "i", so its upper-case look-alikes must be too.
        return "i" if proto == "l" and cat == "Lu" else proto
    decomposition = unicodedata.decomposition(ch)
    if decomposition and not decomposition.startswith("<"):
        base = "".join(
            c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) not in ("Mn", "Me")
        )
        if base != unicodedata.normalize("NFD", ch):
            return base
    return 0


_SCANNED = ((0, 0x323AF), (0xE0000, 0xE0FFF))  # every assigned character outside private use


class _FoldTable(dict):
    """Step 5's translation table, each code point's entry computed the first time a text holds it (a
    text holds a few hundred distinct characters; the whole table is 200,000 and takes seconds). An
    entry is the final replacement: a string (the character itself where step 5 leaves it), or None
    (removed). `str.translate` reads it as it is."""

    def __init__(self) -> None:
        super().__init__()
        self._confusables = _load_confusables()

    def __missing__(self, cp: int) -> str | None:
        return self._resolve(cp, frozenset())

    def _resolve(self, cp: int, visiting: frozenset) -> str | None:
        """The final replacement of one code point: its action, folded, each character resolved in turn."""
        if cp in self:
            return dict.__getitem__(self, cp)
        scanned = any(lo <= cp <= hi for lo, hi in _SCANNED)
        action = _base_action(cp, self._confusables) if scanned else 0
        if cp in visiting:
            return chr(cp)  # a cycle of look-alikes: the character stands for itself
        if action == 0:
            value: str | None = chr(cp)
        elif action is None:
            value = None
        else:
            assert isinstance(action, str)
            parts = (
                self._resolve(ord(c), visiting | {cp}) if ord(c) != cp else c
                for c in unicodedata.normalize("NFKC", action).casefold()
            )
            value = "".join(p for p in parts if p is not None)
        self[cp] = value
        return value


@functools.cache
def _table() -> _FoldTable:
    return _FoldTable()


def fold_table() -> dict[int, str | None]:
    """Step 5's whole translation table (only the code points it changes), each value already final."""
    table = _table()
    return {cp: v for lo, hi in _SCANNED for cp in range(lo, hi + 1) if (v := table[cp]) != chr(cp)}


@functools.lru_cache(maxsize=65536)
def own_script_letter(cp: int) -> bool:
    """A letter with no ASCII look-alike in either case (Cyrillic "л", Greek "λ", every CJK letter): a text
    holding one is written in its own script, not a Latin text in disguise."""
    if cp < 0x80 or not any(lo <= cp <= hi for lo, hi in _SCANNED):
        return False
    ch = chr(cp)
    if not unicodedata.category(ch).startswith("L"):
        return False
    table = _table()
    forms = {ch, ch.lower(), ch.upper()}
    return not any((table[ord(f)] or "x").isascii() for f in forms if len(f) == 1)


def _own_script(text: str) -> bool:
    return any(own_script_letter(ord(c)) for c in text if not c.isascii())


_WORDS = re.compile(r"(\s+)")


def fold(text: str) -> str:
    """Step 5: case folding and the translation table, so that case holds for every script."""
    if text.isascii():
        return text.lower()
    table = _table()
    if _own_script(text):
        # Fold, map, fold again: upper- and lower-case Cyrillic or Greek have different look-alikes
        # ("М" looks like M, "м" like ʍ), so the case goes first. Words holding ASCII letters are Latin
        # words with look-alikes slipped in: their letters are mapped by their own shape.
        return "".join(
            w.translate(table).casefold().translate(table)
            if any(c.isascii() and c.isalpha() for c in w)
            else w.casefold().translate(table).casefold().translate(table)
            for w in _WORDS.split(text)
        )
    # A Latin text in disguise: each look-alike by its own shape first (Greek "Η" is "H", its small "η" is
    # "n"), then folded, then the table again for what folding made.
    return text.translate(table).casefold().translate(table)


# -- step 6: number_forms --------------------------------------------------------------------------------

# Each pattern starts with a digit (its "no digit or separator before" is a lookbehind after that digit),
# so the engine skips to the next digit instead of trying every position.
# 1,250 / 1.250 / 1'250 / 12,345,678: groups of three digits after a separator, one separator kind.
_THOUSANDS = re.compile(r"(\d(?<![\d.,']\d)\d{0,2})((?:([,.'])\d{3})(?:\3\d{3})*)(?![\d]|[.,']\d)")
# 1,5 / 3,14: a decimal comma (one or two digits after it, not a list "1,2,3") is a decimal point.
_DECIMAL_COMMA = re.compile(r"(\d(?<![\d,.]\d)\d*),(\d{1,2})(?![\d]|[.,]\d)")
_TIME = re.compile(r"(\d(?<![\d.:]\d)\d?)[.:](\d{2})(?=\s*(?:[ap]\.?\s?m\b|h\b|hrs?\b|o'?clock\b))", re.I)


# Every match of the three patterns above holds a digit, a separator and a digit: a text without one is
# left as it is without running them (most texts with numbers have no separators).
_SEPARATED_DIGITS = re.compile(r"\d[.:,']\d")


def number_forms(text: str) -> str:
    """Thousands separators as a word break inside the number; `3.15 pm` as `3:15 pm`."""
    if _SEPARATED_DIGITS.search(text) is None:
        return text
    text = _TIME.sub(r"\1:\2", text)
    text = _DECIMAL_COMMA.sub(r"\1.\2", text)
    return _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(m.group(3), " "), text)


# -- step 7: punctuation ---------------------------------------------------------------------------------

_SIGN = re.compile(r"[+\-*/=<>^%.]")


def _keep_sign(text: str, i: int) -> bool:
    c = text[i]
    before = text[i - 1] if i else " "
    before2 = text[i - 2] if i > 1 else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    after2 = text[i + 2] if i + 2 < len(text) else " "
    digit_before = before.isdigit() or (before == " " and before2.isdigit())
    digit_after = after.isdigit() or (after == " " and after2.isdigit())
    if c == ".":
        return before.isdigit() and after.isdigit()
    if c == "%":
        return digit_before
    if c in "+-" and digit_after and not (before.isalnum()):
        return True  # a sign: "-5", "x = -5", "(+3)"
    return digit_before and digit_after


# _keep_sign written as one pattern for ASCII text (where isdigit is [0-9] and isalnum [0-9A-Za-z]): a sign
# that none of its rules keep. Lookarounds read the text as it was before the substitution, as
# _keep_sign does; tests/base/test_normalize.py compares the two on every short text over the signs' alphabet.
# Each rule reads the characters around the sign from just after it: the sign comes first in the pattern,
# so the engine skips to the next sign instead of trying every position.
_OP = r"[+\-*/=<>^]"
_DIGIT_AFTER = r"(?:[0-9]| [0-9])"
_DROPPED_ASCII_SIGN = re.compile(
    r"[+\-*/=<>^%.]"
    r"(?!(?<=[0-9]\.)[0-9])"  # the decimal dot: a digit on both sides
    r"(?<![0-9]%)(?<![0-9] %)"  # percent after a number
    rf"(?!(?<![0-9A-Za-z][+\-])(?<=[+\-]){_DIGIT_AFTER})"  # the sign of a number
    rf"(?!(?:(?<=[0-9]{_OP})|(?<=[0-9] {_OP})){_DIGIT_AFTER})"  # an operator between two numbers
)
_ANY_SIGN = re.compile(r"[+\-*/=<>^%.]")


def punctuation(text: str) -> str:
    """ASCII punctuation -> a word break; arithmetic signs and the decimal dot kept beside numbers."""
    text = text.translate(ASCII_TABLE)
    if _ANY_SIGN.search(text) is None:
        return text
    if text.isascii():
        return _DROPPED_ASCII_SIGN.sub(" ", text)
    return _SIGN.sub(lambda m: m.group(0) if _keep_sign(text, m.start()) else " ", text)


# -- step 8: spaces ---------------------------------------------------------------------------------------


def spaces(text: str) -> str:
    return " ".join(text.split())


STEPS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("decode_escapes", decode_escapes),
    ("strip_markup", strip_markup),
    ("nfkc", nfkc),
    ("ascii_digits", ascii_digits),
    ("fold", fold),
    ("number_forms", number_forms),
    ("punctuation", punctuation),
    ("spaces", spaces),
)


def word_text(text: str) -> str:
    """The normalized words of one text: every step of STEPS in order (see the module docstring)."""
    for _, step in STEPS:
        text = step(text)
    return text


# -- many texts at once -------------------------------------------------------------------------------------

# A plain text: ASCII without what steps 1 and 2 decode or strip beyond a role marker at a line start
# (entities, backslash and spreadsheet escapes, "<" and "[" markup) and without NUL, which separates the
# texts of a batch. For such a text steps 1-5 are the role markers and lower case, and steps 6 and 7 read
# nothing across a NUL (no pattern consumes or looks past one as a digit, a letter or a space).
_NOT_PLAIN = re.compile(r"[&\\<\[\x00]|_x")
_NOT_PLAIN_CHAR = re.compile(r"[&\\<\[\x00]")  # _NOT_PLAIN but "_x", found with `in` (a class scans faster)
# ROLE_MARKER_PATTERN after a line break (kept): starting with a literal, the engine jumps from line to line
# instead of trying every position, as (?m:^...) makes it do. The text's first line: _ROLE_MARKER.match.
_ROLE_MARKER = re.compile(ROLE_MARKER_PATTERN)  # on lower-cased text
_ROLE_MARKER_AFTER_BREAK = re.compile("\n" + ROLE_MARKER_PATTERN.removeprefix("(?m:^").removesuffix(")"))
_BATCH_SEP = "\x00\n"  # the NUL ends a text for steps 6 and 7; the line break starts the next for ^
_KEEP_NUL = {k: v for k, v in ASCII_TABLE.items() if k != 0}


def word_texts(texts: list[str]) -> list[str]:
    """[word_text(t) for t in texts], with the plain texts (_NOT_PLAIN) normalized together: each step runs
    once over them all joined by _BATCH_SEP, which for short texts is several times faster than a call per
    text and step. tests/base/test_normalize.py checks it equals word_text on texts built to cross the
    joins."""
    out: list[str | None] = [None] * len(texts)
    together = "\n".join(texts)
    if together.isascii() and "_x" not in together and _NOT_PLAIN_CHAR.search(together) is None:
        plain = list(range(len(texts)))  # the common case, found with one search
    else:
        plain = []
        for i, t in enumerate(texts):
            if t.isascii() and _NOT_PLAIN.search(t) is None:
                plain.append(i)
            else:
                out[i] = word_text(t)
    if plain:
        joined = _BATCH_SEP.join(texts[i] for i in plain).lower()
        if ":" in joined:
            start = _ROLE_MARKER.match(joined)
            rest = joined if start is None else joined[start.end() :]
            rest = _ROLE_MARKER_AFTER_BREAK.sub("\n\n", rest)
            joined = rest if start is None else "\n" + rest
        joined = number_forms(joined).translate(_KEEP_NUL)
        if _ANY_SIGN.search(joined) is not None:
            joined = _DROPPED_ASCII_SIGN.sub(" ", joined)
        parts = joined.split("\x00")
        assert len(parts) == len(plain)  # a plain text holds no NUL and no step makes one
        for i, part in zip(plain, parts):
            out[i] = " ".join(part.split())
    return out  # type: ignore[return-value]


# Sentence ends, line breaks, turn breaks, a colon ("Practice question: ..."), and the answer marker of
# a question/answer format inside a line ("... Answer: ...").
_SENTENCE_END = re.compile(
    r"(?<=[.!?;:])\s+|(?<=[\u3002\uff01\uff1f\uff1b\uff1a])|\n+|\x1e|\s(?=(?:answer|a|response|output)\s*:)",
    re.IGNORECASE,
)


# Greetings and thanks around a request ("Hi! Tell me a joke thanks a lot"): a sentence is also read
# without them.
POLITE_WORDS = frozenset(
    "hi hello hey there dear please pls thanks thank thx you a lot so much very in advance kindly".split()
)


def sentences(text: str) -> list[str]:
    """The word text of each sentence and line of a raw text (markup and role markers are line breaks),
    and of each sentence without the greetings and thanks around it (POLITE_WORDS)."""
    raw = strip_markup(decode_escapes(text))
    out = []
    for s in _SENTENCE_END.split(raw):
        words = word_text(s).split()
        if not words:
            continue
        out.append(" ".join(words))
        lo, hi = 0, len(words)
        while lo < hi and words[lo] in POLITE_WORDS:
            lo += 1
        while hi > lo and words[hi - 1] in POLITE_WORDS:
            hi -= 1
        if 0 < hi - lo < len(words):
            out.append(" ".join(words[lo:hi]))
    return out


def compact_text(text: str) -> str:
    """A word text (or turns of them joined by TURN_SEP) without spaces or turn breaks: the match-key text."""
    return text.replace(" ", "").replace(TURN_SEP, "")


# Plain ASCII text holding one of these reads differently through word_text than through the lm-eval style
# reading of pairstore.holdout.scan (ASCII lower case, punctuation to spaces): escapes and markup. Written
# for RE2 too (the scan runs it over Arrow arrays).
NEEDS_WORD_TEXT_PATTERN = r"&[#a-z]|\\[unrtbf\"'/\\]|_x[0-9a-f]{4}_|" + MARKUP_PATTERN
_NEEDS_WORD_TEXT = re.compile(NEEDS_WORD_TEXT_PATTERN, re.IGNORECASE)


def needs_fold(text: str) -> bool:
    """True when the lm-eval style reading (ASCII lower case, punctuation to spaces) is not enough: non-ASCII
    or control characters, escapes, markup. Such text goes through word_text first."""
    if not text.isascii() or any(c in text for c in _ASCII_CONTROLS):
        return True
    return _NEEDS_WORD_TEXT.search(text) is not None
