"""Text normalization behind the match key: what a disguise or a tool's encoding changes, this takes away.

    from pairstore.normalize import word_text, word_texts, compact_text, STEPS
    word_text("Wh\u200bat is the саpital of Peru??")          # -> "what is the capital of peru"
    word_text("<|im_start|>user\nWhat&#39;s 1,250 + 3?<|im_end|>")  # -> "what's 1 250 + 3"
    word_text("What%20is%20Peru%27s%20capital%3F")             # -> "what is peru's capital"
    word_text("WhatĠisĠtheĠcapital")                           # -> "what is the capital"
    compact_text(word_text("What is 12 + 7?"))                 # -> "whatis12+7"

`word_text(text)` runs one pipeline of ordered, named steps (STEPS), the same on both sides of every
comparison (held-out members and training rows). Each step is a `Step`: a one-text method `one` and a
many-texts method `many` that gives the same list, faster (tests/base/test_normalize.py holds the two
equal on generated text); `word_texts(texts)` runs the `many` of each step.

1. ``decode_escapes`` - the layers tools add, undone until nothing changes (at most 3 rounds): HTML
   entities (`&#39;`, `&amp;`, `&nbsp;`), JSON / C backslash escapes of a double JSON encoding (`\\n`,
   `\\"`, `\\u00e9`), spreadsheet (OOXML) escapes `_x000D_`, URL encoding (`%20`, `%C3%A9`, and `+`
   for a space in a form-encoded text: one without whitespace that holds a `%XX` escape or a `+`
   between two letters);
2. ``strip_markup`` - rendered chat templates and prompt formats become line breaks: ChatML
   `<|im_start|>user` / `<|im_end|>`, Llama `[INST]` `<<SYS>>` `<s>`, Llama-3 `<|start_header_id|>user
   <|end_header_id|>` `<|eot_id|>`, Gemma `<start_of_turn>model`, Alpaca `### Instruction:` /
   `### Response:`, `Question:` / `Answer:` / `Human:` / `User:` at the start of a line, HTML tags;
3. ``nfkc`` - Unicode NFKC (fullwidth, ligatures, compatibility forms);
4. ``ascii_digits`` - a decimal digit of any script (Arabic-Indic, Devanagari, ...) becomes its ASCII digit;
5. ``fold`` - every character decided (`char_class`), case folded for every script, with the
   translation table (`fold_table`): invisible and format characters, controls and combining marks
   removed; tokenizer word marks (`Ġ` and `Ċ` of byte-level BPE, `▁` of SentencePiece) a word break;
   every non-ASCII character that Unicode's confusables data (UTS #39, pairstore/data/confusables.tsv)
   maps to a prototype replaced by it; non-ASCII punctuation becomes a space (or its ASCII look-alike:
   an arithmetic sign, a dot, an apostrophe); every other symbol (currency, arrows, emoji, box drawing),
   private-use and unassigned code point becomes a space. A text written in its own script (it holds a
   letter with no ASCII look-alike in either case: Cyrillic "л", Greek "λ") is case-folded *before* the
   table, so upper, title and lower case give one key; a Latin text with look-alike letters slipped in
   (no such letter) is mapped by each letter's own shape first (Greek "Η" is "h"). ASCII itself is never
   remapped: 0/O, 1/l and rn/m are different text there;
6. ``number_forms`` - numbers made comparable: thousands separators (`1,250`, `1.250`, `1'250`) become a
   word break inside the number ("1 250", so the key reads 1250), a decimal comma (`1,5`) a decimal
   point, a time `3.15 pm` is `3:15 pm`;
7. ``punctuation`` - every ASCII punctuation character becomes a word break (never glueing two words,
   so the `##` of a WordPiece dump is one too); the arithmetic signs `+ - * / = < > ^` are kept between
   two numbers ("12 + 7", "2^10"), `+`/`-` as the sign of a number ("-5"), `%` after one ("20%"), a dot
   between two digits ("3.5"), an apostrophe between two letters ("Peru's", "don't": one word);
8. ``spaces`` - whitespace collapsed to single spaces, trimmed.

`compact_text` drops the spaces and apostrophes too: the text behind the match key, so spacing,
punctuation and a dropped apostrophe do not matter. The same question with other numbers, another
operator or another word keeps a key of its own. `sentences(text)` is the word text of each sentence
and line (the unit a short member is looked for as).

`normalization_version()` names every step's version, the match-key text's and the Unicode data's; the
store keeps it with every key it holds and re-keys when it changes (pairstore.store.rekey).

Plain ASCII text skips the Unicode steps; the table's entry for a character is computed the first time a
text holds it.
"""

