"""Text normalization behind the match key: what a disguise changes, this takes away.

    from pairstore.holdout.normalize import word_text, compact_text
    word_text("Wh\u200bat is the саpital of Peru??")     # -> "what is the capital of peru"
    compact_text(word_text("What is 12 + 7?"))            # -> "whatis12+7"

`word_text(text)`, in order:

1. Unicode NFKC (fullwidth, ligatures, compatibility forms) and case folding;
2. one pass of a translation table (`fold_table`), per character:
   - removed: invisible and format characters (category Cf: zero-width space, joiners, word joiner,
     soft hyphen, BOM, bidi controls, ...; the other default-ignorable code points: variation
     selectors, the combining grapheme joiner, Hangul fillers, tag characters), control characters,
     lone surrogates, combining marks (so a letter with an accent, or a pile of marks, is its base
     letter), and punctuation;
   - to a space: every kind of whitespace;
   - to its prototype: every non-ASCII character that Unicode's confusables data (UTS #39, shipped in
     pairstore/data/confusables.tsv) says looks like another, e.g. Cyrillic "а" -> "a", Greek "ο" ->
     "o". ASCII itself is never remapped: 0/O, 1/l and rn/m are different text there, and digits carry
     the question;
3. the arithmetic signs `+ - * / = < > ^ %` are kept where a digit stands next to them (across at most
   one space: "12 + 7", "-5", "20%") and removed elsewhere ("**bold**", "well-known"); a dot is kept
   only between two digits ("3.5");
4. whitespace collapsed to single spaces, trimmed.

`compact_text` drops the spaces too: the text behind the match key, so spacing and punctuation do not
matter ("What is the capital, of Peru!!" and "what is the capital of peru" have one key). The same
question with other numbers, another operator or another word keeps a key of its own.

Plain ASCII text takes a fast path (a small table, no Unicode work); the full table is built once, the
first time non-ASCII text is normalized (about half a second).
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from importlib import resources

TURN_SEP = "\x1e"  # separates turns inside a match text; whitespace to every normalizer
OPERATORS = "+-*/=<>^%"
_ASCII_WS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_ASCII_CONTROLS = "".join(chr(c) for c in [*range(0, 9), *range(0x0E, 0x1C), 0x7F])
# ASCII punctuation that is always removed: everything but the operators and the dot (step 3 decides those).
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

# Step 3: an operator with no digit beside it (one space allowed), a dot not between two digits.
_NOT_NUMERIC = re.compile(r"(?<![0-9])\.|\.(?![0-9])|(?<![0-9])(?<![0-9] )[-+*/=<>^%](?! ?[0-9])")

ASCII_TABLE = str.maketrans(_ASCII_WS, " " * len(_ASCII_WS), _ASCII_CONTROLS + _ASCII_PUNCT)


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
        return None if ch in _ASCII_CONTROLS or ch in _ASCII_PUNCT else 0
    cat = unicodedata.category(ch)
    if cat in ("Cf", "Cs", "Mn", "Me") or any(lo <= cp <= hi for lo, hi in _IGNORABLE_RANGES):
        return None
    if cat == "Cc":
        return " " if ch.isspace() else None
    if cat[0] == "Z" or cp in _BLANKS:
        return " "
    if cat[0] == "P":
        # Punctuation goes, unless it looks like an arithmetic sign or a dot ("‐" U+2010 in "12 ‐ 7").
        proto = confusables.get(cp, "")
        return proto if len(proto) == 1 and proto in OPERATORS + "." else None
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


@functools.cache
def fold_table() -> dict[int, str | None]:
    """Step 2's translation table (only the code points it changes), each value already final."""
    confusables = _load_confusables()
    actions: dict[int, str | int | None] = {}
    for lo, hi in _SCANNED:
        for cp in range(lo, hi + 1):
            action = _base_action(cp, confusables)
            if action != 0:
                actions[cp] = action
    resolved: dict[int, str | None] = {}

    def resolve(cp: int, visiting: frozenset = frozenset()) -> str | None:
        """The final replacement of one code point: its action, folded, each character resolved in turn."""
        if cp in resolved:
            return resolved[cp]
        action = actions.get(cp, 0)
        if action == 0 or cp in visiting:
            return chr(cp)
        if action is None:
            value = None
        else:
            assert isinstance(action, str)
            parts = (
                resolve(ord(c), visiting | {cp}) if ord(c) != cp else c
                for c in unicodedata.normalize("NFKC", action).casefold()
            )
            value = "".join(p for p in parts if p is not None)
        resolved[cp] = value
        return value

    for cp in actions:
        resolve(cp)
    return {cp: v for cp, v in resolved.items() if v != chr(cp)}


def fold(text: str) -> str:
    """Steps 1 and 2: NFKC, case folding, the translation table."""
    if text.isascii():
        return text.lower().translate(ASCII_TABLE)
    # The table before case folding (a capital look-alike has the prototype of its own shape: Greek "Η" is
    # "H", its small "η" is "n"), and again after it for what folding made.
    table = fold_table()
    return unicodedata.normalize("NFKC", text).translate(table).casefold().translate(table)


def word_text(text: str) -> str:
    """The normalized words of one text (steps 1-4, see the module docstring)."""
    t = " ".join(fold(text).split())
    if any(c in t for c in OPERATORS + "."):
        t = " ".join(_NOT_NUMERIC.sub("", t).split())
    return t


def compact_text(text: str) -> str:
    """A word text (or turns of them joined by TURN_SEP) without spaces or turn breaks: the match-key text."""
    return text.replace(" ", "").replace(TURN_SEP, "")


def needs_fold(text: str) -> bool:
    """True when the lm-eval style normalization alone (ASCII lower case, punctuation removed) is not enough:
    non-ASCII characters or control characters. Such text goes through word_text before n-gram matching."""
    return not text.isascii() or any(c in text for c in _ASCII_CONTROLS)
