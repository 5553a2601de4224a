"""A comparison that did not read an answer never says `wrong`: math-verify's "unequal" counts only where
it parsed both sides as mathematics of one kind, and the fast path's "unequal" only where it read both.

Both ways, on real forms: spans that lost their braces (a MATH-500 answer file stores
`\\beginpmatrix1/5\\\\-18/5\\endpmatrix`), unbalanced braces, glued fractions and roots, words that
math-verify reads as products of one-letter symbols, numbers too large to evaluate -- and the same
answers written properly, which stay `wrong` where they differ from the gold.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/verify/test_verify_readable.py -q
"""

from __future__ import annotations

from collections import Counter

import pytest

from miners.verify import Verifier, readable, symbolic
from miners.verify import verifier as verifier_module

math_verify = pytest.importorskip("math_verify")

GOLD_VECTOR = "\\begin{pmatrix} 1/5 \\\\ -18/5 \\end{pmatrix}"


def parse(span: str):
    """math-verify's parse of one span, as the verifier calls it."""
    cfg = [math_verify.LatexExtractionConfig(), math_verify.ExprExtractionConfig()]
    return math_verify.parse("$" + span + "$", extraction_config=cfg, parsing_timeout=None)


# -- what math-verify's parse reports, read by miners.verify.readable ------------------------------

UNREAD = [
    ("\\beginpmatrix1/5\\\\-18/5\\endpmatrix", readable.NO_OBJECT),  # raw string fallback only
    ("\\beginbmatrix1&2\\endbmatrix", readable.NO_OBJECT),
    ("\\frac{1}{2", readable.NO_OBJECT),
    ("\\dfrac{1}{2}}", readable.NO_OBJECT),
    ("1/2)", readable.UNBALANCED),  # parses, to 1: a part of the span
    ("\\frac125", readable.GLUED_ARGUMENTS),  # parses, to 1/25; TeX says 5/2
    ("\\sqrt25", readable.GLUED_ARGUMENTS),  # parses, to 5 sqrt(2)
    ("the answer is red", readable.WORD_AS_PRODUCT),  # E*E*E*a*d*h*...
    ("Monday", readable.WORD_AS_PRODUCT),
    ("doce", readable.WORD_AS_PRODUCT),  # E*c*do: a two-letter symbol among them
    ("dix", readable.WORD_AS_PRODUCT),  # di*x
    ("\\text{blue}", readable.WORD_AS_PRODUCT),  # a word in text, not a symbol ("\\text{seis}" is six)
    ("12 apples", readable.PARTIAL),  # read as 12: the unit is dropped
]

READ = [
    "\\begin{pmatrix} 1/5 \\\\ -18/5 \\end{pmatrix}",
    "\\frac12",
    "\\fracab",
    "\\frac34i",
    "\\frac{\\sqrt{3}}{2}",
    "\\{1,2\\}",
    "(1,2]",
    "[1,2)",
    "x=5",
    "x^2+1",
    "\\left(1,2\\right)",
    "\\pi",
    "sqrt(2)/2",  # plain-text math: function names are no words
    "3*log(x)",
]


@pytest.mark.parametrize("span,reason", UNREAD, ids=[u[0] for u in UNREAD])
def test_parses_that_are_no_reading(span, reason):
    assert readable.unread_reason(parse(span), span) == reason


@pytest.mark.parametrize("span", READ)
def test_parses_that_are_a_reading(span):
    assert readable.unread_reason(parse(span), span) is None


def test_nothing_parsed_is_no_reading():
    assert readable.unread_reason([], "x") == readable.NO_OBJECT
    assert readable.unread_reason(["\\beginpmatrix1\\endpmatrix"], "\\beginpmatrix1\\endpmatrix")


def test_a_matrix_and_a_number_are_not_comparable():
    vector, number, interval = parse(GOLD_VECTOR), parse("3"), parse("(1,2]")
    assert not readable.comparable(vector, number)
    assert readable.comparable(number, interval)
    assert readable.comparable(vector, parse("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"))


# -- math-verify on two spans: unequal only where both were read ------------------------------------


def test_span_compare_refuses_a_raw_string_against_a_matrix():
    stats: Counter = Counter()
    got = symbolic.span_compare("\\beginpmatrix1/5\\\\-18/5\\endpmatrix", GOLD_VECTOR, stats)
    assert got == (None, readable.NO_OBJECT)
    assert stats["unread"] == 1 and stats["unread: no mathematical object"] == 1
    # math-verify itself says "unequal" here: that is what the rule keeps out
    raw = parse("\\beginpmatrix1/5\\\\-18/5\\endpmatrix")
    assert math_verify.verify(parse(GOLD_VECTOR), raw, timeout_seconds=None) is False


