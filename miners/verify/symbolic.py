"""math-verify inside miners.verify: the second opinion, bounded in time and size.

    from collections import Counter
    from miners.verify.symbolic import span_verdict, output_reading
    span_verdict("\\\\pm 3", "3, -3", Counter())        # -> True (about 10 ms once sympy is loaded)
    output_reading("... so $x = \\\\frac12$.", "0.5", Counter())   # -> ("correct", "1/2")

Two uses. span_verdict compares two extracted spans the fast path could not decide. output_reading
is math-verify's own reading of a whole output (its extraction, then its comparison): an independent
second opinion on an output whose answer form the fast path holds weak, or where it found none.

The work is bounded three ways: a size/complexity guard (exponent towers, huge literals, deep nesting
never reach sympy), a wall-clock limit in the main thread (an interval timer; math-verify's own
timeout uses whole-second signal.alarm and is turned off), and, in other threads, the guard alone
(signals only reach the main thread). A refused, timed-out or failed comparison is undecided (None,
or "unknown"), never "not equal"; so is one where math-verify did not read both sides as mathematics
of one kind (miners.verify.readable: the raw string of a span it could not parse, a partial parse, a
matrix against a number). Each is counted in the caller's counter (`calls`, `refused`, `timeouts`,
`failures`, `unread`, `output_calls`, `output_unread`).

While ours asks it, math-verify's parser reads plain numbers through plain_number (the object
sympy.Number would build, without sympy's string parser: half a second opinion's time went there),
other expressions through prepared_parse_expr (sympy's parser in the namespace it builds for itself
on every call, built once) and LaTeX through plain_latex (a whole number in digits without the LaTeX
parser); math-verify called by anyone else is untouched. A second opinion reads the output through
parse_output: parse's own result, without trying the patterns whose needed literal ("final answer",
"answer", "\\boxed{", a math delimiter) the text does not hold, with the patterns tried at every
position scanned in a form that skips the positions where none of their matches can start
(faster_scan: the same matches), and with the plain-expression matches of the text's tail tried
before any earlier one is scanned (_extract_target: the first that extracts a value is the one parse
reads; where none does, every match is tried). Two spans where the gold is a number and the
answer a polynomial in an unknown are unequal without math-verify's simplification, which is what it
would conclude (number_against_polynomial).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (the C module under signal: no stub)
import functools
import re
import signal
import threading
from collections.abc import Iterator
from itertools import chain

from miners.verify.brackets import max_depth
from miners.verify.fast import fast_compare
from miners.verify.lowered import FOLDS_TO_ASCII_RE, lowered, matches_at_words
from miners.verify.readable import KINDS_DIFFER, comparable, unread_reason

SYMBOLIC_TIMEOUT_S = 0.8  # one pair of spans
OUTPUT_TIMEOUT_S = 2.0  # a whole output: extraction over its text, then the comparison
# math-verify reads the last answer in an output; its tail holds it (and bounds the regex work)
OUTPUT_TAIL_CHARS = 6000

_TOWER_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\(?[\d.]+\^|\*\*[^*]*\*\*")
_BIG_INT_RE = re.compile(r"\d{16,}")
_FACTORIAL_RE = re.compile(r"(\d+)\s*!")
_SYMBOLIC_SUM_RE = re.compile(r"\\(?:sum|prod)_\{[^{}]*\}\^\{?[^{}$]*[a-zA-Z]")
_POWER_RE = re.compile(r"\^\s*\{?\s*-?(\d+)")
# what every match of the patterns above but _BIG_INT_RE holds, and every nesting max_depth counts
_RUNAWAY_SIGN_RE = re.compile(r"[\^*!\\({\[]")

_math_verify = None
_sympy_number = None  # sympy.Number, which math-verify's parser calls on every plain number it reads
_sympy_parse_expr = None  # sympy's parse_expr, which it calls on every other expression it reads
_latex_parse = None  # its parse_latex_cached, which it calls on every LaTeX span it reads

# A number as math-verify's parser hands it to sympy.Number: its digits, and its decimals if any
# (thousands separators gone, leading zeros stripped).
_PLAIN_NUMBER_RE = re.compile(r"(-?)(0|[1-9]\d*)(\.\d+)?")
# A LaTeX span that is a whole number in ASCII digits ("16", "120000", "007")
_DIGITS_RE = re.compile(r"[0-9]+")


class _SymbolicTimeout(BaseException):
    """BaseException so that math-verify's own `except Exception` cannot swallow it."""


