"""Build the labeled corpus for bench/bench_verify.py (answer verifier vs math-verify).

    .venv/bin/python bench/make_verify_corpus.py            # writes bench/data/verify_corpus.jsonl

Every item is {"id", "kind", "form", "gold", "output", "label"}: a model's whole output, the gold
answer, and whether the output's final answer equals the gold. The label comes from how the pair
was built (the rendering of the same value, or a deliberate perturbation of it, or where in the
output the committed answer sits), never from either verifier. Deterministic: every choice is an
xxhash of (seed, item tag), so the file is byte-identical on every Python version.

Mix (roughly): GSM8K-style multi-line outputs with every answer marker and rendering (thousands
separators, currency, units, decimals, fractions, percentages) plus self-corrections, hallucinated
follow-up questions, answers only in the reasoning and runaway outputs; MATH-style solutions ending in
a LaTeX answer of every listed form (fractions, mixed numbers, radicals, pi, degrees, negatives,
scientific notation, tuples, sets, intervals, text, letters, x = 3, polynomials, ...); loop-fix task
outputs ending in the canonical "Final answer: X" line. Several samples per problem, as mining sees.
"""

from __future__ import annotations

import json
import os
import sys
from fractions import Fraction
from pathlib import Path

import xxhash

SEED = 20261129
OUT = Path(__file__).resolve().parent / "data" / "verify_corpus.jsonl"


def h(*parts) -> int:
    return xxhash.xxh64_intdigest("\x1f".join(str(p) for p in (SEED, *parts)).encode())


def pick(tag, seq):
    return seq[h(tag) % len(seq)]


def rint(tag, lo: int, hi: int) -> int:
    return lo + h(tag) % (hi - lo + 1)


def chance(tag, p: float) -> bool:
    return (h(tag) % 10_000) < p * 10_000


# ------------------------------------------------------------------------------------------------
# GSM8K-style
# ------------------------------------------------------------------------------------------------

NAMES = ["Janet", "Tom", "Maria", "Ahmed", "Li", "Sofia", "Ravi", "Grace", "Omar", "Elena"]
ITEMS = ["apples", "books", "marbles", "stickers", "cookies", "pencils", "eggs", "cards"]


def gsm_problem(tag):
    """(question, reasoning lines, gold value as Fraction, unit word, money?, an intermediate value)."""
    t = h(tag, "template") % 6
    name = pick((tag, "name"), NAMES)
    item = pick((tag, "item"), ITEMS)
    if t == 0:
        a, b, c = rint((tag, "a"), 3, 40), rint((tag, "b"), 2, 12), rint((tag, "c"), 1, 30)
        total = a * b
        gold = total - c
        q = f"{name} buys {a} boxes of {item} with {b} in each box and gives away {c}. How many are left?"
        lines = [f"{name} has {a} x {b} = {total} {item}.", f"After giving away {c}: {total} - {c} = {gold}."]
        return q, lines, Fraction(gold), item, False, total
    if t == 1:
        price = rint((tag, "p"), 12, 480)
        qty = rint((tag, "q"), 3, 60)
        fee = rint((tag, "f"), 5, 95)
        gold = price * qty + fee
        q = (
            f"A ticket costs ${price}. {name} buys {qty} tickets and pays a ${fee} fee. "
            "What is the total cost?"
        )
        lines = [
            f"Tickets: {qty} * ${price} = ${price * qty:,}.",
            f"Total: ${price * qty:,} + ${fee} = ${gold:,}.",
        ]
        return q, lines, Fraction(gold), "dollars", True, price * qty
    if t == 2:
        hours = rint((tag, "h"), 2, 12)
        rate = rint((tag, "r"), 8, 35)
        cents = pick((tag, "c"), [0, 25, 50, 75])
        wage = Fraction(rate * 100 + cents, 100)
        gold = wage * hours
        q = f"{name} earns ${float(wage):.2f} per hour and works {hours} hours. How much does {name} earn?"
        lines = [f"{hours} * {float(wage):.2f} = {float(gold):.2f}."]
        return q, lines, gold, "dollars", True, wage
    if t == 3:
        whole = rint((tag, "w"), 20, 400)
        pct = pick((tag, "pct"), [10, 20, 25, 40, 50, 75])
        part = Fraction(whole * pct, 100)
        gold = whole - part
        q = f"A store has {whole} {item} and sells {pct}% of them. How many {item} remain?"
        lines = [
            f"Sold: {pct}% of {whole} = {_dec(part)}.",
            f"Remaining: {whole} - {_dec(part)} = {_dec(gold)}.",
        ]
        return q, lines, gold, item, False, part
    if t == 4:
        dist = rint((tag, "d"), 30, 600)
        speed = pick((tag, "s"), [4, 5, 8, 10, 16, 20, 25, 40])  # terminating decimals: the gold is exact
        gold = Fraction(dist, speed)
        q = f"{name} travels {dist} km at {speed} km per hour. How many hours does the trip take?"
        lines = [f"Time = distance / speed = {dist} / {speed} = {_dec(gold)} hours."]
        return q, lines, gold, "hours", False, Fraction(dist)
    a, b = rint((tag, "a"), 1200, 98_000), rint((tag, "b"), 100, 9_000)
    gold = a + b
    q = f"A town had {a:,} residents and {b:,} moved in. How many residents are there now?"
    lines = [f"{a:,} + {b:,} = {gold:,}."]
    return q, lines, Fraction(gold), "residents", False, Fraction(a)


