"""Normalization for miners.verify: an answer span -> one canonical string, then its structure.

    from miners.verify.normalize import normalize, structure
    normalize("\\\\$1,\\\\!250.00", "gsm8k")            # -> ("1250.00", False)
    normalize("x \\\\geq 5", "math")                     # -> ("x>=5", False)
    structure("(5,2),(7,2)")                          # -> ("list", ("(5,2)", "(7,2)"))

normalize() is pure string work (no evaluation): unicode math, \\\\text{} and friends unwrapped,
\\\\left/\\\\right and spacing dropped, \\\\dfrac/\\\\tfrac, thousands separators (1,000 1{,}000
1\\\\,000 11,\\\\!111 and "1 000"), currency (signs, words, R28), degrees, percent ("%", "percent",
"pct"), relations (\\\\geq -> >=, \\\\neq -> !=), trailing units ("18 apples", "5 cm^2", "4 in/s"),
\\\\frac12 and \\\\sqrt3 shorthands, set braces kept apart from groups, a plain {...} group around the
whole answer or (...)/[...] around a lone matrix removed, base subscripts 4210_{7} -> 4210_7.
structure() reads the canonical string as a scalar, set, tuple or interval, bare list (separated by
",", ";", "and", "or"), union, matrix or a chain of relations.
"""

from __future__ import annotations

import re
from functools import lru_cache

from miners.verify.brackets import closing_index, depth_zero, encloses
from miners.verify.parse import CACHE_SIZE

# Digits of other scripts and full-width punctuation, one character for one (so positions are kept
# where a text is read): ０-９, Arabic-Indic, Devanagari, Bengali, Thai, ...; the Arabic decimal and
# thousands marks; full-width stops and commas.
_DIGIT_BLOCKS = (0xFF10, 0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50, 0x0AE6, 0x0BE6, 0x1040, 0x17E0)
ASCII_FORMS_TABLE = {
    **{chr(block + k): str(k) for block in _DIGIT_BLOCKS for k in range(10)},
    "．": ".",
    "，": ",",
    "％": "%",
    "٪": "%",
    "－": "-",
    "／": "/",
    "٫": ".",
    "٬": ",",
}
ASCII_FORMS = str.maketrans(ASCII_FORMS_TABLE)
_ASCII_FORMS_RE = re.compile("[" + "".join(re.escape(c) for c in ASCII_FORMS_TABLE) + "]")


def ascii_forms(text: str) -> str:
    """text.translate(ASCII_FORMS), the characters it maps replaced where they stand: translate looks
    up every character of a long output in the table, which was ten times slower."""
    if text.isascii():
        return text
    return _ASCII_FORMS_RE.sub(lambda m: ASCII_FORMS_TABLE[m.group()], text)


# How a number is written: digits grouped by threes with one separator throughout (a comma, a dot,
# an apostrophe, a fixed-width space), then a decimal part; a plain space groups only before a
# decimal comma (elsewhere "5 100" may be two numbers). "1.234" and "2,500" match, and are read both
# ways where no language says which (miners.verify.fast.other_grouping).
NUMERAL = (
    r"\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?"
    r"|\d{1,3}(?:\.\d{3})+(?!\d)(?:,\d+)?"
    r"|\d{1,3}(?:[\u00a0\u2009\u202f]\d{3})+(?!\d)(?:[,.]\d+)?"
    r"|\d{1,3}(?:['’]\d{3})+(?!\d)(?:\.\d+)?"
    r"|\d{1,3}(?: \d{3})+(?!\d),\d+"
    r"|\d+(?:[.,]\d+)?"
)

