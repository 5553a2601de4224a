"""The exact evaluator of miners.verify: the usual final-answer grammar, evaluated without sympy.

    from miners.verify.exact import numeric_equal
    numeric_equal("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", False, False)   # -> True
    numeric_equal("0.333", "\\frac{1}{3}", False, False)                          # -> False

Reads canonical strings (miners.verify.normalize): integers, decimals, scientific notation,
fractions and mixed numbers, repeating decimals, radicals, pi, e, i, powers, implicit products, n!,
\\binom, \\log_b, \\ln, \\exp, \\sin/\\cos/\\tan with a clear argument, variables. Rational values
compare exactly (Fraction); others within 1e-9 relative; expressions with variables at three fixed
points (one negative), so (x+1)^2 and x^2+2x+1 agree. A decimal written with 12 or more significant
digits is a float printout: it equals a value within half a unit of its last digit
(0.0833333333333333 = 1/12; 0.333 is not 1/3). Sizes are capped (powers, factorials, binomials):
past the cap the evaluation raises TooHard and the verdict is "not equal". What the grammar does not
cover raises Unsupported: the caller hands it to the symbolic back end.
"""

from __future__ import annotations

import cmath
import math
import re
from fractions import Fraction
from typing import Any

from miners.verify.parse import TRIG, TooHard, Unsupported, parse_scalar

_MAX_FACTORIAL = 500
_MAX_BINOM = 5000
_MAX_POW_BITS = 4096  # a power that would need more bits than this is "too hard"
# a float printout: many significant digits, maybe times a power of ten
_LONG_DECIMAL_RE = re.compile(
    r"^-?(\d*)\.(\d+)(?:(?:e|E|\\times10\^\{?|\\cdot10\^\{?|\*10\^\{?)(-?\d+)\}?)?$"
)
LONG_DECIMAL_DIGITS = 12


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
                raise TooHard("power too large")
            return base**e
        if exp.denominator > 10**6:
            raise TooHard("root of a huge order")  # 2^(1/2^1000) is not 1, but a float says so
        if base >= 0 and exp.denominator <= 12 and abs(exp.numerator) <= 64:
            root = _exact_root(base, exp.denominator)
            if root is not None:
                return _pow(root, Fraction(exp.numerator))
    b = complex(_to_complex(base))
    e = complex(_to_complex(exp))
    if abs(e) > 1e4 and abs(b) not in (0.0, 1.0):
        raise TooHard("power too large")
    if b == 0:
        if e.real > 0:
            return 0j
        raise ZeroDivisionError
    try:
        if b.imag == 0 and b.real > 0 and e.imag == 0:
            return complex(math.pow(b.real, e.real))
        return b**e
    except OverflowError as exc:
        raise TooHard("overflow") from exc


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
            raise TooHard("overflow") from exc
    return complex(v)


def _function(name: str, x, base) -> complex:
    if name == "exp":
        z = _to_complex(x)
        if abs(z) > 700:
            raise TooHard("exp overflow")
        return cmath.exp(z)
    if name in TRIG:
        z = _to_complex(x)
        if abs(z.imag) > 700:
            raise TooHard("overflow")
        if name in ("sin", "cos", "tan"):
            return getattr(cmath, name)(z)
        value = {"sec": cmath.cos, "csc": cmath.sin, "cot": cmath.tan}[name](z)
        if value == 0:
            raise ZeroDivisionError
        return 1 / value
    z = _to_complex(x)
    if z == 0:
        raise Unsupported("log of zero")
    if name == "ln":
        return cmath.log(z)
    b = _to_complex(base)
    if b == 0 or b == 1:
        raise Unsupported("log base")
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
        raise Unsupported("infinity inside an expression")
    if op == "neg":
        return -_evaluate(node[1], env)
    if op == "fn":
        return _function(
            node[1], _evaluate(node[2], env), None if node[3] is None else _evaluate(node[3], env)
        )
    a: Any = _evaluate(node[1], env) if op != "sqrt" else None
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
            raise Unsupported("factorial of a non-integer")
        if a > _MAX_FACTORIAL:
            raise TooHard("factorial too large")
        return Fraction(math.factorial(int(a)))
    if op == "binom":
        n, k = a, _evaluate(node[2], env)
        if not all(isinstance(v, Fraction) and v.denominator == 1 for v in (n, k)) or n < 0:
            raise Unsupported("binomial of non-integers")
        if n > _MAX_BINOM:
            raise TooHard("binomial too large")
        return Fraction(math.comb(int(n), int(k)) if k >= 0 else 0)
    if op == "sqrt":
        radicand = _evaluate(node[1], env)
        index = _evaluate(node[2], env) if node[2] is not None else Fraction(2)
        if isinstance(index, Fraction) and index.denominator == 1 and index.numerator > 0:
            if index == 2 and not isinstance(radicand, Fraction):
                return cmath.sqrt(radicand)
            return _pow(radicand, Fraction(1, index.numerator))
        return _pow(radicand, 1 / _to_complex(index))
    raise Unsupported(op)


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
        env = {
            name: complex(sign * (_POINTS[(k + 2 * trial) % len(_POINTS)] + 0.37 * trial + 0.11 * k))
            for k, name in enumerate(names)
        }
        out.append(_evaluate(node, env))
    return out