def too_complex(s: str) -> bool:
    """Inputs whose sympy evaluation could run away (exponent towers, huge literals or powers,
    big factorials, deep nesting). These are never handed to sympy."""
    if len(s) > 300 or s.count("^") > 8:
        return True
    if _RUNAWAY_SIGN_RE.search(s) is None:  # (most answers: only a long number is left to refuse)
        return _BIG_INT_RE.search(s) is not None
    if _TOWER_RE.search(s) or _BIG_INT_RE.search(s):
        return True
    if _SYMBOLIC_SUM_RE.search(s):
        return True  # a sum up to n needs symbolic summation: past the time bound, every time
    if any(int(m.group(1)) > 200 for m in _POWER_RE.finditer(s)):
        return True
    if any(int(m.group(1)) > 200 for m in _FACTORIAL_RE.finditer(s)):
        return True
    return max_depth(s) > 12


def _raise_timeout(signum, frame):
    raise _SymbolicTimeout()


def _load_math_verify():
    global _math_verify, _sympy_number, _sympy_parse_expr, _latex_parse
    if _math_verify is None:
        import math_verify
        import math_verify.grader
        import math_verify.parser
        import sympy
        from sympy.parsing import parse_expr

        _sympy_number = sympy.Number
        _sympy_parse_expr = parse_expr
        _latex_parse = math_verify.parser.parse_latex_cached

        # We bound the time ourselves (below); silence its one-time "timeout disabled" warning.
        math_verify.parser.TIMEOUT_WARNING_SHOWN = True
        math_verify.grader.TIMEOUT_WARNING_SHOWN = True
        _math_verify = math_verify
    return _math_verify


def plain_number(text: str):
    """sympy.Number(text), built the way sympy's own parser builds it for a plain decimal
    ("12" -> Integer(12), "-3.25" -> -Float("3.25")) without the parser; anything else goes to
    sympy.Number itself.

    Why: math-verify's parser reads every plain number through sympy.Number(str), which runs
    sympy's parse_expr, which executes `from sympy import *` into a fresh namespace on every call
    (about 0.35 ms: the largest single cost of a second opinion). For these strings parse_expr's
    tokens are Integer(digits) or Float("digits.decimals"), negated by a unary minus; the objects
    built here are the same (tests/verify/test_verify_speed.py compares them, srepr and precision)."""
    m = _PLAIN_NUMBER_RE.fullmatch(text)
    if m is None:
        return _sympy_number(text)  # type: ignore[misc]
    import sympy

    value = sympy.Float(m[2] + m[3]) if m[3] else sympy.Integer(m[2])
    return -value if m[1] else value


def plain_latex(latex: str):
    """math-verify's parse_latex_cached(latex), without the LaTeX parser for a whole number in ASCII
    digits: latex2sympy reads one as Integer(digits) ("007" as 7), after an ANTLR parse and sympy's
    conversion that cost 0.7 to 2 ms a number (a plain gold such as "120000" that a span comparison
    parses, a "$16$" in an output; tests/verify/test_verify_speed.py compares the two, srepr and
    type). Anything else goes to parse_latex_cached itself."""
    if _DIGITS_RE.fullmatch(latex):
        import sympy

        return sympy.Integer(latex)
    return _latex_parse(latex)  # type: ignore[misc]