from __future__ import annotations

import functools
import html
import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

TURN_SEP = "\x1e"  # separates turns inside a match text; whitespace to every normalizer
OPERATORS = "+-*/=<>^%"
# What step 7 keeps in context: the operators beside numbers, the dot between digits, the apostrophe
# between letters. Everywhere else they are word breaks.
KEPT_SIGNS = OPERATORS + ".'"
_ASCII_WS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_ASCII_CONTROLS = "".join(chr(c) for c in [*range(0, 9), *range(0x0E, 0x1C), 0x7F])
# ASCII punctuation that always becomes a space: everything but the kept signs (step 7 decides those).
_ASCII_PUNCT = "".join(c for c in string.punctuation if c not in KEPT_SIGNS)
# Tokenizer word marks: byte-level BPE writes a space as "Ġ" and a line break as "Ċ", SentencePiece a word
# start as "▁". A decoded-token dump glues every word of a text with them; each is a word break.
TOKEN_MARKS = {0x0120: " ", 0x010A: " ", 0x2581: " "}

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
_IGNORABLE = frozenset(cp for lo, hi in _IGNORABLE_RANGES for cp in range(lo, hi + 1))
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
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
# A form-encoded text (application/x-www-form-urlencoded writes a space as "+"): no whitespace, and a
# percent escape or a "+" between two letters. "12+7" alone stays arithmetic.
_FORM_SIGN = re.compile(r"%[0-9A-Fa-f]{2}|[^\W\d_]\+[^\W\d_]")
_WHITESPACE = re.compile(r"\s")
# What may start an escape of step 1: a text holding none of these is left as it is.
_ESCAPE_START = re.compile(r"[&\\%+]|_x")


def _unbackslash(m: re.Match) -> str:
    s = m.group(1)
    if s[0] == "u":
        cp = int(s[1:], 16)
        return " " if 0xD800 <= cp <= 0xDFFF else chr(cp)
    return _BACKSLASH_CHARS[s]