def _dec(v: Fraction) -> str:
    if v.denominator == 1:
        return str(v.numerator)
    # exact short decimal when there is one, otherwise 2 places (that is what a model writes)
    for places in range(1, 5):
        if (v * 10**places).denominator == 1:
            return f"{float(v):.{places}f}"
    return f"{float(v):.2f}"


def gsm_render_equal(tag, v: Fraction, unit: str, money: bool) -> tuple[str, str]:
    """A rendering of exactly v: (text, form)."""
    forms = ["plain", "thousands", "units", "decimal_zeros"]
    if money:
        forms += ["currency", "currency_cents"]
    if v.denominator != 1:
        forms += ["fraction"]
    form = pick((tag, "rform"), forms)
    dec = _dec(v)
    if form == "plain":
        return dec, "plain"
    if form == "thousands":
        if v.denominator == 1:
            return f"{v.numerator:,}", "thousands"
        return dec, "plain"
    if form == "units":
        return f"{dec} {unit}", "units"
    if form == "decimal_zeros":
        return (f"{float(v):.2f}" if v.denominator in (1, 2, 4, 5, 10, 20, 25, 50, 100) else dec), "decimal"
    if form == "currency":
        return (f"${v.numerator:,}" if v.denominator == 1 else f"${dec}"), "currency"
    if form == "currency_cents":
        return f"${float(v):,.2f}", "currency"
    if v.denominator != 1 and float(v) != int(v):
        whole = v.numerator // v.denominator
        return f"{v.numerator}/{v.denominator}" if chance((tag, "mixed"), 0.6) else (
            f"{whole} {v.numerator - whole * v.denominator}/{v.denominator}"
        ), "fraction"
    return dec, "plain"


def gsm_wrong(tag, v: Fraction) -> Fraction:
    how = h(tag, "wrong") % 5
    if how == 0:
        w = v + 1
    elif how == 1:
        w = v - pick((tag, "d"), [2, 3, 5, 10])
    elif how == 2:
        w = v * 10 if v < 10_000 else v / 10
    elif how == 3:
        w = -v if v != 0 else Fraction(1)
    else:
        w = v + Fraction(1, 2) if v.denominator == 1 else Fraction(round(v))
    return w if w != v else v + 1


MARKERS = [
    ("final", "Final answer: {x}"),
    ("answer_is", "The answer is {x}."),
    ("hashes", "#### {x}"),
    ("boxed", "So the answer is $\\boxed{{{x}}}$."),
    ("final_md", "**Final Answer:** {x}"),
    ("therefore", "Therefore, the final answer is {x}."),
    ("answer_line", "**Answer:** {x}"),
    ("answer_colon", "The answer is: {x}"),
]