@functools.lru_cache(maxsize=1)
def _parse_expr_namespace() -> dict | None:
    """The namespace sympy's parse_expr builds for itself on every call made without one (what `from
    sympy import *` binds, the builtin functions, Max and Min as max and min), built once; None where
    it is not the one parse_expr builds (another sympy): then parse_expr builds its own. The check
    asks parse_expr itself: "globals()" evaluates to the namespace it evaluated in."""
    import builtins
    import types

    import sympy

    namespace: dict = {}
    exec("from sympy import *", namespace)
    namespace.update((n, f) for n, f in vars(builtins).items() if isinstance(f, types.BuiltinFunctionType))
    namespace["max"], namespace["min"] = sympy.Max, sympy.Min
    theirs = _sympy_parse_expr("globals()")  # type: ignore[misc]
    same = (
        isinstance(theirs, dict)
        and theirs.keys() == namespace.keys()
        and all(theirs[k] is v for k, v in namespace.items() if k != "__builtins__")
    )
    return namespace if same else None


def prepared_parse_expr(s: str, *args, **kwargs):
    """sympy's parse_expr(s, ...) in a copy of the namespace it would build (_parse_expr_namespace):
    the same reading without its `from sympy import *` on every call (two thirds of its time on an
    expression such as "400 - 160": 0.7 ms to 0.26)."""
    namespace = _parse_expr_namespace() if not args and "global_dict" not in kwargs else None
    if namespace is not None:
        kwargs["global_dict"] = dict(namespace)  # (a copy: no reading sees what another left in it)
    return _sympy_parse_expr(s, *args, **kwargs)  # type: ignore[misc]


def _parser_swaps() -> tuple[tuple[str, object, object], ...]:
    """(the name in math-verify's parser, what it holds, what ours puts there while it asks it)."""
    return (
        ("Number", _sympy_number, plain_number),
        ("parse_expr", _sympy_parse_expr, prepared_parse_expr),
        ("parse_latex_cached", _latex_parse, plain_latex),
    )


def _swap_parsers() -> bool:
    """math-verify's parser reads plain numbers through plain_number, other expressions through
    prepared_parse_expr and LaTeX through plain_latex while ours asks it; True when swapped. Never for
    math-verify called by anyone else: _restore_parsers puts its own back (a thread that finds them
    swapped already leaves that to the one that swapped them)."""
    if _math_verify is None:
        return False
    parser = _math_verify.parser
    swaps = _parser_swaps()
    if any(getattr(parser, name, None) is not theirs for name, theirs, _ in swaps):
        return False  # swapped by another thread, or a math-verify we do not know
    for name, _, ours in swaps:
        setattr(parser, name, ours)
    return True


def _restore_parsers(swapped: bool) -> None:
    if swapped:
        for name, theirs, _ in _parser_swaps():
            setattr(_math_verify.parser, name, theirs)  # type: ignore[union-attr]


# signal.signal less its wrapper's conversions to and from enums: for a Python handler the wrapper's
# lookup of it among the Handlers enum raises and catches ValueError, which cost more than the
# second opinion's other bookkeeping (the handler is set and restored on every bounded call)
_set_handler = _signal.signal


def _bounded(run, seconds: float, stats):
    """run() under a wall-clock bound in the main thread (the guard alone elsewhere); None when it
    timed out or raised (counted)."""
    if threading.current_thread() is not threading.main_thread():
        swapped = _swap_parsers()
        try:
            return run()
        except Exception:  # math-verify raised: counted, and undecided
            stats["failures"] += 1
            return None
        finally:
            _restore_parsers(swapped)
    swapped = _swap_parsers()
    old_handler = _set_handler(signal.SIGALRM, _raise_timeout)
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return run()
    except _SymbolicTimeout:
        stats["timeouts"] += 1
        return None
    except Exception:
        stats["failures"] += 1
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _restore_parsers(swapped)  # (after the timer is off: a timeout cannot skip it)
        _set_handler(signal.SIGALRM, old_handler)
        if old_timer[0] > 0:  # somebody else's timer was running: give it back what was left
            signal.setitimer(signal.ITIMER_REAL, max(old_timer[0] - seconds, 0.001), old_timer[1])