def _unpercent(m: re.Match) -> str:
    """A run of percent escapes as the UTF-8 text it encodes; a byte that is not part of a UTF-8 character
    stays escaped (`%FF`), so nothing is lost or invented."""
    raw = bytes.fromhex(m.group(0).replace("%", ""))
    decoded = raw.decode("utf-8", errors="surrogateescape")
    return "".join(f"%{ord(c) - 0xDC00:02X}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in decoded)


def url_decode(text: str) -> str:
    """Percent escapes (`%20`, `%C3%A9`) decoded; in a form-encoded text (_FORM_SIGN) `+` is a space first."""
    if "+" in text and _WHITESPACE.search(text) is None and _FORM_SIGN.search(text) is not None:
        text = text.replace("+", " ")
    return _PERCENT_RUN.sub(_unpercent, text) if "%" in text else text


def decode_escapes(text: str) -> str:
    """HTML entities, backslash escapes, spreadsheet escapes and URL encoding, decoded until nothing
    changes (3 rounds at most: `&amp;#39;` and `%2526` are two layers)."""
    for _ in range(3):
        if _ESCAPE_START.search(text) is None:
            return text
        new = html.unescape(text) if "&" in text else text
        if "\\" in new:
            new = _BACKSLASH.sub(_unbackslash, new)
        if "_x" in new:
            new = _OOXML.sub(lambda m: chr(int(m.group(1), 16)), new)
        if "%" in new or "+" in new:
            new = url_decode(new)
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
    """What step 5 does to one code point: None (remove), a replacement string, or 0 (keep as it is)."""
    ch = chr(cp)
    if cp < 0x80:
        if ch in _ASCII_WS:
            return " "
        # ASCII punctuation is left to steps 6 and 7 (a comma may be a number's separator)
        return None if ch in _ASCII_CONTROLS else 0
    if cp in TOKEN_MARKS:
        return TOKEN_MARKS[cp]
    cat = unicodedata.category(ch)
    if cat in ("Cf", "Cs", "Mn", "Me") or cp in _IGNORABLE:
        return None
    if cat == "Cc":
        return " " if ch.isspace() else None
    if cat[0] == "Z" or cp in _BLANKS:
        return " "
    if cat == "Nd":
        return str(unicodedata.decimal(ch))  # step 4 did it; the table alone is right too
    if cat[0] == "P":
        # Punctuation is a word break, unless it looks like a sign step 7 decides: an arithmetic sign or a
        # dot ("‐" U+2010 in "12 ‐ 7"), an apostrophe ("’" in "Peru’s").
        proto = confusables.get(cp, "")
        return proto if len(proto) == 1 and proto in KEPT_SIGNS else " "
    if cp in confusables:
        proto = confusables[cp]
        # A capital that looks like I has the prototype "l" (TR39 maps I, l, 1 and | to it); after case
        # folding the Latin "I" is "i", so its upper-case look-alikes must be too.
        return "i" if proto == "l" and cat == "Lu" else proto
    if cat[0] == "S" or cat in ("Co", "Cn"):
        # Symbols without a look-alike (currency, arrows, emoji, box drawing; a negated relation such as
        # "≠" is not its base "="), private use and unassigned code points: a word break.
        return " "
    decomposition = unicodedata.decomposition(ch)
    if decomposition and not decomposition.startswith("<"):
        base = "".join(
            c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) not in ("Mn", "Me")
        )
        if base != unicodedata.normalize("NFD", ch):
            return base
    return 0


# Every assigned character outside private use (fold_table lists these); the table decides every other
# code point too (private use and unassigned: a word break).
_SCANNED = ((0, 0x323AF), (0xE0000, 0xE0FFF))


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
        action = _base_action(cp, self._confusables)
        if action == " ":  # a word break (most of the code space: unassigned, private use, symbols)
            self[cp] = " "
            return " "
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


_OWN_SCRIPT: dict[int, bool] = {}  # own_script_letter of each letter asked about (at most every letter)


def own_script_letter(cp: int) -> bool:
    """A letter with no ASCII look-alike in either case (Cyrillic "л", Greek "λ", every CJK letter): a text
    holding one is written in its own script, not a Latin text in disguise."""
    if cp < 0x80:
        return False
    ch = chr(cp)
    if not unicodedata.category(ch).startswith("L"):
        return False
    known = _OWN_SCRIPT.get(cp)
    if known is None:
        _OWN_SCRIPT[cp] = known = _own_script_letter(ch)
    return known


def _own_script_letter(ch: str) -> bool:
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
    # Tokenizer marks first: case folding would make "Ġ" the letter "ġ" before the table sees it.
    if "\u0120" in text or "\u010a" in text or "\u2581" in text:
        text = text.translate(TOKEN_MARKS)
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

_SIGN = re.compile(r"[+\-*/=<>^%.']")