def gsm_items(n_problems: int, samples: int):
    items = []
    for p in range(n_problems):
        tag = ("gsm", p)
        q, lines, gold, unit, money, inter = gsm_problem(tag)
        gold_s = _dec(gold)
        for s in range(samples):
            st = (tag, s)
            scenario = h(st, "scenario") % 100
            marker_name, marker = pick((st, "marker"), MARKERS)
            body = "\n".join(lines)
            if scenario < 42:  # correct, some rendering
                x, form = gsm_render_equal(st, gold, unit, money)
                x = x.replace("$", "\\$") if marker_name == "boxed" else x
                out, label, form = f"{body}\n{marker.format(x=x)}", True, f"gsm_{form}_{marker_name}"
            elif scenario < 72:  # wrong answer, some rendering
                w = gsm_wrong(st, gold)
                x, form = gsm_render_equal(st, w, unit, money)
                x = x.replace("$", "\\$") if marker_name == "boxed" else x
                out, label, form = f"{body}\n{marker.format(x=x)}", False, f"gsm_wrong_{form}_{marker_name}"
            elif scenario < 78:  # self-correction to the right answer
                w = gsm_wrong(st, gold)
                out = (
                    f"{body}\nThe answer is {_dec(w)}.\nWait, let me recheck the last step. "
                    f"{lines[-1]}\nFinal answer: {gold_s}"
                )
                label, form = True, "gsm_selfcorrect_right"
            elif scenario < 83:  # self-correction away from the right answer
                w = gsm_wrong(st, gold)
                out = (
                    f"{body}\nThe answer is {gold_s}.\nHmm, actually I misread the question; "
                    f"recomputing gives {_dec(w)}.\nFinal answer: {_dec(w)}"
                )
                label, form = False, "gsm_selfcorrect_wrong"
            elif scenario < 89:  # hallucinated follow-up question after the real answer
                right = chance((st, "fright"), 0.5)
                w = gsm_wrong(st, gold)
                real = gold_s if right else _dec(w)
                follow = gold_s if not right else _dec(w)
                q2 = f"{pick((st, 'n2'), NAMES)} has {rint((st, 'a2'), 2, 20)} {pick((st, 'i2'), ITEMS)}."
                out = (
                    f"{body}\n{marker.format(x=real)}\n\nQuestion: {q2} How many does she have after "
                    f"buying more?\nAnswer: She has {follow}. The answer is {follow}."
                )
                label, form = right, "gsm_followup_tail"
            elif scenario < 94:  # right number only inside the reasoning, final answer wrong
                w = gsm_wrong(st, gold)
                out = f"{body}\nBut that counts the fee twice, so we subtract again.\nFinal answer: {_dec(w)}"
                label, form = False, "gsm_gold_in_reasoning_only"
            elif scenario < 97:  # intermediate value committed as the answer
                wrong = Fraction(inter) if Fraction(inter) != gold else gold + 7
                out = f"{lines[0]}\nFinal answer: {_dec(wrong)}"
                label, form = False, "gsm_intermediate"
            else:  # runaway: no committed answer, gold digits at the tail
                loop = " ".join([f"{gold_s} - 0 ="] * rint((st, "loop"), 8, 30))
                out = f"{body}\nSo {loop} {gold_s}"
                label, form = False, "gsm_no_final_answer_loop"
            items.append(
                {"kind": "gsm8k", "form": form, "gold": gold_s, "output": out, "label": label, "question": q}
            )
    return items


# ------------------------------------------------------------------------------------------------
# MATH-style
# ------------------------------------------------------------------------------------------------


def _frac(n: int, d: int, cmd: str = "\\frac") -> str:
    return f"{cmd}{{{n}}}{{{d}}}"


