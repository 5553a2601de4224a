"""A model's rating of its own answer is never its answer; a gold in words against a value is never
`wrong`; two different boxes with nothing marking the last as final are ambiguous.

Both ways: real forms from the Score-LLMs-in-Mathematics outputs of the fifth held-out corpus (the
prompt asks for an answer and a confidence level), and made-up forms that must stay decided (a
percentage that is the answer, a box after "the final answer is", a gold that is a word answer).

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/verify/test_verify_selfrating.py -q
"""

from __future__ import annotations

import pytest

from miners.verify import Verifier, extract_answer
from miners.verify.fast import fast_compare
from miners.verify.readable import states_no_value
from miners.verify.selfrating import is_self_rating_sentence


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier()


# (output, gold): the answer is right, and the last box or "... is X" is the model's confidence
RATED_AFTER_RIGHT_ANSWER = [
    ("The final answer is $\\boxed{5432}$, and my confidence level is $\\boxed{99\\%}$.", "5432"),
    ("The answer is $\\boxed{5432}$.\n\nI am $\\boxed{100\\%}$ confident in my answer.", "5432"),
    ("So, the answer is $\\boxed{-2}$ with a confidence of $\\boxed{95\\%}$.", "-2"),
    ("Thus, the trace of \\( A \\) is \\(\\boxed{5}\\) and my confidence level is \\(\\boxed{100}\\).", "5"),
    (
        "Therefore, the value is:\n\\[\n\\boxed{1}\n\\]\n\nSince the calculation is straightforward, my "
        "confidence level in percentage regarding the answer is:\n\\[\n\\boxed{100}\n\\]",
        "1",
    ),
    ("Therefore, the answer is \\boxed{22}.\n\nMy confidence level in this answer is 100%.", "22"),
    (
        "So, the projection is $\\boxed{(7, 0)}$.\n\n"
        "Confidence in this answer is at a $\\boxed{100\\%}$ level.",
        "(7, 0)",
    ),
    ("Hence \\(\\boxed{32}\\).\n\nMy confidence level in the answer is \\( \\boxed{100} \\)%.", "32"),
    ("The answer is $\\boxed{1080}$. Je suis sûr à $\\boxed{100\\%}$.", "1080"),
    ("答案是 $\\boxed{12}$。我的置信度为 $\\boxed{90\\%}$。", "12"),
]


@pytest.mark.parametrize(("output", "gold"), RATED_AFTER_RIGHT_ANSWER)
def test_a_confidence_after_the_answer_is_not_read_as_the_answer(verifier, output, gold):
    verdict = verifier.verify(output, gold, "math")
    assert (verdict.label, verdict.reason) == ("correct", "compared equal"), verdict


@pytest.mark.parametrize(
    "output",
    [
        "Let me compute it step by step.\n\nMy confidence level is:\n\\[\n\\boxed{100}\n\\]",
        "I estimate my confidence to be around $\\boxed{90\\%}$.",
        "Thus, my confidence level is \\( \\boxed{100\\%} \\).",
    ],
)
def test_an_output_whose_only_box_is_a_rating_has_no_answer(verifier, output):
    """No answer: unknown where the output states the gold's value (in the rating), else rule (b)."""
    verdict = verifier.verify(output, "100", "math")
    expected = ("unknown", "no answer found") if "100" in output else ("wrong", "gold's value stated nowhere")
    assert (verdict.label, verdict.reason) == expected


def test_a_closing_rating_sentence_commits_to_nothing_new(verifier):
    """The rating is no answer; the conclusion before it is (tests/verify/test_verify_cuts_and_ratings.py)."""
    out = "So the result of 9999 - 4567 is 5432.\n\nI am 100% confident in this answer."
    assert verifier.verify(out, "7", "math").label == "wrong"
    assert verifier.verify(out, "5432", "math").label == "correct"


# percentages and numbers that ARE the answer stay decided
@pytest.mark.parametrize(
    ("output", "gold", "label"),
    [
        ("The probability is $\\boxed{25\\%}$.", "25\\%", "correct"),
        ("The probability is $\\boxed{30\\%}$.", "25\\%", "wrong"),
        ("I am confident the answer is $\\boxed{12}$.", "12", "correct"),
        ("I am confident the answer is $\\boxed{13}$.", "12", "wrong"),
        ("The discount is 40%, so the final answer is $\\boxed{60}$.", "60", "correct"),
        ("Therefore, the probability that Alice wins the game is 2/3.", "2/3", "correct"),
        ("Make sure to check: the answer is $\\boxed{5}$ and I am $\\boxed{90\\%}$ sure.", "6", "wrong"),
    ],
)
def test_values_that_are_answers_stay_decided(verifier, output, gold, label):
    assert verifier.verify(output, gold, "math").label == label


def test_rating_sentences():
    assert is_self_rating_sentence("I would rate my confidence at 100%.")
    assert is_self_rating_sentence("Confidence level: 80%")
    assert is_self_rating_sentence("I am confident in my answer.")
    assert not is_self_rating_sentence("So the total is 100%.")
    assert not is_self_rating_sentence("The probability that it rains is 30%.")


# ------------------------------------------------------------------------- a gold in words


