"""Answer verifier: read the final answer from a model's output and compare it with the gold.

    from miners.verify import extract_answer, is_equivalent
    extract_answer("... so she pays $1,250.\\nFinal answer: $1,250", "gsm8k")   # -> "$1,250"
    is_equivalent("... The answer is \\boxed{\\dfrac{1}{2}}.", "0.5", "math")     # -> True
    answers_equal("$1,250", "1250", "gsm8k")   # an already extracted answer -> True

Benchmark against math-verify: `.venv/bin/python bench/bench_verify.py`.

kind is "gsm8k" (gold is a number), "math" (gold is a MATH-style LaTeX answer) or "task" (gold is
the string a loop-fix generator computed; see _task_equal: "253 R 9", a decimal to N places whose
digits must match exactly, a repeating expansion "0.1(6)", an integer or fraction, or text).
A gold that is a whole solution ("... #### 72", a boxed MATH solution) is reduced to its answer.

How a verdict is reached, cheapest first (most pairs never reach step 5):
  1. extraction: the answer span that starts LAST among \\boxed{...}, a "Final answer: X" line,
     "The answer is X", "Answer: X" and "#### X", after cutting a hallucinated continuation (a new
     "Question:"/"Q:"/"User:" turn or a chat-template token that follows an answer: the model
     answering a question nobody asked). The last span wins so a self-correction counts.
  2. normalization to one canonical string (dollar signs, \\left/\\right, \\dfrac/\\tfrac, degree
     signs, \\text{} and trailing units, thousands separators, "x = 3" -> "3", unicode math).
  3. structure: multiple-choice letters, tuples, sets, intervals, unions, matrices, bare lists,
     compared element by element.
  4. a small exact evaluator for the usual answer grammar (integers, decimals, scientific notation,
     percentages, fractions and mixed numbers, repeating decimals, radicals, pi, e, i, powers,
     implicit products, n!, \\binom, \\log_b, \\ln, \\exp, \\sin/\\cos/\\tan with a clear argument,
     variables). Rational values compare exactly (Fraction); others within 1e-9 relative;
     expressions with variables at three fixed points (one negative), so (x+1)^2 and x^2+2x+1
     agree without sympy. Sizes are capped (powers, factorials, binomials): past the cap the
     verdict is False.
  5. only what the evaluator cannot read (\\pm, relations, \\log without a base, ...) goes to
     Hugging Face math-verify (latex2sympy + sympy), behind a size/complexity guard, with a
     wall-clock limit of SYMBOLIC_TIMEOUT_S in the main thread (an interval timer; math-verify's own
     timeout uses whole-second signal.alarm and is turned off). Signals cannot interrupt other
     threads, so there the guard alone bounds the work; in every thread an input too large for the
     guard, an evaluation that would build a huge number (10^10^10) and any exception is False.

Verdicts are cached per (extracted answer, gold, kind) in a bounded LRU, so mining many samples of
one problem pays once per distinct answer.
"""

from __future__ import annotations

import cmath
import math
import re
import signal
import threading
from fractions import Fraction
from functools import lru_cache

__all__ = ["KINDS", "answers_equal", "cache_info", "clear_cache", "extract_answer", "is_equivalent",
           "symbolic_calls"]

KINDS = ("gsm8k", "math", "task")
SYMBOLIC_TIMEOUT_S = 0.8
CACHE_SIZE = 65536
MAX_ANSWER_CHARS = 2000  # longer "answers" are runaways; normalizing them could cost O(n^2)

# ----------------------------------------------------------------------------------------------
# extraction
# ----------------------------------------------------------------------------------------------

_BOXED_RE = re.compile(r"\\(?:boxed|fbox)\s*(\{)|\\boxed\s+([^\s$]+)")
_FINAL_LINE_RE = re.compile(
    r"(?im)^[ \t>*_#-]*final[ \t]+answer[ \t*_]*(?:is)?[ \t*_]*[:：][ \t*_]*(?P<ans>[^\n]*)"
)
_ANSWER_IS_RE = re.compile(
    r"(?i)\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s+(?:is|would\s+be|should\s+be|=)\s*[:：]?\s*"
    r"(?=(?P<ans>[^\n]{0,400}))"  # a lookahead: "the answer is 5 ... no, the answer is 6" on one line
)
_ANSWER_LINE_RE = re.compile(r"(?im)^[ \t>*_#-]*answer[ \t*_]*[:：][ \t*_]*(?P<ans>[^\n]*)")
_HASHES_RE = re.compile(r"(?m)####[ \t]*(?P<ans>[^\n]*)")
# A new turn the model invents after it has answered. Only cut when an answer precedes it.
_FOLLOWUP_RE = re.compile(
    r"(?im)^[ \t>*_#]*(?:question|q|problem|user|human|instruction|exercise|new\s+problem|"
    r"follow[- ]up(?:\s+question)?)[ \t*_]*(?:\d+[ \t]*)?[:：.]"
)
# A chat-template token ends the assistant's turn wherever it appears: nothing after it is the answer.
_TURN_END_RE = re.compile(r"<\|(?:im_start|im_end|user|endoftext|eot_id|start_header_id|end)\|>|</s>|\[INST\]")
# "I checked that the answer is correct": talk about an answer, not one.
_NOT_AN_ANSWER_RE = re.compile(
    r"(?i)\s*(?:correct|incorrect|right|wrong|not|as\s+follows|below|above|that|this|clear|obvious|"
    r"indeed|likely|probably|given|found|shown|simply|in|to|still|also|then|therefore|thus|so|because|"
    r"calculated|computed|consistent|reasonable|the\s+same|same)\b|\s*[,.:]?\s*$"
)
# End of the answer sentence in "The answer is X. Because ..." (a period not inside a number).
_SENTENCE_END_RE = re.compile(r"[.;!?](?=\s|$)")