# The math-verify release whose default extraction patterns _output_patterns reads; with any other,
# a second opinion calls its parse() as it is.
PATTERNS_READ_FOR = "0.9.0"


Needed = tuple[tuple[tuple[str, ...], bool], ...]
# every match of a LaTeX pattern holds a math delimiter ($$, \\[, $, \\(, a bracket after a space), a
# \\frac{ of numbers or a \\boxed{: one of these characters
_LATEX_CHARS = (("$", "\\", "["), True)


def _needed_literal(pattern: str, priority: int, latex: bool) -> Needed:
    """What a text must hold for one of math-verify's default patterns to match it: for each need,
    (literals one of which it holds, whether case matters); () where the pattern needs none we know
    of. Its "final answer" and "answer" patterns open with that phrase, case-insensitive (and the
    LaTeX ones hold a LaTeX span after it); its two box patterns (priority 50, the inline
    `\\boxed{.+}` and the math block holding a box) need "\\boxed{" in every alternative; its plain
    LaTeX pattern (priority 300) opens with a math delimiter ($$, \\[, $, \\(, a bracket after a
    space) or a \\frac{ of numbers."""
    latex_span = (_LATEX_CHARS,) if latex else ()
    if pattern.startswith("(?i:final answer"):
        return ((("final answer",), False), *latex_span)
    if pattern.startswith("(?i:answer)"):
        return ((("answer",), False), *latex_span)
    if priority == 50 and not pattern.startswith("(?i:") and "\\\\boxed{" in pattern:
        return ((("\\boxed{",), True),)
    if latex and priority == 300:
        return ((("$", "[", "\\(", "\\frac{"), True),)
    return ()


# The patterns parse() tries where the text holds no literal they need (its plain LaTeX, plain
# expressions, and a math block holding a box) are tried at every position of the text. Each gets a
# scan with the same matches that skips the positions where none can start
# (tests/verify/test_verify_speed.py compares the two).
#
# The LaTeX ones open with one of their math delimiters' alternatives (_LATEX_PATTERN_STARTS: "$$", "\\[",
# "$", "\\(", a space before "[", and for plain LaTeX a "\\frac" or "-\\frac"), each tried at every
# position; each match opens with "$", a backslash, "-" or a space before "[". A lookahead for those
# in front is one test of one character where no match can start.
_LATEX_PATTERN_STARTS = (
    r"(?:(?:(?:(?<!\\)\$\$(?P<first_latexDisplayDollar>",  # plain LaTeX
    r"(?:(?:(?<!\\)\$\$(?P<first_latexDisplayDollar>",  # a math block holding a box
)
_LATEX_MATCH_LOOKAHEAD = r"(?=[$\\-]|\s\[)"
# The two plain-expression patterns open with "^", a space or "=" (_EXPRESSION_OPENING). Without
# MULTILINE "^" holds only at the text's start; everywhere else a match opens with a space or "="
# and, after it, the first character of what the pattern reads there (_EXPRESSION_FIRSTS, by the
# text that follows the opening: "**", a currency sign, a sign, a digit, a point, a bracket).
# Opened so ("[\\s=]" first), the pattern is found by a search that skips in C every character but a
# space or "=", and the lookahead passes over the spaces that precede a word.
_EXPRESSION_OPENING = r"(?:(?:^|\s|\=)"
_CURRENCIES = "[\\$€£¥₹₽₪₩₫฿₡₢₣₤₥₦₧₨₩₪₫₭₮₯₰₱₲₳₴₵₶₷₸₹₺₻₼₽₾₿]"
_EXPRESSION_FIRSTS = {
    r"(?:\*\*)?(?P<expr>-?\(?-?\d": r"[*\-(\d]",
    r"(?:\*\*)?" + _CURRENCIES + r"?(?<!\d)(?:(?P<integer1>-?": _CURRENCIES[:-1] + r"*\-.\d]",
}


