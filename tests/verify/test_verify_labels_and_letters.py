"""Two classes of answer the verifier reads by their form, not by the rows they came from:

* a named function of one symbol on the left of a number ("\\cos(A) = 0.96") is a label on that
  number (convention 3 of bench/data/README.md); a left side that combines or transforms unknowns
  ("2\\cos x = 1", "\\cos(2x) = 0.5") is an equation and is not;
* a bare option letter as the committed answer to a question asked without options, against a gold
  that is no letter, names an option nobody gave: `unknown`, never `wrong`; with the options, or
  against a letter gold, it stays decided.
"""

from __future__ import annotations

import itertools

import pytest

from miners.verify import Verifier
from miners.verify.compare import is_function_label
from miners.verify.fast import fast_compare, is_bare_option_letter
from miners.verify.types import CORRECT, OPTIONS_UNKNOWN, UNKNOWN, WRONG

FUNCTIONS = ("\\sin", "\\cos", "\\tan", "\\cot", "\\sec", "\\csc", "\\ln", "\\log", "\\log_2", "\\log_{10}")
# every way an output writes the function's one argument
ARGUMENTS = ("(A)", "(x)", " A", " x", "\\theta", " \\theta", "(\\alpha)", " \\angle ABC", "(\\angle B)")
ARGUMENTS += ("{B}", "\\left(A\\right)", " 8", "(3)", "^2 x", "^{2}(A)", " ∠A")


@pytest.mark.parametrize("function,argument", list(itertools.product(FUNCTIONS, ARGUMENTS)))
def test_a_function_of_one_symbol_labels_the_number_after_it(function, argument):
    lhs = f"{function}{argument}"
    assert is_function_label(lhs, "0.96"), lhs
    for gold in ("0.96", "\\frac{24}{25}", "24/25"):
        assert fast_compare(f"{lhs} = 0.96", gold, "math") is True, (lhs, gold)
        assert fast_compare(f"{lhs} = 0.95", gold, "math") is False, (lhs, gold)
    # either way round: a gold written with the label reads the same
    assert fast_compare("0.96", f"{lhs} = 0.96", "math") is True


@pytest.mark.parametrize(
    "lhs",
    [
        "\\cos(A)+\\sin(B)",  # two unknowns combined
        "2\\cos x",  # a coefficient
        "\\cos(2x)",  # an argument that is an expression
        "\\cos(x+y)",
        "\\sin x \\cos x",
        "\\sin\\cos x",  # a function of a function
        "\\cos(A)-1",
        "x\\cos(A)",
        "\\frac{\\sin A}{2}",
    ],
)
def test_a_left_side_that_combines_unknowns_is_no_label(lhs):
    assert not is_function_label(lhs, "1")
    # read as an equation against a plain number, it is not the number
    assert fast_compare(f"{lhs} = 1", "1", "math") is not True


@pytest.mark.parametrize("rhs", ["x", "2y", "\\pi x", "a+b"])
def test_a_right_side_with_unknowns_makes_no_label(rhs):
    assert not is_function_label("\\cos(A)", rhs)
    assert fast_compare(f"\\cos(A) = {rhs}", "0.96", "math") is not True


def test_a_function_equation_against_a_function_equation_compares_the_left_sides():
    assert fast_compare("\\cos(x)=\\frac{42}{59}", "\\sin(x)=\\frac{42}{59}", "math") is False
    assert fast_compare("\\cos(x)=\\frac{42}{59}", "\\cos(x)=\\frac{42}{59}", "math") is True


@pytest.mark.parametrize("lhs", ["f(3)", "g(x)", "P(X>2)", "P(A)", "f'(1)"])
def test_a_named_function_of_one_letter_was_a_label_already(lhs):
    assert fast_compare(f"{lhs} = 0.3", "0.3", "math") is True
    assert fast_compare(f"{lhs} = 0.4", "0.3", "math") is False


def test_through_the_whole_verifier_a_labelled_cosine_is_its_value():
    v = Verifier()
    output = "Hence:\n\\[\n\\cos(A) = \\frac{48}{50}\n\\]\n\nThe answer is: \\( \\cos(A) = 0.96 \\)"
    right = v.verify(output, "0.96")
    assert (right.label, right.answer) == (CORRECT, "\\cos(A) = 0.96")
    assert v.verify("The answer is: \\( \\cos(A) = 0.8 \\)", "0.96").label == WRONG


LETTER_FORMS = ("{}", "({})", "{}.", "Option {}", "option ({})", "\\text{{{}}}", "$ {} $", "**{}**")


@pytest.mark.parametrize("letter,form", list(itertools.product("ABCDE", LETTER_FORMS)))
def test_a_bare_option_letter_is_recognised_in_every_form(letter, form):
    assert is_bare_option_letter(form.format(letter))


@pytest.mark.parametrize("answer", ["e", "x", "F", "AB", "A1", "2A", "A train", "40", "\\pi", "a"])
def test_other_short_answers_are_no_option_letter(answer):
    assert not is_bare_option_letter(answer)


@pytest.mark.parametrize("letter", "ABCDE")
@pytest.mark.parametrize("gold", ["40.0", "40", "\\frac{1}{2}", "x+1", "(1,2)", "Monday"])
def test_an_option_letter_without_options_against_a_value_is_unknown(letter, gold):
    v = Verifier()
    for output in (
        f"Therefore, the correct answer is 40°.\nAnswer:{letter}",
        f"The answer is ({letter}).",
        f"\\boxed{{{letter}}}",
    ):
        got = v.verify(output, gold, "math")
        assert (got.label, got.reason) == (UNKNOWN, OPTIONS_UNKNOWN), (output, gold, got)
    assert v.verify_answer(letter, gold, "math").label == UNKNOWN
    assert v.verify(f"#### {letter}", "40", "gsm8k").label == UNKNOWN


def test_an_option_letter_with_a_letter_gold_stays_decided():
    v = Verifier()
    assert v.verify("Answer: A", "A").label == CORRECT
    assert v.verify("Answer: A", "B").label == WRONG
    assert v.verify("Answer: A", "(b)").label == WRONG  # a lower-case letter gold is a letter too
    assert v.verify("Answer: E", "d").label == WRONG


def test_an_option_letter_with_the_options_stays_decided():
    v = Verifier()
    options = ["(A) 40", "(B) 50", "(C) 60", "(D) 70"]
    assert v.verify("Answer: A", "A", options=options).label == CORRECT
    assert v.verify("Answer: B", "A", options=options).label == WRONG
    # options given and a value gold: the letter is compared, as before (decided, not unknown)
    assert v.verify("Answer: B", "40", options=options).label != UNKNOWN


def test_a_task_gold_compares_a_letter_as_text():
    # loop-fix golds are strings computed exactly: a letter against one is plain text, decided
    assert Verifier().verify("Answer: A", "AB", "task").label == WRONG