@pytest.mark.parametrize("gold", ["all 1", "just B", "just A", "na"])
def test_a_gold_in_words_against_a_value_is_unknown(verifier, gold):
    out = "Therefore, the answer is $\\boxed{\\begin{pmatrix}1 & 1\\\\1 & 1\\end{pmatrix}}$."
    verdict = verifier.verify(out, gold, "math")
    assert (verdict.label, verdict.reason) == ("unknown", "gold cannot be read")


@pytest.mark.parametrize(
    ("output", "gold", "label"),
    [
        ("The answer is $\\boxed{Equal}$.", "equal", "correct"),
        ("The answer is $\\boxed{parallel}$.", "equal", "wrong"),  # words against words: decided
        ("The answer is $\\boxed{5}$.", "6", "wrong"),
        ("The answer is $\\boxed{2x+1}$.", "s=-0.1x^2+Cx+D", "wrong"),  # symbols glued, no word
        ("The answer is $\\boxed{5}$.", "5 cm", "correct"),
    ],
)
def test_golds_that_state_a_value_stay_decided(verifier, output, gold, label):
    assert verifier.verify(output, gold, "math").label == label


def test_states_no_value():
    assert states_no_value("just B", "\\begin{pmatrix}2 & 3\\end{pmatrix}")
    assert not states_no_value("arctanx-x", "x")
    assert not states_no_value("equal", "Equal")
    assert not states_no_value("x=0.5 lny+C/lny", "y")


# ------------------------------------------------------------------------- single classes


def test_a_function_name_without_its_backslash_is_the_function():
    assert fast_compare("\\sec^2 x", "(sec x)^2", "math") is True
    assert fast_compare("\\sec^2 x", "(sec y)^2", "math") is False
    assert fast_compare("\\cos x", "sin x", "math") is False
    assert fast_compare("5", "5 sec", "math") is True  # a unit after a number, not a function


def test_a_definite_integral_equal_to_a_value_states_the_value():
    assert fast_compare("\\int_{-4}^{4} \\sin x \\mathrm{dx} = 0", "0", "math") is True
    assert fast_compare("\\int_{-4}^{4} \\sin x \\mathrm{dx} = 1", "0", "math") is False
    assert fast_compare("\\sum_{n=1}^{\\infty} 2^{-n} = 1", "1", "math") is True


# ------------------------------------------------------------------------- rival boxes


def test_two_different_boxes_with_none_marked_final_are_ambiguous(verifier):
    out = (
        "The rate is $\\boxed{6}$ per hour.\n\n"
        "In 7 hours she makes $\\boxed{42}$ widgets, which we check below.\n\nCheck: 6 * 7 = 42."
    )
    verdict = verifier.verify(out, "42", "math")
    assert (verdict.label, verdict.reason) == ("unknown", "ambiguous answer")


@pytest.mark.parametrize(
    "output",
    [
        "The rate is $\\boxed{6}$ per hour. The final answer is $\\boxed{42}$.",
        "The rate is $\\boxed{6}$ per hour. Therefore she makes $\\boxed{42}$ widgets in all.",
        "The rate is $\\boxed{6}$ per hour.\n\n$\\boxed{42}$",
    ],
)
def test_a_last_box_the_output_marks_final_wins(output):
    assert extract_answer(output, "math") == "42"


def test_constants_named_differently_compare_under_a_renaming(verifier):
    """Equal under a renaming of the arbitrary constants is the same solution; unequal under every
    one is still open (a general solution may be written with other constants)."""
    out = "Therefore, the general solution is $\\boxed{ s = -0.1x^2 + C_1 x + C_2 }$."
    verdict = verifier.verify(out, "s=-0.1x^2+Cx+D", "math")
    assert (verdict.label, verdict.reason) == ("correct", "compared equal")
    verdict = verifier.verify(out, "s=-0.2x^2+Cx+D", "math")
    assert (verdict.label, verdict.reason) == ("unknown", "comparison undecided")
    # the same constant names on both sides: compared, and decided
    assert verifier.verify("The answer is $\\boxed{x^2 + C}$.", "x^3 + C", "math").label == "wrong"
    assert verifier.verify("The answer is $\\boxed{x^2 + C}$.", "x^2+C", "math").label == "correct"


def test_a_matrix_gold_in_bracket_rows_is_read_as_a_matrix(verifier):
    out = "So $\\boxed{\\begin{bmatrix} -3 & 2 \\\\ \\frac{5}{2} & -\\frac{3}{2}\\end{bmatrix}}$."
    verdict = verifier.verify(out, "[-3,2\\\\5/2,-3/2]", "math")
    assert (verdict.label, verdict.reason) == ("correct", "compared equal")
    assert verifier.verify(out, "[-3,2\\\\1,-3/2]", "math").label == "wrong"
    gold = "\\begin{pmatrix} -3 & 2 \\\\ 5/2 & -3/2 \\end{pmatrix}"
    assert verifier.verify(out, gold, "math").label == "correct"
    wrong = "So $\\boxed{\\begin{bmatrix} -3 & 2 \\\\ 1 & -\\frac{3}{2}\\end{bmatrix}}$."
    assert verifier.verify(wrong, gold, "math").label == "wrong"