def _balanced(text: str, open_at: int) -> int:
    """Index just past the brace group that opens at text[open_at] == '{', or -1 if unclosed."""
    depth = 0
    i = open_at
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _brace_pairs(text: str) -> dict[int, int]:
    """{index of '{': index just past its '}'} for the whole text in one pass (a loop of unclosed
    \\boxed{ must not cost a scan to the end per box)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            pairs[stack.pop()] = i + 1
        i += 1
    return pairs


def _candidates(text: str) -> list[tuple[int, int, str, str]]:
    """Every answer span as (start, end, answer, how)."""
    found: list[tuple[int, int, str, str]] = []
    if "boxed" in text or "fbox" in text:
        closing = None
        for m in _BOXED_RE.finditer(text):
            if m.group(1) is not None:
                if closing is None:
                    closing = _brace_pairs(text)
                end = closing.get(m.start(1), -1)
                if end < 0:
                    continue
                found.append((m.start(), end, text[m.start(1) + 1 : end - 1], "boxed"))
            else:
                found.append((m.start(), m.end(), m.group(2), "boxed"))
    lowered_has_answer = "nswer" in text or "NSWER" in text
    if lowered_has_answer:
        for regex, how in ((_FINAL_LINE_RE, "final"), (_ANSWER_IS_RE, "answer_is"), (_ANSWER_LINE_RE, "answer")):
            for m in regex.finditer(text):
                ans = m.group("ans")
                if how == "answer_is":
                    ans = _cut_sentence(ans)
                    if _NOT_AN_ANSWER_RE.match(ans):
                        continue
                found.append((m.start(), m.start("ans") + len(ans), ans, how))
    if "####" in text:
        for m in _HASHES_RE.finditer(text):
            found.append((m.start(), m.end(), m.group("ans"), "hashes"))
    return found


def _cut_sentence(span: str) -> str:
    if "$" not in span and "{" not in span:  # the common case, at regex speed
        m = _SENTENCE_END_RE.search(span)
        return span[: m.start()] if m else span
    # keep "$3.5$" and "\frac{1}{2}" intact: only cut outside $...$ and braces
    depth = 0
    in_math = False
    for i, c in enumerate(span):
        if c == "$":
            in_math = not in_math
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif not in_math and depth <= 0 and c in ".;!?" and (i + 1 == len(span) or span[i + 1].isspace()):
            if c == "." and i > 0 and span[i - 1].isdigit() and i + 1 < len(span) and span[i + 1].isdigit():
                continue
            return span[:i]
    return span


def _strip_answer(ans: str) -> str:
    s = ans.strip()
    # markdown emphasis and code around the answer
    s = s.strip("*_` \t")
    if s.startswith(":"):
        s = s[1:].strip()
    s = s.rstrip(" .;,")
    for lo, hi in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)")):
        if s.startswith(lo) and s.endswith(hi) and len(s) >= len(lo) + len(hi):
            s = s[len(lo) : len(s) - len(hi)].strip()
    if len(s) >= 2 and s[0] == "$" and s[-1] == "$" and s.count("$") == 2:
        s = s[1:-1].strip()
    return s.rstrip(" .;,").strip("*_` \t")


def extract_answer(text: str, kind: str = "math") -> str | None:
    """The final answer a model's whole output commits to, or None when it commits to none.

    The span that starts last wins (a self-correction's last answer); a hallucinated follow-up turn
    after an answer is cut off first. A short single-line output is its own answer.
    """
    _check_kind(kind)
    if not text or not text.strip():
        return None
    m = _TURN_END_RE.search(text)
    if m:
        text = text[: m.start()]
    cands = _candidates(text)
    if cands:
        first_end = min(c[1] for c in cands)
        for m in _FOLLOWUP_RE.finditer(text, first_end):
            cut = m.start()
            kept = [c for c in cands if c[1] <= cut]
            if kept:
                cands = kept
                break
        # latest start wins; at an equal start prefer the most specific form
        cands.sort(key=lambda c: (c[0], c[3] == "boxed"))
        for _start, _end, ans, _how in reversed(cands):
            stripped = _strip_answer(ans)
            if stripped:
                return stripped
    stripped = text.strip()
    # a short one-line output is its own answer, unless it is a box the model never closed
    if "\n" not in stripped and len(stripped) <= 80 and "\\boxed" not in stripped:
        ans = _strip_answer(stripped)
        return ans or None
    return None


# ----------------------------------------------------------------------------------------------
# normalization
# ----------------------------------------------------------------------------------------------

_UNICODE = str.maketrans(
    {
        "−": "-", "–": "-", "—": "-", "×": "\\times ", "÷": "/", "·": "\\cdot ", "⋅": "\\cdot ",
        "√": "\\sqrt", "π": "\\pi ", "∞": "\\infty ", "°": "^\\circ", "²": "^2", "³": "^3",
        "\u00a0": " ", "\u2009": " ", "\u202f": " ", "，": ",", "：": ":", "％": "%",
        "€": "", "£": "", "¥": "",
    }
)
_TEXT_CMD_RE = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname|textnormal)\s*\{")
_DROP_RE = re.compile(
    r"\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])|\\(?:displaystyle|!|,|;|:|quad|qquad)(?![a-zA-Z])|\\ |~"
)
_DEGREE_RE = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|\bdegrees?\b")
_THOUSANDS_RE = re.compile(r"(?<![\d.])\d{1,3}(?:(?:,|\{,\}|\\,)\d{3})+(?![\d])")
_UNIT_WORDS = (
    # (?![a-zA-Z]) after each word: a word cannot be split into several "units", which made the
    # repetition below backtrack exponentially on long text answers.
    r"(?:square|sq\.?|cubic)?\s*(?:[a-zA-Z]{2,}(?![a-zA-Z])\.?)(?:\s*\^\s*\{?[23]\}?|\s*(?:squared|cubed))?"
    r"|(?:m|g|s|h|l|L|K|V|W|J|N|C|F)(?![a-zA-Z])(?:\s*\^\s*\{?[23]\}?)?"
)
_TRAILING_UNITS_RE = re.compile(r"(?<=[\d}).\s])\s*(?:(?:" + _UNIT_WORDS + r")(?:\s*/\s*(?:" + _UNIT_WORDS + r"))?\s*){1,4}$")  # units are short: bounded, so no blow-up
_KEEP_WORDS = frozenset(
    {"pi", "infty", "infinity", "sqrt", "and", "or", "i", "e", "x", "y", "z"}
)
_ASSIGN_RE = re.compile(r"^\s*[a-zA-Z](?:_\{?[a-zA-Z0-9]+\}?)?\s*=(?![=<>])\s*(.+)$")
_MIXED_PLAIN_RE = re.compile(r"^(-?)(\d+)\s+(\d+)\s*/\s*(\d+)$")
_MIXED_TEX_RE = re.compile(r"^(-?)(\d+)\s*\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}$")
_REPEATING_RE = re.compile(r"^(-?)(\d*)\.(\d*)(?:\\overline\{(\d+)\}|\((\d+)\))$")
_CURRENCY_RE = re.compile(r"\\\$|\$|\b(?:USD|usd|dollars?|cents?|rs\.?|inr|eur|euros?)\b")
_CHOICE_RE = re.compile(r"^(?:option|choice|answer)?\s*[({\[]?\s*([A-Ea-e])\s*[)}\]]?(?:[.:)\s]|$)")


def _unwrap_text_commands(s: str) -> str:
    while True:
        m = _TEXT_CMD_RE.search(s)
        if not m:
            return s
        end = _balanced(s, m.end() - 1)
        if end < 0:
            return s[: m.start()] + s[m.end() :]
        s = s[: m.start()] + " " + s[m.end() : end - 1] + " " + s[end:]


@lru_cache(maxsize=CACHE_SIZE)
def _normalize(ans: str, kind: str) -> tuple[str, bool]:
    """(canonical string, is_percent). Pure string work; no evaluation."""
    s = ans.translate(_UNICODE)
    s = _unwrap_text_commands(s)
    s = re.sub(r"(?<=\d)(?:\\,|\{,\}|\\ )(?=\d{3}(?!\d))", "", s)  # 1\,000 and 1{,}000
    s = s.replace("\\!", "")
    s = s.replace("\\\\", "\x03")  # matrix row separator, before "\ " (a space) is dropped
    s = _DROP_RE.sub(" ", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\cfrac", "\\frac")
    s = _CURRENCY_RE.sub(" ", s)
    s = _DEGREE_RE.sub(" ", s)
    percent = False
    if re.search(r"\\?%|\bpercent\b", s):
        percent = True
        s = re.sub(r"\\?%|\bpercent\b", " ", s)
    s = s.replace("\\{", "\x01").replace("\\}", "\x02")  # keep set braces apart from groups
    s = re.sub(r"\s+", " ", s).strip()
    if kind == "gsm8k" or _THOUSANDS_RE.fullmatch(s.lstrip("-")):
        s = _THOUSANDS_RE.sub(lambda m: re.sub(r"\{,\}|\\,|,", "", m.group(0)), s)
    m = _ASSIGN_RE.match(s)
    if m and "=" not in m.group(1):
        s = m.group(1).strip()
    s = s.rstrip(" .")
    # trailing unit words ("18 apples", "5 cm^2", "12 km/h"), never a lone variable letter
    m = _TRAILING_UNITS_RE.search(s)
    if m and m.start() > 0:
        words = re.findall(r"[a-zA-Z]+", m.group(0))
        if words and not any(w in _KEEP_WORDS for w in words) and re.search(r"[\d})]$", s[: m.start()].rstrip()):
            s = s[: m.start()].strip()
    s = re.sub(r"\s*([=+\-*/^_(),\[\]{}<>])\s*", r"\1", s)
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\sqrt(\d)", r"\\sqrt{\1}", s)
    s = re.sub(r"(?<![a-zA-Z\\])(pi|sqrt|infty|infinity)(?![a-zA-Z])", lambda m: "\\" + m.group(1), s)
    s = s.replace("\\infinity", "\\infty").replace("^{\\prime}", "'")
    if s.startswith("+") and len(s) > 1:
        s = s[1:]
    return s, percent


# ----------------------------------------------------------------------------------------------
# a small exact evaluator for the usual answer grammar
# ----------------------------------------------------------------------------------------------


class _Unsupported(Exception):
    """The evaluator does not read this; the symbolic back end may."""


class _TooHard(Exception):
    """Evaluating would build an enormous number: the verdict is False, sympy is not asked."""


_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"|(?P<cmd>\\[a-zA-Z]+)|(?P<var>[a-zA-Z](?:_\{[a-zA-Z0-9]+\}|_[a-zA-Z0-9])?'*)|(?P<op>[-+*/^(){}\[\]_!]))"
)
_CONSTANTS = {"\\pi": "pi", "\\infty": "inf"}
_FUNCTIONS = {"\\ln": "ln", "\\log": "log", "\\exp": "exp", "\\sin": "sin", "\\cos": "cos", "\\tan": "tan"}
_KNOWN_COMMANDS = frozenset(
    {"\\frac", "\\sqrt", "\\pi", "\\infty", "\\cdot", "\\times", "\\div", "\\binom", "\\dbinom", "\\tbinom"}
    | set(_FUNCTIONS)
)
_MAX_FACTORIAL = 500
_MAX_BINOM = 5000
_MAX_POW_BITS = 4096  # a power that would need more bits than this is "too hard"
_MAX_DEPTH = 40


def _tokenize(s: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    n = len(s)
    while pos < n:
        if s[pos].isspace():
            pos += 1
            continue
        m = _TOKEN_RE.match(s, pos)
        if not m or m.end() == pos:
            raise _Unsupported(s[pos:])
        kind = m.lastgroup
        val = m.group(kind)
        if kind == "cmd" and val not in _KNOWN_COMMANDS:
            raise _Unsupported(val)
        if kind == "cmd" and val in ("\\dbinom", "\\tbinom"):
            val = "\\binom"
        out.append((kind, val))
        pos = m.end()
    return out


class _Parser:
    """Recursive descent over tokens to a tuple AST: ('n', Fraction) ('v', name) ('c', name)
    ('+', a, b) ('*', a, b) ('/', a, b) ('^', a, b) ('neg', a) ('sqrt', a, index)."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.toks = tokens
        self.i = 0
        self.depth = 0
        self.vars: set[str] = set()

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, val: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (val is not None and tok[1] != val):
            raise _Unsupported(f"expected {val}")
        self.i += 1
        return tok

    def parse(self):
        node = self.expr()
        if self.i != len(self.toks):
            raise _Unsupported("trailing tokens")
        return node

    def expr(self):
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _TooHard("nesting")
        node = self.term()
        while (tok := self.peek()) is not None and tok[1] in ("+", "-"):
            self.i += 1
            rhs = self.term()
            node = ("+", node, rhs if tok[1] == "+" else ("neg", rhs))
        self.depth -= 1
        return node

    def _starts_atom(self, tok) -> bool:
        kind, val = tok
        return kind in ("num", "var") or val in ("(", "{", "\\frac", "\\sqrt", "\\pi", "\\infty", "\\binom") or (
            val in _FUNCTIONS)

    def term(self):
        node = self.unary()
        while (tok := self.peek()) is not None:
            val = tok[1]
            if val in ("*", "\\cdot", "\\times"):
                self.i += 1
                node = ("*", node, self.unary())
            elif val in ("/", "\\div"):
                self.i += 1
                node = ("/", node, self.unary())
            elif self._starts_atom(tok):
                node = ("*", node, self.power())
            else:
                break
        return node

    def unary(self):
        tok = self.peek()
        if tok is not None and tok[1] == "-":
            self.i += 1
            return ("neg", self.unary())
        if tok is not None and tok[1] == "+":
            self.i += 1
            return self.unary()
        return self.power()

    def power(self):
        base = self.atom()
        while (tok := self.peek()) is not None and tok[1] == "!":
            self.i += 1
            base = ("!", base)
        tok = self.peek()
        if tok is not None and tok[1] == "^":
            self.i += 1
            nxt = self.peek()
            if nxt is not None and nxt[1] == "-":
                self.i += 1
                exp = ("neg", self.power())
            else:
                exp = self.power()
            return ("^", base, exp)
        return base

    def group(self):
        tok = self.peek()
        if tok is None:
            raise _Unsupported("missing group")
        if tok[1] == "{":
            self.i += 1
            node = self.expr()
            self.take("}")
            return node
        if tok[0] == "num" and "." not in tok[1] and len(tok[1]) > 1:
            # \frac123 reads one digit at a time in LaTeX; rare, leave it to sympy
            raise _Unsupported("multi-digit bare group")
        return self.atom()

    def function(self, name: str):
        base = None
        nxt = self.peek()
        if nxt is not None and nxt[1] == "_":
            if name != "log":
                raise _Unsupported("subscript")
            self.i += 1
            base = self.group()
        elif name == "log":
            raise _Unsupported("log without a base")  # base 10 or e depends on the author
        nxt = self.peek()
        if nxt is None or nxt[1] == "^":
            raise _Unsupported("function power")  # \sin^2 x
        if nxt[1] in ("(", "{"):
            arg = self.atom()
        else:
            # \log_2 8, \sin x; but "\sin 2x" is ambiguous (sin(2x) or sin(2)x): leave it to sympy
            arg = self.power()
            after = self.peek()
            if after is not None and self._starts_atom(after):
                raise _Unsupported("ambiguous function argument")
        return ("fn", name, arg, base)

    def atom(self):
        tok = self.peek()
        if tok is None:
            raise _Unsupported("unexpected end")
        kind, val = tok
        self.i += 1
        if kind == "num":
            try:
                return ("n", Fraction(val))
            except (ValueError, ZeroDivisionError) as exc:
                raise _Unsupported(val) from exc
        if kind == "var":
            if val in ("e", "i"):  # in a final answer these are Euler's number and the imaginary unit
                return ("c", val)
            self.vars.add(val)
            return ("v", val)
        if val in ("(", "{", "["):
            close = {"(": ")", "{": "}", "[": "]"}[val]
            node = self.expr()
            self.take(close)
            return node
        if val == "\\frac":
            num = self.group()
            den = self.group()
            return ("/", num, den)
        if val == "\\sqrt":
            index = None
            nxt = self.peek()
            if nxt is not None and nxt[1] == "[":
                self.i += 1
                index = self.expr()
                self.take("]")
            return ("sqrt", self.group(), index)
        if val in _CONSTANTS:
            return ("c", _CONSTANTS[val])
        if val == "\\binom":
            return ("binom", self.group(), self.group())
        if val in _FUNCTIONS:
            return self.function(_FUNCTIONS[val])
        raise _Unsupported(val)


@lru_cache(maxsize=CACHE_SIZE)
def _parse_scalar(s: str):
    """(ast, sorted variable names) for a canonical scalar string; raises _Unsupported/_TooHard."""
    if not s or len(s) > 400:
        raise _Unsupported("size")
    m = _MIXED_PLAIN_RE.match(s) or _MIXED_TEX_RE.match(s)
    if m:
        sign, whole, num, den = m.groups()
        if int(den) == 0:
            raise _Unsupported("zero denominator")
        value = int(whole) + Fraction(int(num), int(den))
        return ("n", -value if sign else value), ()
    m = _REPEATING_RE.match(s)
    if m:
        sign, whole, fixed, rep1, rep2 = m.groups()
        rep = rep1 or rep2
        value = Fraction(int(whole or "0")) + (Fraction(int(fixed), 10 ** len(fixed)) if fixed else 0)
        value += Fraction(int(rep), (10 ** len(rep) - 1) * 10 ** len(fixed))
        return ("n", -value if sign else value), ()
    parser = _Parser(_tokenize(s))
    node = parser.parse()
    return node, tuple(sorted(parser.vars))


def _pow(base, exp):
    if isinstance(base, Fraction) and isinstance(exp, Fraction):
        if exp.denominator == 1:
            e = exp.numerator
            if base == 0 and e < 0:
                raise ZeroDivisionError
            if base in (0, 1):
                return base
            if base == -1:
                return Fraction(1 if e % 2 == 0 else -1)
            bits = max(base.numerator.bit_length(), base.denominator.bit_length())
            if bits * abs(e) > _MAX_POW_BITS:
                raise _TooHard("power too large")
            return base**e
        if base >= 0 and exp.denominator <= 12 and abs(exp.numerator) <= 64:
            root = _exact_root(base, exp.denominator)
            if root is not None:
                return _pow(root, Fraction(exp.numerator))
    b = complex(_to_complex(base))
    e = complex(_to_complex(exp))
    if abs(e) > 1e4 and abs(b) not in (0.0, 1.0):
        raise _TooHard("power too large")
    if b == 0:
        if e.real > 0:
            return 0j
        raise ZeroDivisionError
    try:
        if b.imag == 0 and b.real > 0 and e.imag == 0:
            return complex(math.pow(b.real, e.real))
        return b**e
    except OverflowError as exc:
        raise _TooHard("overflow") from exc


def _exact_root(value: Fraction, n: int) -> Fraction | None:
    if value < 0:
        return None
    num = _int_root(value.numerator, n)
    den = _int_root(value.denominator, n)
    if num is None or den is None:
        return None
    return Fraction(num, den)


def _int_root(k: int, n: int) -> int | None:
    if k.bit_length() > 2048:
        return None
    if k >= 2**1000 and n != 2:
        return None
    r = round(k ** (1.0 / n)) if k < 2**1000 else math.isqrt(k)
    for cand in (r - 1, r, r + 1):
        if cand >= 0 and cand**n == k:
            return cand
    return None


def _to_complex(v) -> complex:
    if isinstance(v, Fraction):
        try:
            return complex(v.numerator / v.denominator)
        except OverflowError as exc:
            raise _TooHard("overflow") from exc
    return complex(v)


def _function(name: str, x, base) -> complex:
    if name == "exp":
        z = _to_complex(x)
        if abs(z) > 700:
            raise _TooHard("exp overflow")
        return cmath.exp(z)
    if name in ("sin", "cos", "tan"):
        z = _to_complex(x)
        if abs(z.imag) > 700:
            raise _TooHard("overflow")
        return getattr(cmath, name)(z)
    z = _to_complex(x)
    if z == 0:
        raise _Unsupported("log of zero")
    if name == "ln":
        return cmath.log(z)
    b = _to_complex(base)
    if b == 0 or b == 1:
        raise _Unsupported("log base")
    return cmath.log(z) / cmath.log(b)


def _evaluate(node, env: dict[str, complex]):
    op = node[0]
    if op == "n":
        return node[1]
    if op == "v":
        return env[node[1]]
    if op == "c":
        if node[1] == "pi":
            return complex(math.pi)
        if node[1] == "e":
            return complex(math.e)
        if node[1] == "i":
            return 1j
        raise _Unsupported("infinity inside an expression")
    if op == "neg":
        return -_evaluate(node[1], env)
    if op == "fn":
        return _function(node[1], _evaluate(node[2], env), None if node[3] is None else _evaluate(node[3], env))
    a = _evaluate(node[1], env) if op != "sqrt" else None
    if op == "+":
        b = _evaluate(node[2], env)
        return a + b if type(a) is type(b) else _to_complex(a) + _to_complex(b)
    if op == "*":
        b = _evaluate(node[2], env)
        return a * b if type(a) is type(b) else _to_complex(a) * _to_complex(b)
    if op == "/":
        b = _evaluate(node[2], env)
        if b == 0:
            raise ZeroDivisionError
        return a / b if type(a) is type(b) else _to_complex(a) / _to_complex(b)
    if op == "^":
        return _pow(a, _evaluate(node[2], env))
    if op == "!":
        if not (isinstance(a, Fraction) and a.denominator == 1 and a >= 0):
            raise _Unsupported("factorial of a non-integer")
        if a > _MAX_FACTORIAL:
            raise _TooHard("factorial too large")
        return Fraction(math.factorial(int(a)))
    if op == "binom":
        n, k = a, _evaluate(node[2], env)
        if not all(isinstance(v, Fraction) and v.denominator == 1 for v in (n, k)) or n < 0:
            raise _Unsupported("binomial of non-integers")
        if n > _MAX_BINOM:
            raise _TooHard("binomial too large")
        return Fraction(math.comb(int(n), int(k)) if k >= 0 else 0)
    if op == "sqrt":
        radicand = _evaluate(node[1], env)
        index = _evaluate(node[2], env) if node[2] is not None else Fraction(2)
        if isinstance(index, Fraction) and index.denominator == 1 and index.numerator > 0:
            if index == 2 and not isinstance(radicand, Fraction):
                return cmath.sqrt(radicand)
            return _pow(radicand, Fraction(1, index.numerator))
        return _pow(radicand, 1 / _to_complex(index))
    raise _Unsupported(op)


# Three fixed assignments for free variables: irrational-looking, distinct per variable, away
# from the usual singular points (0, 1, -1, small integers); the second one negative, so that
# sqrt(x^2) is not taken for x.
_POINTS = (0.6180339887, 1.4142135623, 2.7182818285, 0.3183098862, 1.7320508076, 2.2360679775)


def _values(node, names: tuple[str, ...]) -> list:
    if not names:
        return [_evaluate(node, {})]
    out = []
    for trial in range(3):
        sign = -1.0 if trial == 1 else 1.0
        env = {name: complex(sign * (_POINTS[(k + 2 * trial) % len(_POINTS)] + 0.37 * trial + 0.11 * k))
               for k, name in enumerate(names)}
        out.append(_evaluate(node, env))
    return out


def _close(a, b) -> bool:
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a == b
    ca, cb = _to_complex(a), _to_complex(b)
    if not (cmath.isfinite(ca) and cmath.isfinite(cb)):
        raise _TooHard("non-finite")
    return abs(ca - cb) <= 1e-9 * max(1.0, abs(ca), abs(cb))


def _is_infinity(node) -> int:
    if node == ("c", "inf"):
        return 1
    if node[0] == "neg" and node[1] == ("c", "inf"):
        return -1
    return 0


def _numeric_equal(pred: str, gold: str, pred_pct: bool, gold_pct: bool) -> bool:
    """True/False when the evaluator reads both; raises _Unsupported or _TooHard otherwise."""
    pnode, pvars = _parse_scalar(pred)
    gnode, gvars = _parse_scalar(gold)
    pinf, ginf = _is_infinity(pnode), _is_infinity(gnode)
    if pinf or ginf:
        return pinf == ginf
    names = tuple(sorted(set(pvars) | set(gvars)))
    try:
        pvals = _values(pnode, names)
        gvals = _values(gnode, names)
    except (ZeroDivisionError, KeyError, ValueError, TypeError) as exc:
        raise _Unsupported("evaluation") from exc
    if all(_close(p, g) for p, g in zip(pvals, gvals)):
        return True
    if names or pred_pct == gold_pct:
        return False
    # one side carries % and the other not: "50%" answers "50" and "0.5"
    hundred = Fraction(100)
    if pred_pct:
        return _close(pvals[0], gvals[0] * hundred) if isinstance(gvals[0], Fraction) else _close(
            _to_complex(pvals[0]), _to_complex(gvals[0]) * 100)
    return _close(gvals[0], pvals[0] * hundred) if isinstance(pvals[0], Fraction) else _close(
        _to_complex(gvals[0]), _to_complex(pvals[0]) * 100)


# ----------------------------------------------------------------------------------------------
# structure: tuples, sets, intervals, matrices, lists
# ----------------------------------------------------------------------------------------------

_OPEN = {"(": ")", "[": "]", "\x01": "\x02"}
_MATRIX_RE = re.compile(r"^\\begin\{([pbvB]?matrix|array)\}(?:\{[^}]*\})?(.*)\\end\{\1\}$", re.S)


def _split_top(s: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(s):
        c = s[i]
        if c in "([{\x01":
            depth += 1
        elif c in ")]}\x02":
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            start = i + len(sep)
            i += len(sep)
            continue
        i += 1
    parts.append(s[start:])
    return parts


def _encloses(s: str) -> bool:
    """s[0] opens a bracket that closes exactly at s[-1] (any bracket type: intervals mix them)."""
    if len(s) < 2 or s[0] not in _OPEN or s[-1] not in ")]\x02":
        return False
    depth = 0
    for i, c in enumerate(s):
        if c in "([{\x01":
            depth += 1
        elif c in ")]}\x02":
            depth -= 1
            if depth == 0 and i != len(s) - 1:
                return False
    return depth == 0


def _structure(s: str):
    """('scalar', s) | ('set', items) | ('seq', open, close, items) | ('list', items) |
    ('union', parts) | ('matrix', rows)."""
    m = _MATRIX_RE.match(s)
    if m:
        rows = [r for r in m.group(2).split("\x03") if r.strip()]
        return ("matrix", tuple(tuple(c.strip() for c in r.split("&")) for r in rows))
    if "\\cup" in s:
        parts = _split_top(s, "\\cup")
        if len(parts) > 1:
            return ("union", tuple(p.strip() for p in parts))
    if _encloses(s):
        inner = s[1:-1]
        items = tuple(p.strip() for p in _split_top(inner, ","))
        if s[0] == "\x01":
            return ("set", items)
        if len(items) > 1:
            return ("seq", s[0], s[-1], items)
        return ("scalar", s)
    items = _split_top(s, ",")
    if len(items) > 1:
        return ("list", tuple(p.strip() for p in items))
    return ("scalar", s)


# ----------------------------------------------------------------------------------------------
# symbolic back end (math-verify) with guard and time limit
# ----------------------------------------------------------------------------------------------

_TOWER_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\(?[\d.]+\^|\*\*[^*]*\*\*")
_BIG_INT_RE = re.compile(r"\d{16,}")
_FACTORIAL_RE = re.compile(r"(\d+)\s*!")


def _too_complex(s: str) -> bool:
    """Inputs whose sympy evaluation could run away (exponent towers, huge literals or powers,
    big factorials, deep nesting). These are never handed to sympy."""
    if len(s) > 300 or s.count("^") > 8:
        return True
    if _TOWER_RE.search(s) or _BIG_INT_RE.search(s):
        return True
    for m in re.finditer(r"\^\s*\{?\s*-?(\d+)", s):
        if int(m.group(1)) > 200:
            return True
    for m in _FACTORIAL_RE.finditer(s):
        if int(m.group(1)) > 200:
            return True
    depth = max_depth = 0
    for c in s:
        if c in "({[":
            depth += 1
            max_depth = max(max_depth, depth)
        elif c in ")}]":
            depth -= 1
    return max_depth > 12


class _SymbolicTimeout(BaseException):
    """BaseException so that math-verify's own `except Exception` cannot swallow it."""


def _raise_timeout(signum, frame):
    raise _SymbolicTimeout()


_math_verify = None
_SYMBOLIC_CALLS = [0]  # comparisons handed to math-verify since import (benchmarks report it)


def symbolic_calls() -> int:
    """How many comparisons reached the math-verify back end in this process."""
    return _SYMBOLIC_CALLS[0]


def _load_math_verify():
    global _math_verify
    if _math_verify is None:
        import math_verify
        import math_verify.grader
        import math_verify.parser

        # We bound the time ourselves (below); silence its one-time "timeout disabled" warning.
        math_verify.parser.TIMEOUT_WARNING_SHOWN = True
        math_verify.grader.TIMEOUT_WARNING_SHOWN = True
        _math_verify = math_verify
    return _math_verify


def _restore_latex(s: str) -> str:
    return s.replace("\x01", "\\{").replace("\x02", "\\}").replace("\x03", "\\\\")


def _symbolic_equal(pred: str, gold: str) -> bool:
    if _too_complex(pred) or _too_complex(gold):
        return False
    _SYMBOLIC_CALLS[0] += 1
    mv = _load_math_verify()
    pred_tex = "$" + _restore_latex(pred) + "$"
    gold_tex = "$" + _restore_latex(gold) + "$"

    def run() -> bool:
        cfg = [mv.LatexExtractionConfig(), mv.ExprExtractionConfig()]
        g = mv.parse(gold_tex, extraction_config=cfg, parsing_timeout=None)
        p = mv.parse(pred_tex, extraction_config=cfg, parsing_timeout=None)
        if not g or not p:
            return False
        return bool(mv.verify(g, p, timeout_seconds=None))

    if threading.current_thread() is not threading.main_thread():
        try:
            return run()
        except Exception:
            return False
    old_handler = signal.signal(signal.SIGALRM, _raise_timeout)
    old_timer = signal.setitimer(signal.ITIMER_REAL, SYMBOLIC_TIMEOUT_S)
    try:
        return run()
    except (_SymbolicTimeout, Exception):
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_timer[0] > 0:  # somebody else's timer was running: give it back what was left
            signal.setitimer(signal.ITIMER_REAL, max(old_timer[0] - SYMBOLIC_TIMEOUT_S, 0.001), old_timer[1])


# ----------------------------------------------------------------------------------------------
# comparison
# ----------------------------------------------------------------------------------------------


def _text_key(s: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", s.lower())


def _is_texty(s: str) -> bool:
    """A word answer ("Monday", "no solution"): a run of 3+ letters that is not a LaTeX command."""
    return bool(re.search(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}", s))


def _scalar_equal(pred: str, gold: str, pred_pct: bool, gold_pct: bool, kind: str) -> bool:
    if pred == gold and pred_pct == gold_pct:
        return True
    if _is_texty(pred) or _is_texty(gold):
        # words are compared as words, never as products of one-letter variables
        return _text_key(pred) == _text_key(gold) and _text_key(gold) != ""
    try:
        return _numeric_equal(pred, gold, pred_pct, gold_pct)
    except _TooHard:
        return False
    except (_Unsupported, RecursionError, OverflowError):
        pass
    if kind == "task":
        return False
    return _symbolic_equal(pred, gold)


def _items_equal(pred_items, gold_items, kind: str) -> bool:
    if len(pred_items) != len(gold_items):
        return False
    return all(_value_equal(p, g, False, False, kind) for p, g in zip(pred_items, gold_items))


def _unordered_equal(pred_items, gold_items, kind: str) -> bool:
    if len(pred_items) != len(gold_items):
        return False
    remaining = list(gold_items)
    for p in pred_items:
        for j, g in enumerate(remaining):
            if _value_equal(p, g, False, False, kind):
                del remaining[j]
                break
        else:
            return False
    return True


def _value_equal(pred: str, gold: str, pred_pct: bool, gold_pct: bool, kind: str) -> bool:
    ps, gs = _structure(pred), _structure(gold)
    if ps[0] == "scalar" and gs[0] == "scalar":
        return _scalar_equal(_strip_assignment(pred), _strip_assignment(gold), pred_pct, gold_pct, kind)
    if ps[0] != gs[0]:
        # a bare list "1, 2" answers a set "{1, 2}" (MATH's "enter all solutions")
        if {ps[0], gs[0]} == {"set", "list"}:
            return _unordered_equal(ps[1], gs[1], kind)
        if "scalar" in (ps[0], gs[0]):
            # one value against several: unequal, unless the single one is something the evaluator
            # cannot read and may stand for several ("\\pm 3", "x^2 = 4", "x \\in ...")
            scalar = pred if ps[0] == "scalar" else gold
            try:
                _parse_scalar(_strip_assignment(scalar))
                return False
            except (_Unsupported, _TooHard, RecursionError):
                return kind != "task" and _symbolic_equal(pred, gold)
        return False
    if ps[0] in ("set", "list"):
        return _unordered_equal(ps[1], gs[1], kind)
    if ps[0] == "seq":
        return ps[1] == gs[1] and ps[2] == gs[2] and _items_equal(ps[3], gs[3], kind)
    if ps[0] == "union":
        return _items_equal(ps[1], gs[1], kind)
    if ps[0] == "matrix":
        return len(ps[1]) == len(gs[1]) and all(_items_equal(p, g, kind) for p, g in zip(ps[1], gs[1]))
    return False


def _strip_assignment(s: str) -> str:
    m = _ASSIGN_RE.match(s)
    return m.group(1).strip() if m and "=" not in m.group(1) else s


_GSM_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+")


def _gsm8k_number(s: str) -> str | None:
    """The number a GSM8K answer span states: the whole span when it is one, else the result
    after the last '=' or the first number ("18 dollars per day" -> 18)."""
    if "=" in s:
        s = s.rsplit("=", 1)[1]
    m = _GSM_NUMBER_RE.search(s)
    return m.group(0).replace(" ", "") if m else None


def _choice_letter(s: str) -> str | None:
    m = _CHOICE_RE.match(s.strip())
    return m.group(1).upper() if m else None


@lru_cache(maxsize=CACHE_SIZE)
def _verdict(pred_answer: str, gold_answer: str, kind: str) -> bool:
    pred, pred_pct = _normalize(pred_answer, kind)
    gold, gold_pct = _normalize(gold_answer, kind)
    if not pred or not gold:
        return False
    if kind == "task":  # before the shortcut: normalization drops trailing words, which task text keeps
        return _task_equal(pred_answer, gold_answer, pred, gold, pred_pct, gold_pct)
    if pred == gold and pred_pct == gold_pct:
        return True
    # multiple choice: a gold that is one letter A-E
    if kind != "task" and re.fullmatch(r"\(?[A-E]\)?", gold):
        letter = _choice_letter(pred)
        return letter is not None and letter == gold.strip("()")
    if kind == "gsm8k" and re.fullmatch(r"-?\d+(?:\.\d+)?", gold):
        try:
            if _numeric_equal(pred, gold, pred_pct, gold_pct):
                return True
        except (_Unsupported, _TooHard, RecursionError, OverflowError):
            pass
        number = _gsm8k_number(pred)
        if number is None or number == pred:
            return False
        try:
            return _numeric_equal(number, gold, pred_pct, gold_pct)
        except (_Unsupported, _TooHard, RecursionError, OverflowError):
            return False
    try:
        return _value_equal(pred, gold, pred_pct, gold_pct, kind)
    except RecursionError:
        return False


_TASK_NUMBER_RE = re.compile(r"-?\d+(?:/\d+)?")
_QR_GOLD_RE = re.compile(r"(-?\d+) R (\d+)")
_QR_PRED_RE = re.compile(
    r"(?i)(?:the\s+)?(?:quotient\s*(?:is|=|:)?\s*)?(-?\d+)\s*[,;]?\s*(?:and\s+)?(?:the\s+)?"
    r"(?:r|rem\.?|remainder)\s*(?:is|=|:|of)?\s*(\d+)"
)


def _task_equal(pred_answer: str, gold_answer: str, pred: str, gold: str, pred_pct: bool, gold_pct: bool) -> bool:
    """Loop-fix task golds (generators/): the format is part of the answer where the task asks for one.

    "253 R 9" (quotient and remainder; "253 remainder 9" reads the same); a decimal to N places
    (the digits exactly, trailing zeros kept: 0.1428570000... is a runaway, not the answer); a
    repeating expansion "0.1(6)" (any marked repeating notation of the same value, not "1/6"); an
    integer or fraction (by value); anything else is text (letter removal), exact up to surrounding
    quotes, markup, whitespace and a final period.
    """
    g = gold_answer.strip()
    m = _QR_GOLD_RE.fullmatch(g)
    if m:
        pm = _QR_PRED_RE.fullmatch(_task_text(pred_answer))
        return bool(pm) and int(pm.group(1)) == int(m.group(1)) and int(pm.group(2)) == int(m.group(2))
    if re.fullmatch(r"-?\d*\.\d+", g):
        return pred == gold
    if _REPEATING_RE.match(gold):
        if not (_REPEATING_RE.match(pred) or re.fullmatch(r"-?\d*\.\d+", pred)):
            return False
        try:
            return _numeric_equal(pred, gold, False, False)
        except (_Unsupported, _TooHard):
            return False
    if _TASK_NUMBER_RE.fullmatch(g):
        try:
            return _value_equal(pred, gold, pred_pct, gold_pct, "task")
        except RecursionError:
            return False
    return _task_text(pred_answer) == _task_text(gold_answer)


def _task_text(s: str) -> str:
    s = _unwrap_text_commands(s).strip().strip("*_`$ \t").rstrip(".")
    s = s.strip("\"'“”‘’ ")
    return re.sub(r"\s+", " ", s)


def _gold_answer(gold: str, kind: str) -> str:
    """A gold that is a whole solution (GSM8K's '... #### 72', a boxed MATH solution) -> its answer."""
    if "####" in gold or "\\boxed" in gold or "\\fbox" in gold or re.search(r"(?i)final answer", gold):
        ans = extract_answer(gold, kind)
        if ans is not None:
            return ans
    return _strip_answer(gold)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")


def is_equivalent(pred_text: str, gold: str, kind: str = "math") -> bool:
    """Whether the final answer in a model's whole output equals the gold answer.

    Never raises on any text and never hangs: undecidable or pathological comparisons are False.
    """
    _check_kind(kind)
    if pred_text is None or gold is None:
        return False
    answer = extract_answer(pred_text, kind)
    if answer is None:
        return False
    return answers_equal(answer, gold, kind)


def answers_equal(answer: str, gold: str, kind: str = "math") -> bool:
    """Compare an already extracted answer with the gold (cached per (answer, gold, kind))."""
    _check_kind(kind)
    try:
        gold_answer = _gold_answer(gold, kind)
        if len(answer) > MAX_ANSWER_CHARS or len(gold_answer) > MAX_ANSWER_CHARS:
            return False  # a runaway, not an answer; and no giant keys in the cache
        return _verdict(answer, gold_answer, kind)
    except Exception:  # the contract is a verdict for any text, never an exception
        return False


def clear_cache() -> None:
    """Forget cached verdicts and parses (benchmarks measure cold and warm)."""
    _verdict.cache_clear()
    _normalize.cache_clear()
    _parse_scalar.cache_clear()


def cache_info():
    return _verdict.cache_info()
