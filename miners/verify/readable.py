"""Whether math-verify read a span as mathematics: the condition for its "unequal" to be a verdict.

    from math_verify import parse
    unread_reason(parse("$\\\\beginpmatrix1/5\\\\\\\\-18/5\\\\endpmatrix$"), "\\\\beginpmatrix1/5...")
    # -> "no mathematical object": math-verify kept only the raw string
    unread_reason(parse("$\\\\begin{pmatrix} 1/5 \\\\\\\\ -18/5 \\\\end{pmatrix}$"), "...")   # -> None: read

What math-verify's `parse` reports (math_verify/parser.py): a list holding the parsed object (a sympy
expression, relation, set, interval or matrix) followed by the extracted string it came from; where
its LaTeX and expression parsers both fail on every match, only that string is left (the
"first_match" fallback), and an empty list where nothing matched at all. Its `verify` then compares
every element with every other, the raw strings included: two spans it could not read compare as two
different strings, "unequal". So an "unequal" says something only where both sides hold a parsed
object, and where that object is the whole span and not what was left of it.

A reading is refused (the reason is returned) when:
  - the parse holds no mathematical object (nothing matched, or the raw string alone);
  - the span has signs that any reading of it is a guess: braces or brackets that do not balance
    ("\\\\frac{1}{2", "1/2)" read as 1), an environment name glued to its contents
    ("\\\\beginpmatrix1\\\\\\\\2\\\\endpmatrix", a file that lost its braces), a fraction glued to
    three or more digits or a root to two ("\\\\frac125" is 1/25, 12/5 or 5/2 depending on where the
    braces were, "\\\\sqrt25" 5 or 5 sqrt(2); "\\\\frac12", "\\\\fracab" and "\\\\frac34i" are plain TeX
    and read), or a word read as a product of one-letter
    symbols ("the answer is red" as E*E*a*d*...);
  - the parse dropped most of the span: the string math-verify extracted keeps under half of the
    span's characters ("12 apples" read as 12: the unit is a part of the answer it did not read);
  - the two sides are objects of different kinds (a matrix against a number): "unequal" there is a
    statement about the forms, not about the values.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import permutations

from miners.verify.markers import REFUSALS

NO_OBJECT = "no mathematical object"
UNBALANCED = "unbalanced brackets"
GLUED_ENVIRONMENT = "environment name glued to its contents"
GLUED_ARGUMENTS = "fraction or root glued to its arguments"
WORD_AS_PRODUCT = "a word read as a product of symbols"
PARTIAL = "parse dropped most of the span"
KINDS_DIFFER = "objects of different kinds"

_GLUED_ENV_RE = re.compile(r"\\(?:begin|end)(?![a-zA-Z]*\s*\{)(?=[a-zA-Z])")
_GLUED_ARGS_RE = re.compile(r"\\(?:[dt]?frac|binom)(?=\d{3})")
_GLUED_ROOT_RE = re.compile(r"\\sqrt(?=\d{2})")
_TEXT_COMMAND_RE = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{[^{}]*\}")
_COMMAND_RE = re.compile(r"\\[a-zA-Z]+")
# a word of three ASCII letters or more that no backslash makes a command
WORD_RE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")
# what carries no content of its own: spacing, sizing, math delimiters
_NOISE_RE = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg|displaystyle|[,;:! ]|q?quad)|[\s$]")
MIN_KEPT_SHARE = 0.5


_UNESCAPED_RES = {ch: re.compile(r"(?<!\\)" + re.escape(ch)) for ch in "{}"}


def _unescaped(span: str, ch: str) -> int:
    return len(_UNESCAPED_RES[ch].findall(span))


@lru_cache(maxsize=64)  # unread_reason asks of a span and of math-verify's reading of it, often the same
def span_signs(span: str) -> str | None:
    """The reason no parse of this span can be trusted, from the span alone; None when there is none."""
    if _unescaped(span, "{") != _unescaped(span, "}"):
        return UNBALANCED
    if span.count("\\{") != span.count("\\}"):
        return UNBALANCED
    # an interval may pair "(" with "]": only the totals have to agree
    if span.count("(") + span.count("[") != span.count(")") + span.count("]"):
        return UNBALANCED
    return glued_signs(span)


def glued_signs(span: str) -> str | None:
    """An environment name glued to its contents, a fraction glued to three or more digits or a root
    to two: a span whose braces were lost, which no reader can take at its word (TeX reads
    "\\frac125" as 5/2, math-verify as 1/25, the author may have meant 12/5). The fast path asks this
    of both sides before it compares."""
    if _GLUED_ENV_RE.search(span):
        return GLUED_ENVIRONMENT
    if _GLUED_ARGS_RE.search(span) or _GLUED_ROOT_RE.search(span):
        return GLUED_ARGUMENTS
    return None


# names plain-text math writes as words ("sqrt(2)/2", "3*log(x)"): read as functions, not as letters
_FUNCTION_WORDS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log exp sqrt abs max min mod gcd lcm "
    "det sgn floor ceil inf infty oo".split()
)


def _has_symbols(obj) -> bool:
    return bool(getattr(obj, "free_symbols", None))


def _has_bare_word(span: str) -> bool:
    """A run of three or more letters that is neither a LaTeX command, nor inside \\text{...}, nor a
    function name, or a letter of a script math has no symbols in ("七", "สาม"): math-verify has no
    words, so its letters became symbols ("doce" is E*c*do)."""
    if _OTHER_SCRIPT_RE.search(span):
        return True
    plain = _COMMAND_RE.sub(" ", _TEXT_COMMAND_RE.sub(" ", span))
    return any(w.lower() not in _FUNCTION_WORDS for w in WORD_RE.findall(plain))


# a letter of a script other than Latin and Greek (math's own symbols)
_OTHER_SCRIPT_RE = re.compile(r"[^\W\d_A-Za-z\u00c0-\u024f\u0370-\u03ff]")


_DIGIT_RE = re.compile(r"\d")


def words_only(span: str) -> bool:
    """A span of words and no digit ("Probability", "We can't solve this problem", "not defined"):
    math-verify has no words, so whatever it reads there is letters taken for symbols (a reading
    unread_reason refuses, WORD_AS_PRODUCT) after a LaTeX parse that costs it milliseconds."""
    return not _DIGIT_RE.search(span) and _has_bare_word(span)


def _texts_a_word(span: str) -> bool:
    """\\text{...} holding a word of three letters or more ("\\text{seis}"): a word, not a symbol."""
    return any(re.search(r"[^\W\d_]{3,}", m.group(0)[5:]) for m in _TEXT_COMMAND_RE.finditer(span))


def kind_of(obj) -> str | None:
    """ "matrix", "value" (any other sympy object: number, expression, relation, set, interval,
    tuple), or None for what is not a mathematical object (a raw string)."""
    if isinstance(obj, str) or obj is None:
        return None
    matrix = _matrix_type()
    if matrix is None:  # pragma: no cover - math-verify depends on sympy
        return None
    return "matrix" if isinstance(obj, matrix) else "value"


@lru_cache(maxsize=1)  # (an import statement per reading cost more than the reading's other checks)
def _matrix_type() -> type | None:
    try:
        from sympy.matrices import MatrixBase
    except ImportError:  # pragma: no cover - math-verify depends on sympy
        return None
    return MatrixBase


def unread_reason(parsed, span: str) -> str | None:
    """Why math-verify's parse of `span` is not a reading of it (module docstring), or None when it is.
    `parsed` is what math_verify.parse returned for the span (or for an output whose answer it is)."""
    if not parsed or kind_of(parsed[0]) is None:
        return NO_OBJECT
    extracted = parsed[-1] if isinstance(parsed[-1], str) else str(parsed[0])
    reason = span_signs(span) or span_signs(extracted)
    if reason:
        return reason
    if (_has_bare_word(extracted) or _texts_a_word(span)) and _has_symbols(parsed[0]):
        return WORD_AS_PRODUCT
    whole = len(_NOISE_RE.sub("", span))
    kept = len(_NOISE_RE.sub("", extracted))
    if whole and kept < MIN_KEPT_SHARE * whole:
        return PARTIAL
    return None


def comparable(parsed_a, parsed_b) -> bool:
    """Both parses hold objects of the same kind (both matrices, or both values)."""
    return kind_of(parsed_a[0]) == kind_of(parsed_b[0]) is not None


# Words a mathematical gold may hold and still state a value: function and operator names, and units.
_MATH_WORDS = frozenset(
    "sin cos tan sec csc cot arcsin arccos arctan sinh cosh tanh log ln lg exp lim sqrt frac dfrac tfrac "
    "pi infty inf det tr max min gcd lcm mod deg circ cdot times div pm mp le ge leq geq neq approx "
    "begin end pmatrix bmatrix matrix vmatrix array left right text mathrm mbox operatorname emptyset "
    "cup cap in notin subset mathbb or and no yes true false none undefined dne "
    "cm mm km kg mg ml ft mi mph kmh hr hrs min sec cents dollars dollar euros degrees degree units "
    "meters metres inches feet hours minutes seconds days weeks years months percent".split()
)
_LOWER_WORD_RE = re.compile(r"[a-z]{2,}")
_PLAIN_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}(?![A-Za-z])")


# a number (a fraction, a mixed number, money, a percentage) and then up to three lowercase words
_QUANTITY_RE = re.compile(
    r"\s*[$€£]?\s*-?\d[\d,]*(?:\.\d+)?(?:\s+\d+/\d+|/\d+)?\s*%?(?:\s+[a-z]{2,}){1,3}\s*\.?\s*"
)


def states_no_value(gold: str, answer: str) -> bool:
    """A gold written in words that no reader takes as mathematics ("all 1", "just B", "na"), against
    an answer written as mathematics (a matrix, a number): an unequal comparison of the two compares
    a description with a value, not two values. A gold of words against an answer of words (a yes/no,
    a name) is a comparison of words and stays decided."""
    if not any(_is_plain_word(token) for token in gold.split()):
        return False
    if _QUANTITY_RE.fullmatch(gold):  # "3 3/4 cups", "$45 dollars": a value and its unit (convention 3)
        return False
    return not any(w.lower() not in _MATH_WORDS for w in _PLAIN_WORD_RE.findall(answer))


def _is_plain_word(token: str) -> bool:
    """A token that is a lowercase word standing on its own ("all", "just", "na"), not a product of
    symbols glued into an expression ("Cx", "lny+C/lny", "arctanx-x") nor a function name."""
    word = token.rstrip(".,;:")
    return _LOWER_WORD_RE.fullmatch(word) is not None and word not in _MATH_WORDS


_CONSTANT_RE = re.compile(r"(?<![A-Za-z\\])C(?:_\{?\d+\}?)?(?![a-z]{2})")
_MATRIX_ENV_RE = re.compile(r"\\begin\s*\{[pbvBV]?matrix\}")


def undecidable_forms(gold: str, answer: str) -> bool:
    """An unequal comparison that compared names, not values: arbitrary constants named differently
    on the two sides (`C_1 x + C_2` against `Cx + D`: the same general solution may be written with
    other constants). (renamed_constants gives the renamings under which they may be equal.)"""
    gold_constants = set(_CONSTANT_RE.findall(gold))
    answer_constants = set(_CONSTANT_RE.findall(answer))
    return bool(gold_constants and answer_constants and gold_constants != answer_constants)


# an arbitrary constant: a capital A-H or C with an index ("Cx" is C times x; "Cos" is no constant)
_ANY_CONSTANT_RE = re.compile(r"(?<![A-Za-z\\])(?:[A-H]|C_\{?\d+\}?)(?![A-Za-z]{2}|_)")
_MAX_CONSTANTS = 3


def renamed_constants(gold: str, answer: str) -> list[str]:
    """The answer with its arbitrary constants renamed to the gold's, one string per one-to-one
    renaming (`C_1 x + C_2` as `Cx + D` and as `Dx + C`), where both name the same number of them (at
    most three); [] otherwise. Equal under one of them is the same general solution."""
    gold_names = sorted(set(_ANY_CONSTANT_RE.findall(gold)))
    answer_names = sorted(set(_ANY_CONSTANT_RE.findall(answer)))
    if not gold_names or len(gold_names) != len(answer_names) or len(gold_names) > _MAX_CONSTANTS:
        return []
    out = []
    for order in permutations(gold_names):
        rename = dict(zip(answer_names, order))

        def renamed(m: re.Match, to: dict[str, str] = rename) -> str:
            return "{" + to[m.group(0)] + "}"

        out.append(_ANY_CONSTANT_RE.sub(renamed, answer))
    return out


_MATH_OR_MARKUP_RE = re.compile(r"\$[^$]*\$|\\\(.*?\\\)|\\\[.*?\\\]|[*_`\"“”]", re.S)
_REFUSAL_RE = re.compile(
    r"(?:(?:it|this|that|the\s+\w+)\s+)?(?:" + "|".join(re.escape(w) for w in REFUSALS) + r")(?![A-Za-z])",
    re.I,
)


def is_refusal(answer: str) -> bool:
    """An answer that declines to give a value ("$[ACD]$ cannot be determined from the given
    information", "I don't know", "无法确定"): with its math segments and markup set aside, it opens
    with a refusal of miners.verify.markers.REFUSALS and holds no digit."""
    rest = _MATH_OR_MARKUP_RE.sub(" ", answer).strip(" \t\n.:;,!")
    return _DIGIT_RE.search(rest) is None and _REFUSAL_RE.match(rest) is not None