class _ExpressionScan:
    """finditer of a plain-expression pattern: its own match at the text's start, then from there on
    the same pattern opened with a space or "=" (the only openings it has after the start). Each
    match holds a digit, so none is empty and the scan goes on from the end of the first."""

    def __init__(self, pattern: re.Pattern[str], after_start: re.Pattern[str]):
        self.pattern = pattern
        self.after_start = after_start

    def finditer_from(self, text: str, start: int) -> Iterator[re.Match[str]]:
        """Its matches that start at or after start > 0, where no match of the whole text's scan runs
        across start (_extract_target's tail): from there on the two scans are one."""
        return self.after_start.finditer(text, start)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        first = self.pattern.match(text)
        if first is None:
            return self.after_start.finditer(text, 1)
        return chain((first,), self.after_start.finditer(text, first.end()))


# Its "final answer" and "answer" patterns open with that phrase, case-insensitive (_PHRASE_OPENINGS):
# Python's re has no fast search for a phrase in any case and tries them at every position. In a
# text without a letter beyond ASCII that IGNORECASE matches to an ASCII one (lowered.FOLDS_TO_ASCII_RE)
# it matches an ASCII phrase where the lowered text holds it (_lowered_alike), and each pattern is
# tried only there (lowered.matches_at_words).
_PHRASE_OPENINGS = {"(?i:final answer": "final answer", "(?i:answer)": "answer"}


def _lowered_alike(text: str) -> str | None:
    """text lowered, where an ASCII phrase matches text ignoring case where the lowered text holds it;
    None where it may not (a letter beyond ASCII that folds to an ASCII one)."""
    if not text.isascii() and FOLDS_TO_ASCII_RE.search(text) is not None:
        return None
    return lowered(text)


class _PhraseScan:
    """finditer of a pattern each match of which opens with `phrase` in any case (lowercase here):
    tried only where the lowered text holds the phrase; the pattern's own scan where the lowered text
    may not show where it matches (_lowered_alike)."""

    def __init__(self, pattern: re.Pattern[str], phrase: str):
        self.pattern = pattern
        self.phrase = phrase

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        low = _lowered_alike(text)
        if low is None:
            return self.pattern.finditer(text)
        return matches_at_words(self.pattern, text, low, (self.phrase,))


def faster_scan(pattern: re.Pattern[str]) -> re.Pattern[str] | _ExpressionScan | _PhraseScan:
    """A scan with pattern's matches where one is known (above), else pattern itself."""
    source = pattern.pattern
    if pattern.flags & re.MULTILINE:
        return pattern
    phrase = next((p for opening, p in _PHRASE_OPENINGS.items() if source.startswith(opening)), None)
    if phrase is not None:
        return _PhraseScan(pattern, phrase)
    if source.startswith(_LATEX_PATTERN_STARTS):
        return re.compile(_LATEX_MATCH_LOOKAHEAD + source, pattern.flags)
    if not source.startswith(_EXPRESSION_OPENING):
        return pattern
    rest = source[len(_EXPRESSION_OPENING) :]
    firsts = next((f for opening, f in _EXPRESSION_FIRSTS.items() if rest.startswith(opening)), None)
    if firsts is None:
        return pattern
    return _ExpressionScan(pattern, re.compile(r"(?:[\s=](?=" + firsts + ")" + rest, pattern.flags))


@functools.lru_cache(maxsize=1)
def _output_patterns():
    """math-verify's default extraction patterns as parse() builds them ([(pattern, priority)], its
    target) with each pattern's needed literal, each pattern as faster_scan gives it; None for a
    math-verify release not read here."""
    from importlib.metadata import version

    mv = _load_math_verify()
    if version("math-verify") != PATTERNS_READ_FOR:
        return None
    configs = [mv.LatexExtractionConfig(), mv.ExprExtractionConfig()]  # parse()'s default
    table = []
    for patterns, target in mv.parser.get_extraction_regexes(configs):
        latex = isinstance(target, mv.LatexExtractionConfig)
        read = [
            (faster_scan(p), priority, _needed_literal(p.pattern, priority, latex))
            for p, priority in patterns
        ]
        table.append((read, target))
    return table