def math_case(tag):
    """(form, gold latex, [equal renderings], [unequal renderings])."""
    t = h(tag, "form") % 32
    a, b = rint((tag, "a"), 2, 19), rint((tag, "b"), 2, 19)
    if t == 0:
        n = rint((tag, "n"), 2, 999)
        return "integer", str(n), [str(n), f"{n}.0", f"x = {n}"], [str(n + 1), str(n * 10), str(-n)]
    if t == 1:
        n = -rint((tag, "n"), 1, 99)
        return "negative", str(n), [str(n), f"({n})", f"-{-n}.0"], [str(-n), str(n - 1)]
    if t == 2:
        f = Fraction(a, b + a)
        n, d = f.numerator, f.denominator
        eq = [_frac(n, d), _frac(n, d, "\\dfrac"), _frac(n, d, "\\tfrac"), f"{n}/{d}", _frac(2 * n, 2 * d)]
        if (f * 10000).denominator == 1:
            eq.append(f"{float(f):g}")
        ne = [
            _frac(d, n) if d != n else "2",
            _frac(n + 1, d),
            f"{float(f):.2f}" if (f * 100).denominator != 1 else _frac(n, d + 1),
        ]
        return "fraction", _frac(n, d), eq, ne
    if t == 3:
        whole, n = rint((tag, "w"), 1, 9), a
        d = n + rint((tag, "dd"), 1, 9)
        f = Fraction(whole * d + n, d)
        g = _frac(f.numerator, f.denominator)
        return (
            "mixed_number",
            g,
            [
                f"{whole}\\frac{{{n}}}{{{d}}}",
                f"{whole} \\tfrac{{{n}}}{{{d}}}",
                f"{f.numerator}/{f.denominator}",
            ],
            [f"{whole + 1}\\frac{{{n}}}{{{d}}}", _frac(f.numerator + 1, f.denominator)],
        )
    if t == 4:
        sq = pick((tag, "sq"), [2, 3, 5, 6, 7, 10, 11])
        k = rint((tag, "k"), 2, 6)
        g = f"{k}\\sqrt{{{sq}}}"
        return (
            "radical",
            g,
            [
                g,
                f"\\sqrt{{{k * k * sq}}}",
                f"{k} \\sqrt {sq}" if sq < 10 else f"{k} \\sqrt{{{sq}}}",
                f"\\sqrt{{{sq}}} \\cdot {k}",
            ],
            [f"{k + 1}\\sqrt{{{sq}}}", f"\\sqrt{{{k * sq}}}", f"{k}\\sqrt{{{sq + 1}}}"],
        )
    if t == 5:
        sq = pick((tag, "sq"), [2, 3, 5])
        d = pick((tag, "d"), [2, 3, 4, 6])
        g = f"\\frac{{\\sqrt{{{sq}}}}}{{{d}}}"
        return (
            "radical_fraction",
            g,
            [g, f"\\dfrac{{\\sqrt {sq}}}{{{d}}}", f"\\frac{{1}}{{{d}}}\\sqrt{{{sq}}}", f"\\sqrt{{{sq}}}/{d}"],
            [f"\\frac{{\\sqrt{{{sq}}}}}{{{d + 1}}}", f"\\frac{{{sq}}}{{{d}}}"],
        )
    if t == 6:
        d = pick((tag, "d"), [2, 3, 4, 6, 12])
        n = pick((tag, "n"), [k for k in range(1, 2 * d) if Fraction(k, d).denominator == d])
        coef = "" if n == 1 else str(n)
        g = f"\\frac{{{coef}\\pi}}{{{d}}}"
        eq = [g, f"{coef}\\pi/{d}", f"\\frac{{{n}}}{{{d}}}\\pi", f"\\dfrac{{{n} \\pi}}{{{d}}}"]
        return "pi", g, eq, [f"\\frac{{{coef}\\pi}}{{{d + 1}}}", _frac(n, d), f"{coef}\\pi"]
    if t == 7:
        deg = pick((tag, "deg"), [30, 45, 60, 72, 90, 108, 120, 135, 150])
        return (
            "degrees",
            str(deg),
            [f"{deg}^\\circ", f"{deg}^{{\\circ}}", f"{deg}°", f"{deg} degrees"],
            [f"{deg + 10}^\\circ", f"{180 - deg if 180 - deg != deg else deg + 5}^\\circ"],
        )
    if t == 8:
        mant, e = rint((tag, "m"), 11, 99), rint((tag, "e"), 3, 8)
        val = mant * 10 ** (e - 1)
        g = str(val)
        return (
            "scientific",
            g,
            [f"{mant / 10}\\times 10^{{{e}}}", f"{mant / 10} \\cdot 10^{e}", f"{mant / 10}e{e}", f"{val:,}"],
            [f"{mant / 10}\\times 10^{{{e + 1}}}", f"{mant}\\times 10^{{{e}}}"],
        )
    if t == 9:
        x, y = rint((tag, "x"), -9, 9), rint((tag, "y"), -9, 9)
        y = y if y != x else y + 1
        g = f"({x}, {y})"
        return "tuple", g, [g, f"({x},{y})", f"\\left( {x}, {y} \\right)"], [f"({y}, {x})", f"({x}, {y + 1})"]
    if t == 10:
        xs = sorted({rint((tag, "s", i), -9, 12) for i in range(3)})
        g = "\\{" + ", ".join(map(str, xs)) + "\\}"
        rev = list(reversed(xs))
        return (
            "set",
            g,
            [g, "\\{" + ",".join(map(str, rev)) + "\\}", ", ".join(map(str, rev))],
            [
                "\\{" + ", ".join(map(str, xs[:-1] + [xs[-1] + 1])) + "\\}",
                "\\{" + ", ".join(map(str, xs[1:])) + "\\}",
            ],
        )
    if t == 11:
        lo, hi = rint((tag, "lo"), -9, 3), rint((tag, "hi"), 4, 15)
        lb, rb = pick((tag, "lb"), ["(", "["]), pick((tag, "rb"), [")", "]"])
        g = f"{lb}{lo}, {hi}{rb}"
        flip = {"(": "[", "[": "(", ")": "]", "]": ")"}
        return (
            "interval",
            g,
            [g, f"\\left{lb}{lo},{hi}\\right{rb}"],
            [f"{flip[lb]}{lo}, {hi}{rb}", f"{lb}{lo}, {hi}{flip[rb]}", f"{lb}{lo}, {hi + 1}{rb}"],
        )
    if t == 12:
        hi = rint((tag, "hi"), -5, 9)
        g = f"(-\\infty, {hi}]"
        return (
            "interval_infinite",
            g,
            [g, f"(-\\infty,{hi}]", f"\\left(-\\infty, {hi}\\right]"],
            [f"(-\\infty, {hi})", f"[{hi}, \\infty)"],
        )
    if t == 13:
        word = pick(
            (tag, "w"), ["Monday", "even", "odd", "Tuesday", "Sunday", "no solution", "Cylinder", "right"]
        )
        other = pick((tag, "o"), ["Friday", "neither", "Saturday", "infinite", "Cone", "obtuse"])
        return (
            "text",
            f"\\text{{{word}}}",
            [f"\\text{{{word}}}", word, f"\\textbf{{{word}}}", f"\\text{{{word.lower()}}}"],
            [f"\\text{{{other}}}", other],
        )
    if t == 14:
        letter = pick((tag, "l"), ["A", "B", "C", "D", "E"])
        other = pick((tag, "o"), [c for c in "ABCDE" if c != letter])
        return (
            "choice",
            f"\\text{{({letter})}}",
            [f"\\text{{({letter})}}", f"({letter})", letter, f"\\text{{{letter}}}"],
            [f"({other})", other],
        )
    if t == 15:
        n = rint((tag, "n"), -20, 20)
        var = pick((tag, "v"), ["x", "y", "k", "a", "n"])
        return "assignment", str(n), [f"{var} = {n}", f"{var}={n}"], [f"{var} = {n + 2}", f"{var} = {-n - 1}"]
    if t == 16:
        p = rint((tag, "p"), 5, 95)
        return (
            "percent",
            f"{p}\\%",
            [f"{p}\\%", f"{p}", f"{p}%"],
            [f"{p + 5}\\%", f"{100 - p if 100 - p != p else 3}\\%"],
        )
    if t == 17:
        r = rint((tag, "r"), 1, 6)
        g = f"x^2 + {2 * r}x + {r * r}"
        return (
            "polynomial",
            g,
            [f"(x+{r})^2", f"x^2+{2 * r}x+{r * r}", f"{r * r} + {2 * r}x + x^2"],
            [f"(x-{r})^2", f"x^2 + {r}x + {r * r}", f"(x+{r + 1})^2"],
        )
    if t == 18:
        re_, im = rint((tag, "re"), 1, 9), rint((tag, "im"), 1, 9)
        im = im if im != re_ else im + 1
        g = f"{re_} + {im}i"
        return "complex", g, [f"{re_}+{im}i", f"{im}i + {re_}"], [f"{re_} - {im}i", f"{im} + {re_}i"]
    if t == 19:
        x, y = rint((tag, "x"), -9, 9), rint((tag, "y"), -9, 9)
        g = f"\\begin{{pmatrix}} {x} \\\\ {y} \\end{{pmatrix}}"
        return (
            "matrix",
            g,
            [g, f"\\begin{{pmatrix}}{x}\\\\{y}\\end{{pmatrix}}"],
            [
                f"\\begin{{pmatrix}} {y} \\\\ {x + 100} \\end{{pmatrix}}",
                f"\\begin{{pmatrix}} {x} \\\\ {y + 1} \\end{{pmatrix}}",
            ],
        )
    if t == 20:
        base = pick((tag, "b"), [2, 3, 5])
        e = rint((tag, "e"), 2, 5)
        g = str(e)
        return (
            "log_base",
            g,
            [f"\\log_{{{base}}} {base**e}", f"\\log_{base}({base**e})"],
            [f"\\log_{{{base}}} {base ** (e + 1)}"],
        )
    if t == 22:
        k = pick((tag, "k"), [2, 3, 5, 6, 7])
        g = f"\\frac{{\\sqrt{{{k}}}}}{{{k}}}"
        return (
            "radical_rationalized",
            g,
            [g, f"\\frac{{1}}{{\\sqrt{{{k}}}}}", f"1/\\sqrt{{{k}}}"],
            [f"\\sqrt{{{k}}}", f"\\frac{{1}}{{{k}}}"],
        )
    if t == 23:
        b, e = rint((tag, "b"), 2, 7), rint((tag, "e"), 3, 9)
        return (
            "power",
            str(b**e),
            [f"{b}^{{{e}}}", f"{b}^{e}" if e < 10 else f"{b}^{{{e}}}", str(b**e)],
            [f"{b}^{{{e + 1}}}", str(b**e + b)],
        )
    if t == 24:
        r = rint((tag, "r"), 2, 9)
        g = f"x^2 - {r * r}"
        return (
            "factored",
            g,
            [f"(x-{r})(x+{r})", f"(x+{r})(x-{r})", f"-{r * r}+x^2"],
            [f"(x-{r})^2", f"x^2 - {r}"],
        )
    if t == 25:
        f = Fraction(rint((tag, "n"), 1, 9), rint((tag, "d"), 2, 11))
        if f.denominator == 1:
            f += Fraction(1, 3)
        n, d = f.numerator, f.denominator
        g = f"-\\frac{{{n}}}{{{d}}}"
        return (
            "negative_fraction",
            g,
            [g, f"\\frac{{-{n}}}{{{d}}}", f"-{n}/{d}", f"\\frac{{{n}}}{{-{d}}}"],
            [f"\\frac{{{n}}}{{{d}}}", f"-\\frac{{{d}}}{{{n}}}" if d != n else "-1"],
        )
    if t == 26:
        q = pick(
            (tag, "q"), [Fraction(1, 4), Fraction(3, 4), Fraction(1, 8), Fraction(3, 5), Fraction(1, 20)]
        )
        dec = f"{float(q):g}"
        return (
            "leading_dot_decimal",
            _frac(q.numerator, q.denominator),
            [dec[1:], dec + "0", dec],
            [f"{float(q) + 0.01:g}"[1:], f"{float(q) * 10:g}"],
        )
    if t == 27:
        m, c = rint((tag, "m"), 2, 9), rint((tag, "c"), 1, 9)
        m = m if m != c else m + 1
        g = f"y = {m}x + {c}"
        return "equation", g, [g, f"y={c}+{m}x", f"{m}x+{c}"], [f"y = {c}x + {m}", f"y = {m}x - {c}"]
    if t == 28:
        r1, r2 = rint((tag, "r1"), 1, 9), -rint((tag, "r2"), 1, 9)
        r1 = r1 if r1 != -r2 else r1 + 1
        g = f"{r2}, {r1}"
        return (
            "solution_list",
            g,
            [f"{r1}, {r2}", f"x = {r1}, x = {r2}", f"{r2},{r1}"],
            [f"{-r2}, {-r1}", f"{r1}", f"{r2}, {r1 + 1}"],
        )
    if t == 29:
        a = rint((tag, "a"), 1, 9)
        g = f"\\frac{{x+{a}}}{{x-{a}}}"
        return (
            "rational_function",
            g,
            [f"\\frac{{{a}+x}}{{x-{a}}}", f"(x+{a})/(x-{a})", g],
            [f"\\frac{{x-{a}}}{{x+{a}}}", f"\\frac{{x+{a}}}{{x+{a + 1}}}"],
        )
    if t == 30:
        c = rint((tag, "c"), -9, 9)
        g = f"x > {c}"
        return (
            "inequality_symbolic",
            g,
            [f"{c} < x", f"x>{c}", g],
            [f"x < {c}", f"x \\geq {c}", f"x > {c + 1}"],
        )
    if t == 31:
        k = rint((tag, "k"), 2, 9)
        g = f"\\pm {k}"
        return "plus_minus_symbolic", g, [f"\\pm{k}", f"{k}, -{k}", f"-{k}, {k}"], [f"{k}", f"\\pm {k + 1}"]
    n, k = rint((tag, "n"), 5, 12), rint((tag, "k"), 2, 4)
    from math import comb

    return (
        "binomial",
        str(comb(n, k)),
        [f"\\binom{{{n}}}{{{k}}}", f"\\dbinom{{{n}}}{{{k}}}"],
        [f"\\binom{{{n + 1}}}{{{k}}}"],
    )