def _keep_sign(text: str, i: int) -> bool:
    c = text[i]
    before = text[i - 1] if i else " "
    before2 = text[i - 2] if i > 1 else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    after2 = text[i + 2] if i + 2 < len(text) else " "
    if c == "'":
        return before.isalpha() and after.isalpha()  # a possessive or a contraction: inside the word
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
    r"[+\-*/=<>^%.']"
    r"(?!(?<=[A-Za-z]')[A-Za-z])"  # the apostrophe inside a word: a letter on both sides
    r"(?!(?<=[0-9]\.)[0-9])"  # the decimal dot: a digit on both sides
    r"(?<![0-9]%)(?<![0-9] %)"  # percent after a number
    rf"(?!(?<![0-9A-Za-z][+\-])(?<=[+\-]){_DIGIT_AFTER})"  # the sign of a number
    rf"(?!(?:(?<=[0-9]{_OP})|(?<=[0-9] {_OP})){_DIGIT_AFTER})"  # an operator between two numbers
)
_ANY_SIGN = re.compile(r"[+\-*/=<>^%.']")


def punctuation(text: str) -> str:
    """ASCII punctuation -> a word break; arithmetic signs and the decimal dot kept beside numbers, the
    apostrophe between two letters."""
    return _punctuation(text, ASCII_TABLE)


# ASCII_TABLE without removing NUL: the texts of a batch stay apart (_punctuation_many).
_KEEP_NUL = {k: v for k, v in ASCII_TABLE.items() if k != 0}


def _punctuation(text: str, table: dict[int, int | None]) -> str:
    text = text.translate(table)
    if _ANY_SIGN.search(text) is None:
        return text
    if text.isascii():
        return _DROPPED_ASCII_SIGN.sub(" ", text)
    return _SIGN.sub(lambda m: m.group(0) if _keep_sign(text, m.start()) else " ", text)


# -- step 8: spaces ---------------------------------------------------------------------------------------


def spaces(text: str) -> str:
    return " ".join(text.split())


def _spaces_many(texts: list[str]) -> list[str]:
    return [" ".join(t.split()) for t in texts]  # spaces inlined: a call per text costs a quarter more