@functools.lru_cache(maxsize=1)
def _distinct_needs() -> tuple[tuple[tuple[str, ...], bool], ...]:
    """Every need of _output_patterns' table, once."""
    table = _output_patterns() or ()
    return tuple(dict.fromkeys(need for patterns, _ in table for _, _, needed in patterns for need in needed))


def parse_output(text: str) -> list:
    """math-verify's parse(text) with its defaults, the same list, without trying the patterns that
    cannot match: one whose needed literal the text does not hold finds nothing, and parse reads
    the matches of each priority in turn, so leaving it out changes no match and no order
    (tests/verify/test_verify_speed.py compares the two on every corpus output). A case-insensitive
    literal is looked for only in a text lowered alike (_lowered_alike: where lower() is what
    IGNORECASE matches)."""
    mv = _load_math_verify()
    table = _output_patterns()
    if table is None:
        return mv.parse(text, parsing_timeout=None)
    low = _lowered_alike(text)
    # (each need the patterns share is tested once: there are five, and thirteen patterns)
    held: dict[tuple[tuple[str, ...], bool], bool] = {}
    for need in _distinct_needs():
        words, case_matters = need
        where = text if case_matters else low
        held[need] = where is None or any(w in where for w in words)
    target_res = [
        ([(p, priority) for p, priority, needed in patterns if all(map(held.__getitem__, needed))], target)
        for patterns, target in table
    ]
    try:  # parse(): any failure is an empty reading; a timeout (a BaseException) goes through
        return _extract_target(text, target_res, mv.parser.extract_match)
    except Exception:
        return []


# Letters no match of the two plain-expression patterns holds: past its opening space or "=", a match
# reads digits, signs, spaces, brackets and at most a percent word ("percent", "percentage", "pct",
# with "P" or "p"). A match that covered one of these letters would have read it, so no match of a
# scan of the whole text runs across a place right after one (_expression_tail_start).
_NO_EXPRESSION_LETTERS = frozenset("bdfhijklmoqsuvwxyzABCDEFGHIJKLMNOQRSTUVWXYZ")
EXPRESSION_TAIL_CHARS = 80


def _expression_tail_start(text: str) -> int:
    """A place p about EXPRESSION_TAIL_CHARS from text's end, right after a letter no expression
    match holds; 0 where text is shorter or no such letter is near. A scan of the whole text finds
    matches that end before p and matches that start at or after p, none across it; and a scan from
    p finds those after it (it meets the whole text's scan at its first match: from there on, both
    are the same scan)."""
    at = len(text) - EXPRESSION_TAIL_CHARS
    stop = max(at - 64, 0)
    while at > stop:
        if text[at - 1] in _NO_EXPRESSION_LETTERS:
            return at
        at -= 1
    return 0


def _group_matches(text: str, group: list, start: int) -> list:
    """(match, target) for the patterns of one priority, as math-verify tries them: the one that ends
    last first, at an equal end the one that starts first, at an equal span the pattern listed first.
    start > 0: only the matches that end at or after start, the expression scans begun there."""
    found = [
        (m, target)
        for pattern, target in group
        for m in (
            pattern.finditer_from(text, start)
            if start and isinstance(pattern, _ExpressionScan)
            else pattern.finditer(text)
        )
        if m.end() >= start
    ]
    found.sort(key=lambda found: (found[0].end(), -found[0].start()), reverse=True)
    return found