def test_span_compare_keeps_unequal_where_both_are_read():
    stats: Counter = Counter()
    assert symbolic.span_compare("x^2+\\sin x", "x^2", stats) == (False, None)
    assert symbolic.span_compare("x^2+2x+1", "(x+1)^2", stats) == (True, None)
    assert symbolic.span_compare("3", GOLD_VECTOR, stats) == (None, readable.KINDS_DIFFER)
    assert stats["unread"] == 1


# -- the verdicts --------------------------------------------------------------------------------

UNKNOWN_CASES = [
    # the held-out class: a matrix whose braces are gone, entries equal to the gold's -- and unequal
    ("\\boxed{\\beginpmatrix1/5\\\\-18/5\\endpmatrix}", GOLD_VECTOR, "math"),
    ("\\boxed{\\beginpmatrix1/5\\\\-17/5\\endpmatrix}", GOLD_VECTOR, "math"),
    ("\\boxed{\\frac125}", "\\frac{12}{5}", "math"),  # 12/5 once its braces were lost
    ("\\boxed{\\frac125}", "\\frac{1}{7}", "math"),
    ("\\boxed{\\sqrt25}", "5", "math"),
    ("The answer is \\boxed{\\frac{1}{2}.", "\\frac{1}{3}", "math"),  # the box never closes its fraction
    ("\\boxed{\\frac{-3\\pm\\sqrt{33}}{2}}", "-6", "math"),  # math-verify cannot parse it
    ("Final answer: dollars", "12", "gsm8k"),  # a unit alone: normalizes to nothing
]

UNDECIDED_CASES = [
    # several numbers and no '=': the first would be a guess at which one is the answer
    ("\\boxed{2 hours 30 minutes}", "150", "gsm8k"),
    # words against a number: a number word no reader here computes, or a product of symbols
    ("\\boxed{red car}", "5", "math"),
    ("Final answer: zwölf", "12", "gsm8k"),
]


@pytest.mark.parametrize("output,gold,kind", UNKNOWN_CASES)
def test_unread_answers_are_unknown(output, gold, kind):
    verdict = Verifier().verify(output, gold, kind)
    assert (verdict.label, verdict.reason) == ("unknown", "verifiers cannot read the answer")


@pytest.mark.parametrize("output,gold,kind", UNDECIDED_CASES)
def test_unread_values_are_never_wrong(output, gold, kind):
    assert Verifier().verify(output, gold, kind).label == "unknown"


WRONG_CASES = [
    ("\\boxed{\\begin{pmatrix} 1/5 \\\\ -17/5 \\end{pmatrix}}", GOLD_VECTOR, "math"),
    ("\\boxed{\\frac12}", "\\frac{1}{3}", "math"),
    ("\\boxed{x^2+\\sin x}", "x^2", "math"),  # decided by math-verify, both sides parsed
    ("\\boxed{\\{1,2\\}}", "\\{1,3\\}", "math"),
    ("\\boxed{(1,2]}", "(1,3]", "math"),
    ("\\boxed{\\text{red}}", "\\text{blue}", "math"),
    ("Final answer: 13", "12", "gsm8k"),
    ("\\boxed{18 dollars per day}", "19", "gsm8k"),  # one number, read
    ("\\boxed{3 \\times 12 = 36}", "35", "gsm8k"),  # the result after '='
    ("Final answer: 13", "12", "task"),
]


@pytest.mark.parametrize("output,gold,kind", WRONG_CASES)
def test_answers_read_and_unequal_stay_wrong(output, gold, kind):
    verdict = Verifier().verify(output, gold, kind)
    assert (verdict.label, verdict.reason) == ("wrong", "compared unequal")


def test_the_proper_matrix_is_correct():
    output = "\\boxed{\\begin{pmatrix} 1/5 \\\\ -18/5 \\end{pmatrix}}"
    verdict = Verifier().verify(output, GOLD_VECTOR, "math")
    assert verdict.label == "correct"


def test_too_large_to_evaluate_is_not_unequal():
    v = Verifier()
    assert v.verify("\\boxed{10^{10^{10}}}", "5", "math").reason == "comparison undecided"
    assert v.verify("\\boxed{\\frac{1}{2006!}}", "\\frac{1}{2004!}", "math").label == "unknown"
    assert v.stats["fast path: too large"] == 2
    assert v.verify("\\boxed{(2^{10})^{100}}", "2^{1000}", "math").label == "correct"