# -- the steps, each with a one-text and a many-texts method --------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step of the pipeline: `one(text)`, and `many(texts)`, which equals [one(t) for t in texts]
    (tests/base/test_normalize.py holds the two equal on generated text). `version` goes up whenever what
    `one` returns changes for some text: the store re-keys then (normalization_version)."""

    name: str
    version: int
    one: Callable[[str], str]
    # The texts at once, where that is faster than a call per text; None: a call per text.
    batch: Callable[[list[str]], list[str]] | None = None

    def many(self, texts: Sequence[str]) -> list[str]:
        texts = list(texts)
        if self.batch is None:
            return [self.one(t) for t in texts]
        return self.batch(texts)


_NUL = "\x00"


def _no_nul(texts: Sequence[str]) -> bool:
    """There are texts and none holds a NUL of its own (an empty batch has nothing to join: joined, it
    would split into one text). One search (memchr, on one-byte text) of the texts joined with nothing
    between them; counting the NULs of the NUL-joined text reads character by character, eight times
    the time on ten thousand ASCII prompts."""
    return len(texts) > 0 and _NUL not in "".join(texts)


def _split_joined(out: str, n: int, sep: str = _NUL) -> list[str]:
    """What a run over n texts joined by `sep` gave, split again; the run must neither make nor remove a
    separator (each caller says why its run reads nothing across one)."""
    parts = out.split(sep)
    if len(parts) != n:  # a step made or removed a separator: a bug in the caller's rule
        raise AssertionError(f"{n} texts joined came back as {len(parts)}")
    return parts


def each_through_joined(texts: Sequence[str], run: Callable[[str], str], sep: str = _NUL) -> list[str] | None:
    """[run(t) for t in texts] in one call of `run` over the texts joined by `sep` (which holds a NUL), for a
    `run` that reads nothing across a NUL; None where a text holds a NUL itself (the caller goes one by
    one)."""
    if not _no_nul(texts):
        return None
    return _split_joined(run(sep.join(texts)), len(texts), sep)


def _through_joined(
    texts: list[str],
    one: Callable[[str], str],
    joinable: Callable[[str], bool],
    sep: str = _NUL,
    joined: Callable[[str], str] | None = None,
) -> list[str]:
    """[one(t) for t in texts], with `joined` (default `one`) run once over the joinable texts joined by
    `sep`: it must read nothing across a separator (each caller says why). Texts holding a NUL are never
    joined."""
    out: list[str | None] = [None] * len(texts)
    joined_at = []
    for i, t in enumerate(texts):
        if _NUL not in t and joinable(t):
            joined_at.append(i)
        else:
            out[i] = one(t)
    if joined_at:
        parts = _split_joined((joined or one)(sep.join(texts[i] for i in joined_at)), len(joined_at), sep)
        for i, part in zip(joined_at, parts):
            out[i] = part
    return out  # type: ignore[return-value]


def _all_or_each(
    texts: list[str],
    one: Callable[[str], str],
    joinable: Callable[[str], bool],
    joined: Callable[[str], str] | None = None,
) -> list[str]:
    """_through_joined, deciding on the joined text first: when every text is joinable, one check does."""
    together = _NUL.join(texts)
    if _no_nul(texts) and joinable(together):
        parts = (joined or one)(together).split(_NUL)
        if len(parts) == len(texts):
            return parts
    return _through_joined(texts, one, joinable, _NUL, joined)


def _joined_run(texts: list[str], at: list[int], run: Callable[[str], str], sep: str = _NUL) -> list[str]:
    """run(texts[i]) for i in `at`, in one call over those texts joined by `sep`: `run` must read nothing
    across a separator (each caller says why). None of the texts may hold a NUL."""
    return _split_joined(run(sep.join(texts[i] for i in at)), len(at), sep)


def _only_where(
    texts: list[str],
    one: Callable[[str], str],
    needs: Callable[[str], bool],
    joined: Callable[[str], str] | None = None,
) -> list[str]:
    """[one(t) for t in texts] for a step that leaves a text `needs` says no to as it is. `needs` is a few
    substring tests and searches that read nothing across a NUL, so one call on the texts joined by NUL
    answers for all of them: nothing to do is found in one pass. Given `joined` (which must read nothing
    across a NUL), the texts are then read in one call; else those that need it one by one."""
    together = _NUL.join(texts)
    if not needs(together):
        return texts
    if joined is not None and _no_nul(texts):
        return _split_joined(joined(together), len(texts))
    out = list(texts)
    for i, t in enumerate(texts):
        if needs(t):
            out[i] = one(t)
    return out


def _may_decode(text: str) -> bool:
    return "&" in text or "\\" in text or "%" in text or "_x" in text or "+" in text


def _may_have_number_forms(text: str) -> bool:
    return ("," in text or "." in text or ":" in text or "'" in text) and _SEPARATED_DIGITS.search(
        text
    ) is not None


# ROLE_MARKER_PATTERN after a line break (kept): starting with a literal, the engine jumps from line to line
# instead of trying every position, as (?m:^...) makes it do.
_ROLE_MARKER_AFTER_BREAK = re.compile(
    "\n" + ROLE_MARKER_PATTERN.removeprefix("(?m:^").removesuffix(")"), re.IGNORECASE
)
_LINE_SEP = "\x00\n"  # ends a text for the markers and starts the next one's first line


def _role_markers_only(joined: str) -> str:
    """strip_markup of texts that hold no "<" or "[" (only role markers can match), joined by _LINE_SEP: no
    marker reads across a NUL."""
    return _ROLE_MARKER_AFTER_BREAK.sub("\n\n", "\n" + joined)[1:]


def _strip_markup_many(texts: list[str]) -> list[str]:
    # A text with "<" or "[" one by one (a tag may span anything); one with only ":" in the joined pass.
    together = _NUL.join(texts)
    if "<" not in together and "[" not in together and _no_nul(texts):
        if ":" not in together:
            return texts
        return _split_joined(_role_markers_only(_LINE_SEP.join(texts)), len(texts), _LINE_SEP)
    tagged = [i for i, t in enumerate(texts) if "<" in t or "[" in t or _NUL in t]
    markers = [i for i, t in enumerate(texts) if ":" in t and _NUL not in t and "<" not in t and "[" not in t]
    out = list(texts)
    for i in tagged:
        out[i] = strip_markup(texts[i])
    if markers:
        for i, part in zip(markers, _joined_run(texts, markers, _role_markers_only, _LINE_SEP)):
            out[i] = part
    return out


def _fold_many(texts: list[str]) -> list[str]:
    # ASCII texts are lower-cased together (a NUL is ASCII and lower-cases to itself); others one by one.
    return _all_or_each(texts, fold, str.isascii)


def _punctuation_many(texts: list[str]) -> list[str]:
    # On ASCII the signs' pattern reads a NUL as neither digit, letter nor space: no rule reads across it.
    return _all_or_each(texts, punctuation, str.isascii, lambda t: _punctuation(t, _KEEP_NUL))


def _ascii_as_is(texts: list[str], one: Callable[[str], str]) -> list[str]:
    """For a step that leaves ASCII as it is: the texts as they are when all are ASCII, else one by one
    (NFKC and the digits table read one character at a time)."""
    return texts if _NUL.join(texts).isascii() else [one(t) for t in texts]


STEPS: tuple[Step, ...] = (
    # 2: URL encoding
    Step("decode_escapes", 2, decode_escapes, lambda ts: _only_where(ts, decode_escapes, _may_decode)),
    Step("strip_markup", 1, strip_markup, _strip_markup_many),
    Step("nfkc", 1, nfkc, lambda ts: _ascii_as_is(ts, nfkc)),
    Step("ascii_digits", 1, ascii_digits, lambda ts: _ascii_as_is(ts, ascii_digits)),
    # 2: tokenizer marks, symbols, private-use and unassigned code points as word breaks; "’" an apostrophe
    Step("fold", 2, fold, _fold_many),
    # every pattern of step 6 reads a digit, a separator and a digit: none reads across a NUL
    Step(
        "number_forms",
        1,
        number_forms,
        lambda ts: _only_where(ts, number_forms, _may_have_number_forms, number_forms),
    ),
    # 2: the apostrophe between two letters kept
    Step("punctuation", 2, punctuation, _punctuation_many),
    Step("spaces", 1, spaces, _spaces_many),
)
# The match-key text (compact_text) has a version of its own: 2 drops apostrophes.
COMPACT_VERSION = 2


def normalization_version() -> str:
    """Every step's name and version, the match-key text's version and the Unicode data's version: what made
    a stored key. The store keeps it beside its keys and re-keys when this changes."""
    steps = " ".join(f"{s.name}/{s.version}" for s in STEPS)
    return f"{steps} compact/{COMPACT_VERSION} unicode/{unicodedata.unidata_version}"


def word_text(text: str) -> str:
    """The normalized words of one text: every step of STEPS in order (see the module docstring)."""
    for step in STEPS:
        text = step.one(text)
    return text


def word_texts(texts: Sequence[str]) -> list[str]:
    """[word_text(t) for t in texts]: each step's many-texts method in turn."""
    out = list(texts)
    for step in STEPS:
        out = step.many(out)
    return out