MATH_WRAPPERS = [
    "We simplify step by step.\nThus the answer is $\\boxed{{{x}}}$.",
    "Solving the system gives the result.\nThe final answer is $\\boxed{{{x}}}$. I hope it is correct.",
    "Combining the cases, we find\n\\[\n\\boxed{{{x}}}\n\\]",
    "After substituting back we obtain the value.\nFinal answer: ${x}$",
    "Let us compute carefully. First \\(\\boxed{{0}}\\) is not possible since the terms are positive, "
    "so we continue.\nTherefore the answer is $\\boxed{{{x}}}$.",
]


def math_items(n_problems: int, samples: int):
    items = []
    for p in range(n_problems):
        tag = ("math", p)
        form, gold, equal, unequal = math_case(tag)
        for s in range(samples):
            st = (tag, s)
            right = chance((st, "right"), 0.5)
            x = pick((st, "x"), equal if right else unequal)
            wrapper = pick((st, "w"), MATH_WRAPPERS)
            if "{{0}}" in wrapper and x == "0":
                wrapper = MATH_WRAPPERS[0]
            out = wrapper.replace("{{", "{").replace("}}", "}").replace("{x}", x)
            items.append({"kind": "math", "form": form, "gold": gold, "output": out, "label": right})
    return items


# ------------------------------------------------------------------------------------------------
# loop-fix tasks
# ------------------------------------------------------------------------------------------------