def _close(a, b) -> bool:
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a == b
    ca, cb = _to_complex(a), _to_complex(b)
    if not (cmath.isfinite(ca) and cmath.isfinite(cb)):
        raise TooHard("non-finite")
    return abs(ca - cb) <= 1e-9 * max(1.0, abs(ca), abs(cb))


def _is_infinity(node) -> int:
    if node == ("c", "inf"):
        return 1
    if node[0] == "neg" and node[1] == ("c", "inf"):
        return -1
    return 0


def constant_value(s: str) -> complex | None:
    """The value of a canonical string without variables, or None when it has variables or the
    evaluator cannot read it."""
    try:
        node, names = parse_scalar(s)
        if names:
            return None
        return _to_complex(_values(node, ())[0])
    except (Unsupported, TooHard, ZeroDivisionError, OverflowError, ValueError, TypeError, RecursionError):
        return None


def _decimal_places(s: str) -> int | None:
    """Places after the point of a float printout (shifted by its power of ten), or None when s is
    not a decimal with LONG_DECIMAL_DIGITS or more significant digits."""
    m = _LONG_DECIMAL_RE.match(s)
    if not m:
        return None
    whole, frac, exp = m.groups()
    if len((whole + frac).lstrip("0")) < LONG_DECIMAL_DIGITS:
        return None
    return len(frac) - int(exp or 0)


def _within_last_digit(a, b, places: int) -> bool:
    """|a - b| at most half a unit in the last printed place (plus float noise)."""
    half = Fraction(1, 2 * 10**places) if places >= 0 else Fraction(10 ** (-places), 2)
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return abs(a - b) <= half
    ca, cb = _to_complex(a), _to_complex(b)
    return abs(ca - cb) <= float(half) + 1e-15 * max(abs(ca), abs(cb))


def _times(v, k: Fraction):
    return v * k if isinstance(v, Fraction) else _to_complex(v) * float(k)


def numeric_equal(pred: str, gold: str, pred_pct: bool, gold_pct: bool) -> bool:
    """True/False when the evaluator reads both canonical strings; raises Unsupported or TooHard.

    Percent (the labelling convention): a prediction with % is read both ways ("50%" is 50 in the
    gold's percent unit and 0.5 as a fraction); a bare prediction against a gold with % must be the
    gold's number ("50" for "50%", never "0.5").
    """
    pnode, pvars = parse_scalar(pred)
    gnode, gvars = parse_scalar(gold)
    pinf, ginf = _is_infinity(pnode), _is_infinity(gnode)
    if pinf or ginf:
        return pinf == ginf
    names = tuple(sorted(set(pvars) | set(gvars)))
    try:
        pvals = _values(pnode, names)
        gvals = _values(gnode, names)
    except (ZeroDivisionError, KeyError, ValueError, TypeError) as exc:
        raise Unsupported("evaluation") from exc
    if names:
        return all(_close(p, g) for p, g in zip(pvals, gvals))
    places = [d for d in (_decimal_places(pred), _decimal_places(gold)) if d is not None]

    def same(a, b) -> bool:
        return _close(a, b) or bool(places and _within_last_digit(a, b, min(places)))

    if same(pvals[0], gvals[0]):
        return True
    if pred_pct and not gold_pct:
        return same(_times(pvals[0], Fraction(1, 100)), gvals[0])
    return False


def equation_equal(pred_sides: tuple[str, str], gold_sides: tuple[str, str]) -> bool:
    """Whether two equations describe the same set: lhs - rhs of one is a nonzero constant times
    that of the other (2x+4y-3=0 and y=-x/2+3/4). Raises Unsupported when a side is unreadable."""
    nodes, names = [], set()
    for lhs, rhs in (pred_sides, gold_sides):
        lnode, lvars = parse_scalar(lhs)
        rnode, rvars = parse_scalar(rhs)
        nodes.append(("+", lnode, ("neg", rnode)))
        names |= set(lvars) | set(rvars)
    if not names:
        raise Unsupported("an equation without variables")
    ordered = tuple(sorted(names))
    try:
        fp, fg = _values(nodes[0], ordered), _values(nodes[1], ordered)
    except (ZeroDivisionError, KeyError, ValueError, TypeError) as exc:
        raise Unsupported("evaluation") from exc
    ratios = []
    for p, g in zip(fp, fg):
        cp, cg = _to_complex(p), _to_complex(g)
        if not (cmath.isfinite(cp) and cmath.isfinite(cg)):
            raise Unsupported("non-finite")
        if abs(cg) < 1e-12:
            if abs(cp) > 1e-12:
                return False
            continue
        ratios.append(cp / cg)
    if not ratios:
        return True  # both sides vanish at every point: identities
    return abs(ratios[0]) > 1e-12 and all(
        abs(r - ratios[0]) <= 1e-9 * max(1.0, abs(ratios[0])) for r in ratios
    )