# -- every character decided ---------------------------------------------------------------------------------

CHAR_CLASSES = ("letter", "digit", "mark", "break", "removed")


def _kept_class(ch: str) -> str | None:
    """The class of one character the pipeline keeps inside a word, or None (it should not be kept)."""
    if ch.isascii():
        if ch.isalpha():
            return "letter"
        if ch.isdigit():
            return "digit"
        return "mark" if ch in KEPT_SIGNS else None
    cat = unicodedata.category(ch)
    if cat[0] == "L" or cat in ("Nl", "No"):
        return "letter"  # a letter, or a number character of its own script (Roman "ↀ", Tamil "௰")
    return "mark" if cat[0] == "M" else None  # a spacing mark of Indic scripts and others


def _class_of(out: str) -> str | None:
    """char_class from the word text of "x" + the character + "y"."""
    if out == "xy":
        return "removed"
    if out == "x y":
        return "break"
    if not (out.startswith("x") and out.endswith("y")):
        return None
    kept = [_kept_class(c) for c in out[1:-1] if c != " "]
    if not kept or None in kept:
        return None
    if "letter" in kept:
        return "letter"
    return "digit" if "digit" in kept else "mark"


def char_class(ch: str) -> str | None:
    """What the pipeline makes of one character between two letters ("x" and "y"): "removed" (nothing is
    left), "break" (a word break), or what it leaves inside the word: "letter" (letters, or digits with
    letters: "㎒" is "mhz"), "digit" (ASCII digits, with the signs kept between them: "½" is "1/2"), "mark"
    (a combining mark that stays, an apostrophe). The signs kept between numbers are word breaks between
    letters. None: the character is left as something else (a symbol, a control, punctuation), which
    tests/base/test_normalize.py checks no code point is."""
    return _class_of(word_text(f"x{ch}y"))