WORDS = ["banana", "strawberry", "mississippi", "bookkeeper", "parallelogram", "committee", "assessment"]


def _repeating(f: Fraction) -> str:
    """Exact expansion with the repeating block in parentheses: 1/6 -> 0.1(6), 3/8 -> 0.375."""
    whole, rem = divmod(f.numerator, f.denominator)
    digits, seen = [], {}
    while rem and rem not in seen:
        seen[rem] = len(digits)
        rem *= 10
        digits.append(str(rem // f.denominator))
        rem %= f.denominator
    if not rem:
        return f"{whole}." + "".join(digits) if digits else str(whole)
    k = seen[rem]
    return f"{whole}." + "".join(digits[:k]) + "(" + "".join(digits[k:]) + ")"


def task_case(tag):
    """(form, prompt, gold, [equal renderings], [unequal renderings]) in the loop-fix generators' formats."""
    t = h(tag, "family") % 6
    word = pick((tag, "w"), WORDS)
    if t == 0:
        letter = pick((tag, "l"), sorted(set(word)))
        n = word.count(letter)
        return (
            "task_letter_count",
            f"How many times does '{letter}' appear in '{word}'?",
            str(n),
            [str(n), f"**{n}**", f"{n} times"],
            [str(n + 1), str(n - 1), str(len(word))],
        )
    if t == 1:
        num = "".join(str(rint((tag, "d", i), 0, 9)) for i in range(rint((tag, "len"), 12, 30)))
        n = sum(map(int, num))
        return (
            "task_digit_sum",
            f"What is the sum of the digits of {num}?",
            str(n),
            [str(n), f"`{n}`"],
            [str(n + 1), str(n - 9), num[-3:]],
        )
    if t == 2:
        a, b = rint((tag, "a"), 1000, 99999), rint((tag, "b"), 3, 97)
        q, r = divmod(a, b)
        return (
            "task_division_remainder",
            f"Divide {a} by {b}: quotient and remainder.",
            f"{q} R {r}",
            [f"{q} R {r}", f"{q} remainder {r}", f"Quotient: {q}, remainder: {r}"],
            [f"{q} R {r + 1}", f"{q + 1} R {r}", str(q)],
        )
    if t == 3:
        d = pick((tag, "d"), [3, 7, 11, 13, 17])
        n = pick((tag, "n"), [k for k in range(1, 40) if k % d])
        places = rint((tag, "pl"), 6, 12)
        scaled = Fraction(n * 10**places, d)
        rounded = (scaled.numerator * 2 + scaled.denominator) // (2 * scaled.denominator)  # half up
        digits = f"{rounded:0{places + 1}d}"
        gold = f"{digits[:-places]}.{digits[-places:]}"
        runaway = gold + _repeating(Fraction(n, d)).split("(")[-1].rstrip(")") * 12
        return (
            "task_fraction_places",
            f"Write {n}/{d} as a decimal rounded to {places} places.",
            gold,
            [gold, f"**{gold}**"],
            [gold[:-1], gold[:-1] + str((int(gold[-1]) + 1) % 10), runaway],
        )
    if t == 4:
        d = pick((tag, "d"), [6, 7, 12, 13, 22, 27, 37])
        n = pick((tag, "n"), [k for k in range(1, 3 * d) if k % d])
        f = Fraction(n, d)
        gold = _repeating(f)
        eq = [gold, gold.replace("(", "\\overline{").replace(")", "}")]
        return (
            "task_fraction_repeating",
            f"Write {n}/{d} as a decimal; mark the repeating part.",
            gold,
            eq,
            [f"{f.numerator}/{f.denominator}", f"{float(f):.8f}", _repeating(f + Fraction(1, 10 * d))],
        )
    letter = pick((tag, "l"), sorted(set(word)))
    gold = word.replace(letter, "")
    return (
        "task_letter_removal",
        f"Remove every '{letter}' from '{word}'.",
        gold,
        [gold, f'"{gold}"', f"**{gold}**"],
        [gold[:-1], word, gold.capitalize()],
    )


def task_items(n_problems: int, samples: int):
    items = []
    for p in range(n_problems):
        tag = ("task", p)
        form, prompt, gold, equal, unequal = task_case(tag)
        for s in range(samples):
            st = (tag, s)
            r = h(st, "scenario") % 100
            if r < 50:
                x = pick((st, "x"), equal)
                out, label = f"Let me work through it.\n\nFinal answer: {x}", True
            elif r < 85:
                x = pick((st, "x"), unequal)
                out, label = f"Let me work through it.\n\nFinal answer: {x}", False
            elif r < 93:  # the prompt echoed in a loop, no answer
                out, label = "\n".join([prompt] * rint((st, "echo"), 5, 40)), False
            else:  # answer then a hallucinated new question
                out = (
                    f"Final answer: {gold}\n\nQuestion: {pick((st, 'q'), WORDS)} has how many letters?\n"
                    f"Answer: {rint((st, 'z'), 3, 15)}"
                )
                label = True
            items.append({"kind": "task", "form": form, "gold": gold, "output": out, "label": label})
    return items


def build() -> list[dict]:
    items = gsm_items(150, 5) + math_items(240, 4) + task_items(70, 4)
    for i, it in enumerate(items):
        it["id"] = f"v{i:05d}"
    return [{k: it[k] for k in ("id", "kind", "form", "gold", "output", "label")} for it in items]


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    items = build()
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps(it, ensure_ascii=False, sort_keys=True) + "\n")
    os.replace(tmp, out)
    n_true = sum(it["label"] for it in items)
    print(f"wrote {len(items)} items ({n_true} equal, {len(items) - n_true} not equal) to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
