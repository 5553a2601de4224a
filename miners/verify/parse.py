"""The parser of miners.verify.exact: a canonical answer string -> a small expression tree.

    from miners.verify.parse import parse_scalar
    parse_scalar("2\\sqrt{x}+1")
    # -> (('+', ('*', ('n', Fraction(2, 1)), ('sqrt', ('v', 'x'), None)), ('n', Fraction(1, 1))), ('x',))

The grammar of final answers: numbers (exact Fractions), mixed numbers, repeating decimals, \\frac,
\\sqrt[n], powers, implicit products, n!, \\binom, \\log_b, \\ln, \\exp, trig functions (and their
powers, \\sec^2 x), pi, e, i, infinity, variables. Anything else raises Unsupported (the symbolic back
end may read it); nesting past _MAX_DEPTH raises TooHard.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

# Entries of each of the verifier's caches (parsed and normalized answers, comparisons), one bound for all.
CACHE_SIZE = 65536

_MIXED_PLAIN_RE = re.compile(r"^(-?)(\d+)\s+(\d+)\s*/\s*(\d+)$")
_MIXED_TEX_RE = re.compile(r"^(-?)(\d+)\s*\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}$")
REPEATING_RE = re.compile(r"^(-?)(\d*)\.(\d*)(?:\\overline\{(\d+)\}|\((\d+)\))$")


def numeral_fraction(numeral: str) -> Fraction:
    """Fraction(numeral), a whole number of ASCII digits read as int (Fraction's string reader is a
    regex and several steps; the value is the same)."""
    if numeral.isascii() and numeral.isdigit():
        return Fraction(int(numeral))
    return Fraction(numeral)


class Unsupported(Exception):
    """The evaluator does not read this; the symbolic back end may."""


class TooHard(Exception):
    """Evaluating would build an enormous number: the comparison is undecided, never unequal, and
    sympy is not asked (miners.verify.compare.TooLarge)."""


_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
    r"|(?P<cmd>\\[a-zA-Z]+)|(?P<var>[a-zA-Z](?:_\{[a-zA-Z0-9]+\}|_[a-zA-Z0-9])?'*)|(?P<op>[-+*/^(){}\[\]_!]))"
)
_CONSTANTS = {"\\pi": "pi", "\\infty": "inf"}
_FUNCTIONS = {
    "\\ln": "ln",
    "\\log": "log",
    "\\exp": "exp",
    "\\sin": "sin",
    "\\cos": "cos",
    "\\tan": "tan",
    "\\sec": "sec",
    "\\csc": "csc",
    "\\cot": "cot",
}
TRIG = {"sin", "cos", "tan", "sec", "csc", "cot"}
_KNOWN_COMMANDS = frozenset(
    {"\\frac", "\\sqrt", "\\pi", "\\infty", "\\cdot", "\\times", "\\div", "\\binom", "\\dbinom", "\\tbinom"}
    | set(_FUNCTIONS)
)
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
            raise Unsupported(s[pos:])
        kind = m.lastgroup
        assert kind is not None  # every alternative of _TOKEN_RE is a named group
        val = m.group(kind)
        if kind == "cmd" and val not in _KNOWN_COMMANDS:
            raise Unsupported(val)
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
            raise Unsupported(f"expected {val}")
        self.i += 1
        return tok

    def parse(self):
        node = self.expr()
        if self.i != len(self.toks):
            raise Unsupported("trailing tokens")
        return node

    def expr(self):
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise TooHard("nesting")
        node = self.term()
        while (tok := self.peek()) is not None and tok[1] in ("+", "-"):
            self.i += 1
            rhs = self.term()
            node = ("+", node, rhs if tok[1] == "+" else ("neg", rhs))
        self.depth -= 1
        return node

    def _starts_atom(self, tok) -> bool:
        kind, val = tok
        return (
            kind in ("num", "var")
            or val in ("(", "{", "\\frac", "\\sqrt", "\\pi", "\\infty", "\\binom")
            or (val in _FUNCTIONS)
        )

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
            raise Unsupported("missing group")
        if tok[1] == "{":
            self.i += 1
            node = self.expr()
            self.take("}")
            return node
        if tok[0] == "num" and "." not in tok[1] and len(tok[1]) > 1:
            # \frac123 reads one digit at a time in LaTeX; rare, leave it to sympy
            raise Unsupported("multi-digit bare group")
        return self.atom()

    def function(self, name: str):
        base = None
        nxt = self.peek()
        if nxt is not None and nxt[1] == "_":
            if name != "log":
                raise Unsupported("subscript")
            self.i += 1
            base = self.group()
        elif name == "log":
            raise Unsupported("log without a base")  # base 10 or e depends on the author
        nxt = self.peek()
        power = None
        if nxt is not None and nxt[1] == "^" and name in TRIG:  # \sec^2(y): a power of the value
            self.i += 1
            power = self.group()
            nxt = self.peek()
        if nxt is None or nxt[1] == "^":
            raise Unsupported("function power")
        if nxt[1] in ("(", "{"):
            arg = self.atom()
        else:
            # \log_2 8, \sin x; but "\sin 2x" is ambiguous (sin(2x) or sin(2)x): leave it to sympy
            arg = self.power()
            after = self.peek()
            if after is not None and self._starts_atom(after):
                raise Unsupported("ambiguous function argument")
        node = ("fn", name, arg, base)
        return node if power is None else ("^", node, power)

    def atom(self):
        tok = self.peek()
        if tok is None:
            raise Unsupported("unexpected end")
        kind, val = tok
        self.i += 1
        if kind == "num":
            try:
                return ("n", numeral_fraction(val))
            except (ValueError, ZeroDivisionError) as exc:
                raise Unsupported(val) from exc
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
        raise Unsupported(val)


@lru_cache(maxsize=CACHE_SIZE)
def parse_scalar(s: str):
    """(ast, sorted variable names) for a canonical scalar string; raises Unsupported/TooHard."""
    if not s or len(s) > 400:
        raise Unsupported("size")
    m = _MIXED_PLAIN_RE.match(s) or _MIXED_TEX_RE.match(s)
    if m:
        sign, whole, num, den = m.groups()
        if int(den) == 0:
            raise Unsupported("zero denominator")
        value = int(whole) + Fraction(int(num), int(den))
        return ("n", -value if sign else value), ()
    m = REPEATING_RE.match(s)
    if m:
        sign, whole, fixed, rep1, rep2 = m.groups()
        rep = rep1 or rep2
        value = Fraction(int(whole or "0")) + (Fraction(int(fixed), 10 ** len(fixed)) if fixed else 0)
        value += Fraction(int(rep), (10 ** len(rep) - 1) * 10 ** len(fixed))
        return ("n", -value if sign else value), ()
    parser = _Parser(_tokenize(s))
    node = parser.parse()
    return node, tuple(sorted(parser.vars))