_UNICODE = str.maketrans(
    {
        "−": "-",
        "–": "-",
        "—": "-",
        "×": "\\times ",
        "÷": "/",
        "·": "\\cdot ",
        "⋅": "\\cdot ",
        "√": "\\sqrt",
        "π": "\\pi ",
        "∞": "\\infty ",
        "°": "^\\circ",
        "℃": "^\\circ C",
        "℉": "^\\circ F",
        "²": "^2",
        "³": "^3",
        "≥": ">=",
        "≤": "<=",
        "≠": "!=",
        "∈": "\\in ",
        "∪": "\\cup ",
        "≈": "\\approx ",
        "\u00a0": " ",
        "\u2009": " ",
        "\u202f": " ",
        "，": ",",
        "：": ":",
        "％": "%",
        "€": "",
        "£": "",
        "¥": "",
        "₹": "",
        "₦": "",
        "₩": "",
        "₱": "",
        "₽": "",
        "₴": "",
        "₺": "",
        "₫": "",
        "元": "",
        "円": "",
        "원": "",
        **{k: v for k, v in ASCII_FORMS_TABLE.items() if k not in "，％"},
    }
)
_TEXT_CMD_RE = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname|textnormal|mathit|mathsf)\s*\{"
)
_DROP_RE = re.compile(
    r"\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])|\\(?:displaystyle|!|,|;|:|quad|qquad)(?![a-zA-Z])|\\ |~"
)
_RELATIONS = (
    ("\\geqslant", ">="),
    ("\\leqslant", "<="),
    ("\\geq", ">="),
    ("\\leq", "<="),
    ("\\ge", ">="),
    ("\\le", "<="),
    ("\\neq", "!="),
    ("\\ne", "!="),
    ("\\lt", "<"),
    ("\\gt", ">"),
)
_RELATION_RE = re.compile("|".join(re.escape(a) + r"(?![a-zA-Z])" for a, _b in _RELATIONS))
_RELATION_MAP = dict(_RELATIONS)
_DEGREE = r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|\bdegrees?\b"
_DEGREE_RE = re.compile(_DEGREE)
# a degree mark with the scale after it ("-3°C", "100^\circ F", "20\,^{\circ}\mathrm{C}", "5 degrees
# Celsius"): a unit at an answer's end, scale and all
_DEGREE_SCALE = (
    r"(?:" + _DEGREE + r")(?:\s*\{?\s*(?:[CFK]|(?i:celsius|fahrenheit|kelvin))\s*\}?(?![a-zA-Z]))?"
)
_DEGREE_SCALE_RE = re.compile(_DEGREE_SCALE)
_TRAILING_DEGREE_RE = re.compile(r"(?:" + _DEGREE_SCALE + r")[\s.}]*$")
_THOUSANDS_RE = re.compile(r"(?<![\d.])[1-9]\d{0,2}(?:(?:,|\{,\}|\\,)\d{3})+(?![\d])")
_SPACE_THOUSANDS_RE = re.compile(r"-?[1-9]\d{0,2}(?: \d{3})+(?:\.\d+)?")
_PERCENT_RE = re.compile(r"\\?%|\b(?:percent(?:age)?|pct)\b")
_UNIT_WORDS = (
    # (?![a-zA-Z]) after each word: a word cannot be split into several "units", which made the
    # repetition below backtrack exponentially on long text answers.
    r"(?:square|sq\.?|cubic)?\s*(?:[^\W\d_]{2,}(?![^\W\d_])\.?)(?:\s*\^\s*\{?[23]\}?|\s*(?:squared|cubed))?"
    r"|(?:m|g|s|h|l|L|K|V|W|J|N|C|F)(?![a-zA-Z])(?:\s*\^\s*\{?[23]\}?)?"
)
# (each unit taken whole, atomically: a unit matched at its longest never leaves less for the units
# after it, so the matches are those of the plain pattern, which tried every split of the spaces
# between units at every place -- a third of normalize. tests/verify/test_verify_speed.py compares.)
_UNIT = r"(?:" + _UNIT_WORDS + r")(?:\s*/\s*(?:" + _UNIT_WORDS + r"))?"  # "km", "km / h", "sq. ft"
TRAILING_UNITS = r"(?<=[\d}).\s])\s*(?:" + _UNIT + r"\s*){1,4}$"
_TRAILING_UNITS_RE = re.compile(r"(?<=[\d}).\s])\s*+(?>" + _UNIT + r"\s*+){1,4}$")
_KEEP_WORDS = frozenset(
    {"pi", "infty", "infinity", "sqrt", "and", "or", "i", "e", "x", "y", "z", "in", "cup"}
)
_CURRENCY_RE = re.compile(r"\\\$|\$|\b(?:USD|usd|dollars?|cents?|rs\.?|inr|eur|euros?|yuan)\b")
# a currency written as letters glued to a whole amount: R28 (rand), Rs.500, Rp 5000, RM12.50
_CURRENCY_PREFIX_RE = re.compile(r"^(?:R|Rs\.?|Rp|RM)\s*(?=\d[\d,]*(?:\.\d+)?$)")
_MATRIX_RE = re.compile(
    r"^\\begin\{([pbvB]?matrix|array)\}(?:\{[^}]*\})?((?:(?!\\begin\{|\\end\{).)*)\\end\{\1\}$", re.S
)
_LONE_MATRIX_RE = re.compile(r"^[(\[](\\begin\{([pbB]?matrix|array)\}.*\\end\{\2\})[)\]]$", re.S)