def test_a_gold_its_reader_fails_on_is_unknown(monkeypatch):
    def broken(gold, kind):
        raise ValueError("a reader bug")

    monkeypatch.setattr(verifier_module, "gold_answer", broken)
    v = Verifier()
    assert (v.verify("\\boxed{3}", "#### 4", "gsm8k").label, v.stats["gold exceptions"]) == ("unknown", 1)
    assert v.verify("\\boxed{3}", "#### 4", "gsm8k").reason == "gold cannot be read"
    assert v.verify_answer("3", "#### 4", "gsm8k").reason == "gold cannot be read"


def test_a_second_opinion_that_could_not_parse_confirms_nothing():
    stats: Counter = Counter()
    output = "So the vector is $\\beginpmatrix1/5\\\\-18/5\\endpmatrix$."
    label, _answer = symbolic.output_reading(output, GOLD_VECTOR, stats)
    assert label == "unknown" and stats["output_unread"] == 1
    # read properly, its reading counts both ways
    good = "So the vector is $\\begin{pmatrix} 1/5 \\\\ -17/5 \\end{pmatrix}$."
    assert symbolic.output_reading(good, GOLD_VECTOR, Counter())[0] == "wrong"


def test_a_vector_against_a_tuple_of_the_same_entries_is_open():
    # the same entries as a column, a row and a point: the problem says which form it asks for
    v = Verifier()
    column, row = "\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix}1 & 2\\end{pmatrix}"
    assert v.verify(f"\\boxed{{{column}}}", "(1,2)", "math").label == "unknown"
    assert v.verify(f"\\boxed{{{row}}}", "(1,2)", "math").label == "unknown"
    assert v.verify("\\boxed{(1,2)}", column, "math").label == "unknown"
    assert v.stats["fast path: forms open"] == 3
    # other entries, or another length, are unequal in either reading
    assert v.verify("\\boxed{\\begin{pmatrix}1\\\\3\\end{pmatrix}}", "(1,2)", "math").label == "wrong"
    assert v.verify("\\boxed{(1,2,3)}", column, "math").label == "wrong"
    square = "\\begin{pmatrix}1 & 2\\\\3 & 4\\end{pmatrix}"
    assert v.verify(f"\\boxed{{{square}}}", "(1,2)", "math").label == "wrong"


@pytest.mark.parametrize(
    "answer,gold",
    [("1.000", "1000"), ("12.500", "12500"), ("2,500", "2.5"), ("1.234.567", "1234567")],
)
def test_digits_grouped_the_other_way_are_ambiguous_not_wrong(answer, gold):
    verdict = Verifier().verify(f"Final answer: {answer}", gold, "gsm8k")
    assert (verdict.label, verdict.reason) == ("unknown", "ambiguous answer")


@pytest.mark.parametrize(
    "answer,gold,label",
    [
        ("1.000", "1", "correct"),
        ("2,500", "2500", "correct"),
        ("1.000", "999", "wrong"),
        ("2,500", "25", "wrong"),
    ],
)
def test_digit_grouping_decides_where_neither_reading_is_the_gold(answer, gold, label):
    assert Verifier().verify(f"Final answer: {answer}", gold, "gsm8k").label == label


def test_a_refusal_is_no_value_and_rule_b_decides():
    """A refusal ("no solution") is no word to compute, as "zwölf" is, but an answer that gives no value:
    it never equals the gold, and the output never writes 12."""
    verdict = Verifier().verify("Final answer: no solution", "12", "gsm8k")
    assert (verdict.label, verdict.reason) == ("wrong", "gold's value stated nowhere")
    stated = Verifier().verify("12 would fit, but\n\nFinal answer: no solution", "12", "gsm8k")
    assert stated.label == "unknown"


def test_a_span_of_words_is_not_handed_to_math_verify(monkeypatch):
    """Words against a gold the fast path cannot decide ("Probability" against \\frac{1}{2}): math-verify
    would read the letters as symbols, a reading refused anyway, so it is not asked: unknown."""

    def asked(*args, **kwargs):
        raise AssertionError("math-verify was asked about a span of words")

    monkeypatch.setattr(symbolic, "span_compare", asked)
    output = "The probability is computed below.\n\nAnswer: Probability"
    verdict = Verifier().verify(output, "\\frac{1}{2}", "math")
    assert (verdict.label, verdict.reason) == ("unknown", "verifiers cannot read the answer"), verdict