def _extract_target(text: str, target_res, extract_match) -> list:
    """math-verify's extract_target_from_pred(text, target_res, fallback_mode="first_match",
    extraction_mode="any_match"), the same list: each priority's matches are tried in turn
    (_group_matches) until one extracts a value; the first string fallback of any match tried is
    appended. A priority with an expression pattern is tried first on the matches that end in the
    text's tail (_expression_tail_start): they come first in its order, so where one of them extracts
    a value, the matches before the tail, never scanned, would not have been tried; where none does,
    the priority is tried again on all its matches (the tail's come first again: the first fallback
    stays the first)."""
    groups: dict[int, list] = {}
    for patterns, target in target_res:
        for pattern, priority in patterns:
            groups.setdefault(priority, []).append((pattern, target))
    extracted: list = []
    fallbacks: list = []
    tail = _expression_tail_start(text)
    for priority in sorted(groups):
        group = groups[priority]
        has_tail = tail and any(isinstance(pattern, _ExpressionScan) for pattern, _ in group)
        for start in (tail, 0) if has_tail else (0,):
            for m, target in _group_matches(text, group, start):
                value, fallback = extract_match(m, target)
                if fallback:
                    fallbacks.append(fallback)
                if value is not None:
                    extracted.append(value)
                    break
            if extracted:
                break
        if extracted:
            break
    if fallbacks:
        extracted.append(fallbacks[0])
    return extracted


_SPAN_GOLD, _OUTPUT_GOLD = "span", "output"


@functools.lru_cache(maxsize=4096)
def _parsed_gold(gold: str, how: str):
    """math-verify's parse of a gold span, once per gold: many samples of one problem share it. A
    parse cut short by the time bound raises, and so is never cached."""
    mv = _load_math_verify()
    if how == _SPAN_GOLD:
        cfg = [mv.LatexExtractionConfig(), mv.ExprExtractionConfig()]
        return mv.parse("$" + gold + "$", extraction_config=cfg, parsing_timeout=None)
    return mv.parse("$" + gold + "$", parsing_timeout=None)


def span_verdict(pred: str, gold: str, stats) -> bool | None:
    """math-verify's verdict on two answer spans (LaTeX or plain), bounded; None when refused, timed
    out, unread or failed (each counted in stats)."""
    return span_compare(pred, gold, stats)[0]


def span_compare(pred: str, gold: str, stats) -> tuple[bool | None, str | None]:
    """(math-verify's verdict on two answer spans, why there is none). The verdict is None when the
    spans were refused by the size guard, timed out, or math-verify failed (the reason None: the
    comparison undecided), and when it did not read both spans as mathematics of one kind (the reason
    miners.verify.readable gives, counted as `unread`): its "unequal" between a matrix and the raw
    string of a span it could not parse is a comparison of strings, not of answers."""
    if too_complex(pred) or too_complex(gold):
        stats["refused"] += 1
        return None, None
    stats["calls"] += 1
    mv = _load_math_verify()

    def run():
        cfg = [mv.LatexExtractionConfig(), mv.ExprExtractionConfig()]
        g = _parsed_gold(gold, _SPAN_GOLD)
        p = mv.parse("$" + pred + "$", extraction_config=cfg, parsing_timeout=None)
        why = unread_reason(g, gold) or unread_reason(p, pred)
        if why is None and not comparable(g, p):
            why = KINDS_DIFFER
        if why is not None:
            stats["unread"] += 1
            stats[f"unread: {why}"] += 1
            return None, why
        if number_against_polynomial(g, p):
            stats["number against a polynomial"] += 1
            return False, None
        return bool(mv.verify(g, p, timeout_seconds=None)), None

    got = _bounded(run, SYMBOLIC_TIMEOUT_S, stats)
    return got if got is not None else (None, None)