# a numeral in another base by its prefix ("0x1F", "0b1010", "0o17")
_BASE_PREFIX_RE = re.compile(r"(?<![\w.])0(?:([xX])([0-9a-fA-F]+)|([bB])([01]+)|([oO])([0-7]+))(?![\w.])")
# a numeral whose separators can be read one way only: groups of three by dots or spaces before a
# decimal comma ("1.234,5", "1 234,56"), or by apostrophes ("1'234", "1’234.5")
_LOCALE_NUMERAL_RE = re.compile(
    r"(?<![\d.,])\d{1,3}(?:[. ]\d{3})+,\d+(?![\d,.])|(?<![\d.,'’])\d{1,3}(?:['’]\d{3})+(?:\.\d+)?(?![\d'’])"
)


def _base_ten(m: re.Match) -> str:
    digits = m.group(2) or m.group(4) or m.group(6)
    base = 16 if m.group(1) else 2 if m.group(3) else 8
    return str(int(digits, base))


def _plain_numeral(m: re.Match) -> str:
    numeral = m.group(0)
    if "," in numeral:
        return numeral.replace(".", "").replace(" ", "").replace(",", ".")
    return numeral.replace("'", "").replace("’", "")


def unwrap_text_commands(s: str) -> str:
    while True:
        m = _TEXT_CMD_RE.search(s)
        if not m:
            return s
        end = closing_index(s, m.end() - 1)
        if end < 0:
            return s[: m.start()] + s[m.end() :]
        s = s[: m.start()] + " " + s[m.end() : end - 1] + " " + s[end:]


def _encloses_all(s: str, open_: str, close: str) -> bool:
    """s[0] opens a group that closes exactly at s[-1]."""
    return encloses(s, open_, close)


# A function name written without its backslash ("sec x", "sin(x)", "ln^2 x"), where a name stands
# alone and an argument follows: read as the function (a bare "sec" after a number is a unit)
_BARE_FUNCTION_RE = re.compile(
    r"(?<![\\A-Za-z])(arcsin|arccos|arctan|sinh|cosh|tanh|sin|cos|tan|sec|csc|cot|ln|log|exp)"
    r"(?=\s*[(^]|\s+[A-Za-z\\])"
)