def char_classes(chars: Sequence[str]) -> list[str | None]:
    """[char_class(c) for c in chars], normalized in one batch."""
    return [_class_of(out) for out in word_texts([f"x{c}y" for c in chars])]


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
    return sentences_of([text])[0]


def sentences_of(texts: Sequence[str], *, polite: bool = True) -> list[list[str]]:
    """[sentences(t) for t in texts], every sentence of every text normalized in one batch (word_texts);
    polite=False leaves out the readings without greetings and thanks."""
    pieces = [_SENTENCE_END.split(strip_markup(decode_escapes(t))) for t in texts]
    words = word_texts([p for ps in pieces for p in ps])
    out, at = [], 0
    for ps in pieces:
        found = []
        for w in words[at : at + len(ps)]:
            ws = w.split()
            if not ws:
                continue
            found.append(w)
            if not polite:
                continue
            lo, hi = 0, len(ws)
            while lo < hi and ws[lo] in POLITE_WORDS:
                lo += 1
            while hi > lo and ws[hi - 1] in POLITE_WORDS:
                hi -= 1
            if 0 < hi - lo < len(ws):
                found.append(" ".join(ws[lo:hi]))
        out.append(found)
        at += len(ps)
    return out


def compact_text(text: str) -> str:
    """A word text (or turns of them joined by TURN_SEP) without spaces, turn breaks or apostrophes: the
    match-key text ("Peru's" and "Perus" are one key; as words they stay apart)."""
    return text.replace(" ", "").replace(TURN_SEP, "").replace("'", "")


# Plain ASCII text holding one of these reads differently through word_text than through the lm-eval style
# reading of pairstore.holdout.scan (ASCII lower case, punctuation to spaces): escapes and markup. Written
# for RE2 too (the scan runs it over Arrow arrays).
NEEDS_WORD_TEXT_PATTERN = r"&[#a-z]|\\[unrtbf\"'/\\]|_x[0-9a-f]{4}_|%[0-9a-f]{2}|" + MARKUP_PATTERN
_NEEDS_WORD_TEXT = re.compile(NEEDS_WORD_TEXT_PATTERN, re.IGNORECASE)


def needs_fold(text: str) -> bool:
    """True when the lm-eval style reading (ASCII lower case, punctuation to spaces) is not enough: non-ASCII
    or control characters, escapes, markup. Such text goes through word_text first."""
    if not text.isascii() or any(c in text for c in _ASCII_CONTROLS):
        return True
    return _NEEDS_WORD_TEXT.search(text) is not None