def number_against_polynomial(gold_read: list, answer_read: list) -> bool:
    """Whether math-verify's verify(gold_read, answer_read) (two parses) is False before it simplifies
    anything: every value it read in the gold is a number, every one in the answer a polynomial of
    degree one or more in its unknowns (not one unknown alone: math-verify compares that as a name),
    and no raw string of the one is the other's. Each comparison it makes then fails: equal as written
    (a number is no polynomial), numerically (a polynomial in an unknown has no numeric value), and
    the simplified difference (a nonzero polynomial: no simplification makes it zero); a string
    against a value is never equal. Its simplification costs milliseconds, more after other sympy
    work has emptied sympy's cache: "66_x^2x" read as 66*x against 120000, a word read as a product
    of letters ("AZYUK2A" as a*z*y*u*k*2*a) against 2 (tests/verify/test_verify_speed.py holds this
    equal to math-verify's verify)."""
    import sympy

    values = [x for x in gold_read if not isinstance(x, str)]
    answers = [x for x in answer_read if not isinstance(x, str)]
    if not values or not answers or not all(isinstance(x, sympy.Number) for x in values):
        return False
    raw = {x.strip() for x in gold_read if isinstance(x, str)}
    if any(x.strip() in raw for x in answer_read if isinstance(x, str)):
        return False
    for answer in answers:
        if not isinstance(answer, sympy.Expr) or isinstance(answer, sympy.Symbol) or not answer.free_symbols:
            return False
        unknowns = sorted(answer.free_symbols, key=str)
        try:
            if not answer.is_polynomial(*unknowns) or sympy.Poly(answer, *unknowns).total_degree() < 1:
                return False
        except Exception:  # (sympy could not read it as a polynomial: math-verify's verify decides)
            return False
    return True


def output_reading(
    output: str,
    gold: str,
    stats,
    ours: tuple[str, str] | None = None,
    kind: str = "math",
) -> tuple[str, str | None]:
    """(label, answer) as math-verify reads a whole output against a gold span, the way it is
    normally used (its default extraction of the output's last answer-like expression): "correct",
    "wrong", or "unknown" when it extracts nothing, cannot parse the gold, refuses or times out.

    ours: (our answer, our label). The question a second opinion answers is which value the output
    commits to: math-verify's extraction is the independent part. Where it extracts the same value as
    ours (the fast path says so with certainty), its comparison would repeat ours: ours is its label
    (counted as `output_same_value`). Otherwise its answer is compared with the gold by the fast path
    where that is certain (`output_fast_compared`, the same comparison every strong form gets), and
    by math-verify's own verify where it is not; the gold's parse is cached."""
    if too_complex(gold):
        stats["refused"] += 1
        return "unknown", None
    stats["output_calls"] += 1
    mv = _load_math_verify()

    def run():
        p = parse_output(output[-OUTPUT_TAIL_CHARS:])
        if not p:
            return "unknown", None
        answer = str(p[-1]) if len(p) > 1 else str(p[0])
        if unread_reason(p, answer) is not None:
            # the raw string of what it could not parse (or a partial reading of it): no reading
            stats["output_unread"] += 1
            return "unknown", answer
        if too_complex(answer):
            stats["refused"] += 1
            return "unknown", answer
        if ours is not None and _fast_equal(answer, ours[0], kind):
            stats["output_same_value"] += 1
            return ours[1], answer
        decided = _fast_equal(answer, gold, kind, decided_only=True)
        if decided is not None:
            stats["output_fast_compared"] += 1
            return ("correct" if decided else "wrong"), answer
        g = _parsed_gold(gold, _OUTPUT_GOLD)
        if unread_reason(g, gold) is not None or not comparable(g, p):
            stats["output_unread"] += 1
            return "unknown", answer
        return ("correct" if mv.verify(g, p, timeout_seconds=None) else "wrong"), answer

    got = _bounded(run, OUTPUT_TIMEOUT_S, stats)
    return got if got is not None else ("unknown", None)


def _fast_equal(theirs: str, ours: str, kind: str, decided_only: bool = False) -> bool | None:
    """The fast path's comparison of math-verify's extracted answer with another answer or the gold:
    True/False where it is certain; where it is not, None (decided_only) or False."""
    try:
        got = fast_compare(theirs, ours, "math" if kind == "task" else kind)
    except Exception:
        got = None
    return got if decided_only else got is True


def clear_caches() -> None:
    """Forget the parsed golds (a benchmark's fresh start)."""
    _parsed_gold.cache_clear()


def gold_cache_info():
    """How often a parsed gold was reused: functools' CacheInfo (hits, misses, maxsize, currsize)."""
    return _parsed_gold.cache_info()