_BANG_RE = re.compile(r"(?<=\d)(,?)\\!\s*(?=\d)")
_BRACED_COMMA_RE = re.compile(r"(?<=\d)\s?\{\s*,\s*\}\s*(?=\d{3}(?!\d))")
_SPACED_THOUSANDS_RE = re.compile(r"(?<=\d)(?:\\,|\\ )(?=\d{3}(?!\d))")
_TIMES_X_RE = re.compile(r"(?<=[\d)])\s+x\s+(?=[\d(])")
_FRAC_KIND_RE = re.compile(r"\\[dtc]frac(?![a-zA-Z])")
_SPACES_RE = re.compile(r"\s+")
_DECIMALS_RE = re.compile(r"\.\d+$")
_SPACED_SIGN_RE = re.compile(r"\s*([=+\-*/^_(),\[\]{}<>!:;])\s*")
_SPACED_COMMAND_RE = re.compile(r"\s*(\\(?:times|cdot|div|pm|mp|in|cup|cap|approx)(?![a-zA-Z]))\s*")
_FRAC_DIGITS_RE = re.compile(r"\\frac\s*(\d)\s*(\d)")
_FRAC_DIGIT_RE = re.compile(r"\\frac\s*(\d)(?=\{)")
_FRAC_DIGIT_DENOMINATOR_RE = re.compile(r"\\frac(\{[^{}]*\})(\d)")
_SQRT_DIGIT_RE = re.compile(r"\\sqrt\s*(\d)")
_CONSTANT_RE = re.compile(r"(?<![a-zA-Z\\])(pi|sqrt|infty|infinity)(?![a-zA-Z])")
_BASE_SUBSCRIPT_RE = re.compile(r"(?<=\d)_\{(\d+)\}")
_VARIABLE_SUBSCRIPT_RE = re.compile(r"(?<![a-zA-Z\\])([a-zA-Z])_\{([a-zA-Z0-9])\}")
# an integer or a decimal in ASCII digits: every step below leaves it as it is (most answers and golds;
# tests/verify/test_verify_speed.py holds the two equal)
_PLAIN_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


@lru_cache(maxsize=CACHE_SIZE)
def normalize(ans: str, kind: str) -> tuple[str, bool]:
    """(canonical string, is_percent). Pure string work; no evaluation."""
    if _PLAIN_RE.fullmatch(ans):
        return ans, False
    s = ans.translate(_UNICODE)
    s = unwrap_text_commands(s)
    if "0" in s:  # "0x1F", "0b1010", "0o17": the number in base ten
        s = _BASE_PREFIX_RE.sub(_base_ten, s)
    if "{" in s:  # 2{,}6 and 5.105{,}1: a decimal comma in LaTeX (before groups of three it groups)
        s = re.sub(r"(?<=\d)\{\s*,\s*\}(?=\d{1,2}(?!\d)|\d{4,})", ",", s)
    if "," in s or "'" in s or "’" in s:
        s = _LOCALE_NUMERAL_RE.sub(_plain_numeral, s)
    if kind == "math":
        s = _BARE_FUNCTION_RE.sub(r"\\\1", s)  # "(sec x)^2" is (\sec x)^2, not s*e*c*x squared
    # (each step below that needs a literal -- a backslash, a brace, "frac" -- runs only where the
    # answer holds it: the same string, without a scan per step of every answer)
    if "\\!" in s:
        s = _BANG_RE.sub(r"\1", s)  # 11,\! 111 and 1\!000
    if "{" in s:
        s = _BRACED_COMMA_RE.sub(",", s)  # 14{,}916 and 14 {, }916
    if "\\" in s:
        s = _SPACED_THOUSANDS_RE.sub("", s)  # 1\,000
    s = s.replace("\\!", "")
    s = s.replace("\\\\", "\x03")  # matrix row separator, before "\ " (a space) is dropped
    s = _DROP_RE.sub(" ", s)
    s = _RELATION_RE.sub(lambda m: _RELATION_MAP[m.group(0)], s)
    if "x" in s:
        s = _TIMES_X_RE.sub(r" \\times ", s)  # "50 x 2" is a product
    if "frac" in s:
        s = _FRAC_KIND_RE.sub(r"\\frac", s)
    s = _CURRENCY_RE.sub(" ", s)
    s = _CURRENCY_PREFIX_RE.sub("", s.strip())
    # a degree mark ends an answer ("30^\circ", "45 degrees"); inside an expression
    # (\sin(90^\circ - x)) it changes the value, and is left for the symbolic back end
    if _TRAILING_DEGREE_RE.search(s) and len(_DEGREE_RE.findall(s)) == 1:
        s = _DEGREE_SCALE_RE.sub(" ", s)
    else:  # degrees inside an expression: in radians, so that \sin(90^\circ - x) is \cos x
        s = _DEGREE_RE.sub(r"\\cdot\\frac{\\pi}{180}", s)
    percent = False
    if _PERCENT_RE.search(s):
        percent = True
        s = _PERCENT_RE.sub(" ", s)
    s = s.replace("\\{", "\x01").replace("\\}", "\x02")  # keep set braces apart from groups
    s = _SPACES_RE.sub(" ", s).strip().strip("\x03").strip().rstrip("\\").strip()
    if kind == "gsm8k" or _THOUSANDS_RE.fullmatch(_DECIMALS_RE.sub("", s.lstrip("-"))):
        s = _THOUSANDS_RE.sub(lambda m: re.sub(r"\{,\}|\\,|,", "", m.group(0)), s)
    if _SPACE_THOUSANDS_RE.fullmatch(s):
        s = s.replace(" ", "")
    s = s.rstrip(" .")
    # trailing unit words ("18 apples", "5 cm^2", "12 km/h"), never a lone variable letter
    m = _TRAILING_UNITS_RE.search(s)
    if m and m.start() > 0:
        words = re.findall(r"[^\W\d_]+", m.group(0))
        # "in" is kept for "x in S", but in a rate ("4 in/s", "30 mi/h") every word is a unit
        keep = _KEEP_WORDS - {"in"} if "/" in m.group(0) else _KEEP_WORDS
        if words and not any(w in keep for w in words) and re.search(r"[\d})]$", s[: m.start()].rstrip()):
            s = s[: m.start()].strip()
            if _SPACE_THOUSANDS_RE.fullmatch(s):  # "9 302 руб." once the unit is gone
                s = s.replace(" ", "")
    s = _SPACED_SIGN_RE.sub(r"\1", s)
    if "\\" in s:
        s = _SPACED_COMMAND_RE.sub(r"\1", s)
    s = _SPACES_RE.sub(" ", s).strip()
    if "frac" in s:
        s = _FRAC_DIGITS_RE.sub(r"\\frac{\1}{\2}", s)
        s = _FRAC_DIGIT_RE.sub(r"\\frac{\1}", s)
        s = _FRAC_DIGIT_DENOMINATOR_RE.sub(r"\\frac\1{\2}", s)
    if "sqrt" in s:
        s = _SQRT_DIGIT_RE.sub(r"\\sqrt{\1}", s)
    if "pi" in s or "sqrt" in s or "inf" in s:
        s = _CONSTANT_RE.sub(lambda m: "\\" + m.group(1), s)
    s = s.replace("\\infinity", "\\infty").replace("^{\\prime}", "'")
    if "_{" in s:
        s = _BASE_SUBSCRIPT_RE.sub(r"_\1", s)  # 4210_{7} -> 4210_7
        s = _VARIABLE_SUBSCRIPT_RE.sub(r"\1_\2", s)  # v_{0} -> v_0
    if _encloses_all(s, "{", "}") and "\x03" not in s:
        s = s[1:-1].strip()  # "{1, 2, 3}" written without \{ is a plain group, not a set
    m = _LONE_MATRIX_RE.match(s)
    if m:
        s = m.group(1)
    if s.startswith("+") and len(s) > 1:
        s = s[1:]
    return s, percent


# ------------------------------------------------------------------------------------- structure

_OPEN = {"(": ")", "[": "]", "\x01": "\x02"}
_REL_OPS = ("<=", ">=", "!=", "<", ">")


# words that join the values of a list ("1 and 3", "1 和 3"); one inside a word ("总和") joins nothing
_CONJUNCTIONS = ("and", "or", "和", "与", "與", "及", "或")


def split_top(s: str, seps: tuple[str, ...] = (",",), words: bool = False) -> list[str]:
    """s split at depth 0 on any of seps (and on the words "and"/"or", "和"/"或", when words): from the
    left, each place splitting at the first of seps that starts there, else the first conjunction that
    stands as a word there; a place inside the last split's separator splits nowhere."""
    # the places where a separator or a conjunction starts, found with str.find (a test per character
    # of every answer was a tenth of the comparison)
    hits: dict[int, str] = {}
    for sep in seps:
        at = s.find(sep)
        while at >= 0:
            hits.setdefault(at, sep)
            at = s.find(sep, at + 1)
    if words:
        n = len(s)
        for w in _CONJUNCTIONS:
            at = s.find(w)
            while at >= 0:
                if (
                    at not in hits
                    and (at == 0 or not (s[at - 1].isalpha() or s[at - 1] == "\\"))
                    and (at + len(w) == n or not s[at + len(w)].islower())
                ):
                    hits[at] = w
                at = s.find(w, at + 1)
    if not hits:
        return [s]  # nothing to split at (most answers)
    outside = depth_zero(s)
    parts, start = [], 0
    for at in sorted(hits):
        if at < start or not outside[at]:
            continue
        parts.append(s[start:at])
        start = at + len(hits[at])
    parts.append(s[start:])
    return parts


def _encloses(s: str) -> bool:
    """s[0] opens a bracket that closes exactly at s[-1] (any bracket type: intervals mix them)."""
    return s[:1] in _OPEN and s[-1:] in ")]\x02" and encloses(s)


def relation_parts(s: str) -> tuple[list[str], list[str]] | None:
    """(sides, operators) of a chain of <, >, <=, >=, != at depth 0, or None when there is none."""
    if "<" not in s and ">" not in s and "!" not in s:
        return None  # no operator at any depth (most answers)
    outside = depth_zero(s)
    sides, ops, start = [], [], 0
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if outside[i] and c in "<>!":
            op = s[i : i + 2] if s[i : i + 2] in _REL_OPS else (c if c in "<>" else None)
            if op is not None:
                sides.append(s[start:i])
                ops.append(op)
                start = i + len(op)
                i += len(op)
                continue
        i += 1
    if not ops:
        return None
    sides.append(s[start:])
    return [p.strip() for p in sides], ops


_LIST_CONJUNCTION_RE = re.compile(r",\s*(and|or)\b")


@lru_cache(maxsize=CACHE_SIZE)
def structure(s: str):
    """('scalar', s) | ('set', items) | ('seq', open, close, items) | ('list', items) |
    ('union', parts) | ('matrix', rows)."""
    m = _MATRIX_RE.match(s)
    if m:
        rows = [r for r in m.group(2).split("\x03") if r.strip()]
        return ("matrix", tuple(tuple(c.strip() for c in r.split("&")) for r in rows))
    if s[:1] == "[" and s[-1:] == "]" and "\x03" in s and encloses(s, "[", "]"):
        # a matrix in bracket rows, "[-3,2\\5/2,-3/2]": rows split by \\, entries by commas
        rows = [r for r in s[1:-1].split("\x03") if r.strip()]
        return ("matrix", tuple(tuple(c.strip() for c in split_top(r)) for r in rows))
    if "\\cup" in s:
        parts = split_top(s, ("\\cup",))
        if len(parts) > 1:
            return ("union", tuple(p.strip() for p in parts))
    if _encloses(s):
        inner = s[1:-1]
        sep = ("," if "," in inner else ";",)
        items = tuple(p.strip() for p in split_top(inner, sep))
        if s[0] == "\x01":
            return ("set", items)
        if len(items) > 1:
            return ("seq", s[0], s[-1], items)
        return ("scalar", s)
    if ";" in s:
        groups = [p.strip() for p in split_top(s, (";",)) if p.strip()]
        if len(groups) > 1:
            return ("list", tuple(groups))
    s = _LIST_CONJUNCTION_RE.sub(",", s)  # "19, 46, and 82" is one list
    groups = [p.strip() for p in split_top(s, (), words=True) if p.strip()]
    sizes = {len(split_top(g)) for g in groups}
    if len(groups) > 1 and len(sizes) == 1 and sizes != {1}:
        return ("list", tuple(groups))  # "p=5,q=2 and p=7,q=2": the words separate groups
    listed = [p.strip() for p in split_top(s, (",",), words=True)]
    listed = [p for p in listed if p]
    if len(listed) > 1:
        return ("list", tuple(listed))
    return ("scalar", listed[0] if listed else s)
