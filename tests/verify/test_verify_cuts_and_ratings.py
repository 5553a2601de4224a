"""A cut-off output is `wrong` only where it could not hold the right answer; a closing rating of the
answer commits to nothing new, so the conclusion before it is read; a sentence's own result is read.

Both ways: real forms from the held-out corpora (Claude responses cut at the length limit after the
asked value, GPT-2 GSM8K outputs cut mid-line, Llama and Mistral answers followed by "Confidence
level: 100%"), and made-up forms that must stay decided (a cut output that never writes the gold, a
rating paragraph that states a value of its own, an output that ends normally with no answer).

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/verify/test_verify_cuts_and_ratings.py -q
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miners.verify import Verifier
from miners.verify.evidence import could_hold, gold_stated, numeric_gold, stated_numbers, without_list_labels
from miners.verify.prose import concluding, emphasized_value, looping, without_closing_rating

TAV, TRUNCATED = "truncated after a possible answer", "truncated before any answer"
ABSENT = "gold's value stated nowhere"


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier()


# ------------------------------------------------------------------------------ cut-off outputs

CUT_AFTER_THE_VALUE = (  # a Claude response cut at the length limit, after it stated the asked value
    "Step 2: Calculate the time it will take Bob to dig the entire hole.\n"
    "Time to dig the hole = 72 cubic feet × 3 seconds/cubic foot\n"
    "Time to dig the hole = 216 seconds\n\n"
    "Step 3: Convert the time from seconds to minutes and seconds.\n"
    "Minutes = 216 seconds ÷ 60 seconds/minute ="
)
CUT_MID_SENTENCE_AFTER_THE_VALUE = (
    "5. Calculate how many hours Tyler needs to work to earn the additional $25:\n"
    "   * Hours needed to work: $25 / $5 = 5 hours\n\n"
    "Therefore, Tyler needs to work 5 hours to afford the books he wants to"
)
CUT_CALCULATOR_LINES = (  # a GPT-2 GSM8K output cut at the token limit, inside an annotation
    "Debra saw 30 / 2 = <<30/2=15>>15 bees return to the hive in the next 6 hours.\n"
    "She saw 15 * 2 = <<15*2=30>>30 bees fly out of the hive and leave in the next 6 hours.\n"
    "She saw 30 - 6 = <<30"
)
CUT_ON_A_WORD = (
    "The students sold a total of 30 x 10 = <<30*10=300>>300 lollipops.\n"
    "So, they were able to raise 300 x $0.8 = $<<300*0.8=240>>240 from the sale of the lollipops.\n"
    "Since"
)


@pytest.mark.parametrize(
    ("output", "gold"),
    [
        (CUT_AFTER_THE_VALUE, "216"),
        (CUT_MID_SENTENCE_AFTER_THE_VALUE, "5"),
        (CUT_AFTER_THE_VALUE, "216.0"),  # SVAMP stores golds as floats
        ("Total = 1,250 dollars\nSo the money left over is $1,250 and the", "1250"),
        ("She works five hours a day, so the number of hours she needs to", "5"),
        ("Each share is \\frac{3}{4} of a pie, so the total is \\frac{", "3/4"),
    ],
)
def test_a_cut_output_that_states_the_gold_is_unknown(verifier, output, gold):
    verdict = verifier.verify(output, gold, "gsm8k")
    assert (verdict.label, verdict.reason) == ("unknown", "truncated after a possible answer"), verdict


@pytest.mark.parametrize(
    ("output", "gold"),
    [
        (CUT_AFTER_THE_VALUE, "3.6"),
        (CUT_MID_SENTENCE_AFTER_THE_VALUE, "7"),
        ("We compute 3 + 4 =", "8"),
        ("The total is \\boxed{\\frac{1", "7"),
        # inline math opened on the last line and never closed (a Qwen MATH answer at its limit)
        ("So $Q(17) = Q(24) = -10$.\n\nBut $Q(x)$ is a quadratic, so $Q", "19, 22"),
        ("So $Q(17) = Q(24) = -10$.\n\nBut \\(Q(x)\\) is a quadratic, so \\(Q", "19, 22"),
    ],
)
def test_a_cut_output_that_never_states_the_gold_is_wrong(verifier, output, gold):
    verdict = verifier.verify(output, gold, "gsm8k")
    assert (verdict.label, verdict.reason) == ("wrong", "truncated before any answer"), verdict


@pytest.mark.parametrize(
    ("output", "gold", "label", "reason"),
    [
        # no answer, and the gold's number written nowhere: it cannot have answered right (rule (b))
        (CUT_CALCULATOR_LINES, "75", "wrong", ABSENT),
        (CUT_ON_A_WORD, "90", "wrong", ABSENT),
        # the gold's number written (as an operand or a result): it may hold the answer
        (CUT_CALCULATOR_LINES, "30", "unknown", "no answer found"),
        (CUT_ON_A_WORD, "240", "unknown", "no answer found"),
        (
            "Students who like games = 50 - (10 + 5 + 10) = 25\n\nTherefore",
            "25",
            "unknown",
            "no answer found",
        ),
        # however the output ends: no answer and the gold's number written nowhere is rule (b)
        ("First we count the bees.\nShe saw 15 * 2 = 30 bees fly out of the hive.", "75", "wrong", ABSENT),
        ("Let me think step by step.\nThe trains meet after some hours.", "7", "wrong", ABSENT),
        # a gold that is no plain number: which results could state it is not read here
        ("First we expand (x+1)^2.\nThen we collect terms", "x^2+2x+1", "unknown", "no answer found"),
        # ... unless the cut is certain (a word no sentence ends on) and no result states the gold
        ("We expand the square.\nWe keep every term.\nThen we collect the", "x^2+2x+1", "wrong", TRUNCATED),
        ("We expand the square.\nIt is x^2+2x+1 in all.\nThen we collect the", "(x+1)^2", "unknown", TAV),
    ],
)
def test_an_output_ending_mid_sentence(verifier, output, gold, label, reason):
    verdict = verifier.verify(output, gold, "gsm8k" if numeric_gold(gold) is not None else "math")
    assert (verdict.label, verdict.reason) == (label, reason), verdict


def test_a_numbered_list_cut_off_states_no_value_by_its_labels(verifier):
    """A GPT-4o-mini GSM8K reply cut at its limit in item 2: the label "2." is no statement of 2."""
    out = (
        "Let's carefully re-evaluate the problem step-by-step:\n\n"
        "1. **Calculate the total amount of money John made**:\n   John sold 13 Lego sets at $15 each: "
        "13 × 15 = $195\n\n2. **Subtract the cost of t"
    )
    assert verifier.verify(out, "2", "gsm8k").as_dict()["reason"] == "gold's value stated nowhere"
    assert verifier.verify(out, "195", "gsm8k").label == "unknown"
    # a lone label may be an answer stated first
    assert (
        without_list_labels("Answer:\n2. That is because 1 + 1 = 2.")
        == "Answer:\n2. That is because 1 + 1 = 2."
    )


@settings(max_examples=60, derandomize=True)
@given(
    st.lists(st.sampled_from(("We add", "**Subtract** it", "Then divide", "Check")), min_size=2, max_size=12)
)
def test_list_labels_are_blanked_in_place(items):
    text = "\n".join(f"{k}. {item} {10 * k + 7} apples" for k, item in enumerate(items, 1))
    blanked = without_list_labels(text)
    assert len(blanked) == len(text)  # positions in the text stay those of the output
    assert stated_numbers(blanked) == {Fraction(10 * k + 7) for k in range(1, len(items) + 1)}


def test_a_dollar_before_a_digit_is_no_math_left_open(verifier):
    """ "costs $5" may be a price, so the odd "$" leaves the output read as finished."""
    verdict = verifier.verify("Each pen costs $5. So 3 pens cost 3 × 5 = 15 dollars, or $15", "15", "gsm8k")
    assert verdict.label == "correct", verdict


def test_numbers_the_output_states():
    assert numeric_gold("46.0") == 46
    assert numeric_gold("-3") == 3
    assert numeric_gold("1,250") == 1250
    assert numeric_gold("\\frac{3}{4}") == Fraction(3, 4)
    assert numeric_gold("50\\%") == 50
    assert numeric_gold("x+1") is None
    assert numeric_gold("B") is None
    numbers = stated_numbers("He pays $1,250 for 2.5 hours, or \\frac{1}{2} of twenty-one, so 25/5 =")
    assert {
        Fraction(1250),
        Fraction(5, 2),
        Fraction(1, 2),
        Fraction(21),
        Fraction(5),
        Fraction(25),
    } <= numbers


def test_could_hold_a_number_gold():
    assert could_hold("so half of them, 50%, are", "0.5", "gsm8k")
    assert could_hold("so 0.5 of them are", "50\\%", "gsm8k")
    assert could_hold("the loss is -3 dollars and", "3", "gsm8k")
    assert could_hold("he reads twenty-one pages and", "21", "gsm8k")
    assert not could_hold("he reads 12 pages, then 9 more and", "22", "gsm8k")
    for written in ("1 000", "1.000", "1'000", "1e3", "1k", "1 thousand", "one thousand", "1,000"):
        assert could_hold(f"so the total is {written} and the", "1000", "gsm8k"), written


def test_numbers_no_reader_takes_are_skipped(verifier):
    # 5,000 digits (past int()'s limit), an exponent past a float's range: skipped, never an error
    cases = [
        ("1/" + "9" * 5000 + " and the", False),
        ("\\frac{1}{" + "7" * 5000 + "} so", False),
        ("so 2e999 and 3e-999 and the", False),
        ("so 5e999 and the", True),  # its 5 is written
    ]
    for text, holds in cases:
        assert could_hold(text, "5", "gsm8k") is holds, text
        assert verifier.verify("So x = 2.\nThen " + text, "5", "gsm8k").label in ("wrong", "unknown")


def test_could_hold_an_expression_gold():
    assert could_hold("So the roots are x = \\frac{1}{2} and then the", "\\frac12", "math")
    assert not could_hold("So the slope is m = 3, and then the", "\\frac12", "math")


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        # what the fast path cannot decide may be the value, where it may be a value at all
        ("It is 4\\sqrt{2}+4 in all.\nThen we", True),
        ("We find \\(4\\sqrt{2} + 4\\) and", True),
        ("The sum is \\(\\sqrt{32} + 4\\) and", True),
        ("Then \\( 4(\\sqrt{2}+1) \\) and", True),
        # a clause that opens with a word, or a formula in a variable, states no number
        ("The base is the other leg (radius \\( r = 2 \\) and", False),
        ("Total surface area:\n\\[\n\\pi r s + \\pi r^2", False),
        ("So $Q(17) = Q(24)$ and $10 \\implies Q(17)$, so $Q", False),
    ],
)
def test_what_may_state_an_expression_gold(text, stated):
    """A cut output against "4\\sqrt{2} + 4" (a gold of digits and no variable): rule (b) calls it
    wrong only where no candidate may state the value (miners.verify.evidence._may_state)."""
    assert gold_stated(text, "4\\sqrt{2} + 4", "math") is stated


# ------------------------------------------------------------------------------ closing ratings

# (output, gold): the conclusion is right, and a rating of it follows (real forms, abridged)
CONCLUSION_THEN_RATING = [
    (
        "So, |w| = sqrt(1^2 + 2^2 + 2^2) = sqrt(9) = 3.\n\nTherefore, the modulus length of w is 3.\n\n"
        "Confidence Level: 100%",
        "3",
    ),
    (
        "Area = 4(1/2)\n\nArea = 2\n\nSo, the area of triangle ABC is 2.\n\nConfidence level: 100% \n\n"
        "Reason: The formula used and the values plugged in are exact, and the steps are correct.",
        "2",
    ),
    (
        "$x = \\sqrt{9} = 3$\n\nSo, the distance from the center of the circle O to the chord AB is 3.\n\n"
        "Confidence in this answer: I am 95% confident in this answer. This is because I am confident "
        "that I used the Pythagorean theorem correctly. Therefore, I am confident in my answer.",
        "3",
    ),
    (
        "\\[\n\\text{det}(A) = (1)(4) - (2)(3) = 4 - 6 = -2\n\\]\n\nThus, the determinant of the matrix "
        "is \\(-2\\).\n\nSince the calculation follows a well-known formula, I am confident in the "
        "answer. My confidence level is:\n\n\\[\n\\boxed{100}\n\\]",
        "-2",
    ),
    (
        "Therefore, the answer is $\\boxed{(3, 6, 9)}$.\n\nNow, let's calculate the confidence level. In "
        "this case, the answer is straightforward, so I'll give a high confidence level of 90%.",
        "(3, 6, 9)",
    ),
]


@pytest.mark.parametrize(("output", "gold"), CONCLUSION_THEN_RATING)
def test_the_conclusion_before_a_closing_rating_is_read(verifier, output, gold):
    verdict = verifier.verify(output, gold, "math")
    assert (verdict.label, verdict.reason) == ("correct", "compared equal"), verdict


@pytest.mark.parametrize(("output", "gold"), CONCLUSION_THEN_RATING)
def test_a_wrong_conclusion_before_a_closing_rating_is_wrong(verifier, output, gold):
    other = "(3, 6, 8)" if gold.startswith("(") else str(int(gold) + 7)
    verdict = verifier.verify(output, other, "math")
    assert verdict.label == "wrong", verdict


def test_without_closing_rating():
    body = "So x = 3.\n\nConfidence level: 90%"
    assert without_closing_rating(body) == "So x = 3."
    assert without_closing_rating("So x = 3. I am 100% sure of it.") == "So x = 3."
    # a rating paragraph that states a value of its own is no closing rating
    kept = "So x = 3.\n\nWith 100% confidence, the general solution is y = 2x + C."
    assert without_closing_rating(kept) == kept
    assert (
        without_closing_rating("I am 100% confident that 6 + 6 = 12.")
        == "I am 100% confident that 6 + 6 = 12."
    )
    assert without_closing_rating("So the total is 100%.") == "So the total is 100%."


def test_a_doubt_in_words_is_no_closing_rating(verifier):
    out = "I think it's the term without x, but I'm not sure how to proceed.\nAnswer: [Answer]"
    assert without_closing_rating(out) == out
    assert verifier.verify(out, "75", "math").reason == "empty answer"


def test_a_rating_alone_still_concludes_nothing(verifier):
    verdict = verifier.verify("Let me compute it.\n\nConfidence level: 90%", "90", "math")
    assert (verdict.label, verdict.reason) == ("unknown", "no answer found")


# ------------------------------------------------------------------------------ the last sentence


def test_a_last_sentence_with_its_own_result_is_read(verifier):
    out = (
        "Jerry started with 7 action figures and 2 books. Then he added 4 more books. So he had 2 + 4 = 6 "
        "books. Since he had 7 action figures, he had 7 - 6 = 1 more action figure than books."
    )
    assert verifier.verify(out, "1.0", "gsm8k").label == "correct"
    assert verifier.verify(out, "6", "gsm8k").label != "correct"


@pytest.mark.parametrize(
    ("last", "value"),
    [
        ("Por lo tanto, Sophia podría haber recorrido alrededor de 300 millas.", "300"),
        ("Таким образом, Питер может сходить в кино 3 раза.", "3"),
        ("In andere woorden: het whiteboard wordt 24 keer per dag schoongemaakt.", "24"),
        ("Então, os três juntos têm 12 + 6 + 4 = 22 animais.", "22"),
        ("따라서 Ted가 가져올 감자 샐러드는 35개입니다.", "35"),
    ],
)
def test_a_concluding_word_of_another_language_opens_a_concluding_sentence(last, value):
    """markers.CONCLUDING_WORDS, a row per language: the working, then a last sentence that concludes."""
    out = f"We have 12 and 25 to work with.\nThat makes 37 in the middle.\n{last}"
    assert concluding(out, "gsm8k") == value


def test_a_closing_line_after_the_working_states_the_result():
    """A last paragraph of one short line, with no marker and no concluding word, states the result;
    a step's heading, a line before a cut, a restated unknown and a line cut mid-word do not."""
    working = "Ferdinand has 6 / 2 = 3 trees.\n\nHarry has 2 * 3 + 5 = 11 trees.\n\n"
    assert concluding(working + "Harry has 8 more trees in his yard than Ferdinand.", "gsm8k") == "8"
    assert concluding(working + "Average Speed = 50 mph", "gsm8k") == "50"
    assert (
        concluding(working + "Harry has 8 more trees in his yard than Ferdinand.", "gsm8k", whole=False)
        is None
    )
    assert concluding(working + "Step 4: Write the equation of the plane.", "math") is None
    assert concluding(working + "The problem states that the area is $$ x \\pi $$", "math") is None
    assert concluding(working + "Average Speed = 50 mph and then the", "gsm8k") is None


@pytest.mark.parametrize(("gold", "label"), [("20", "correct"), ("240", "correct"), ("21", "wrong")])
def test_dozens_are_read_as_a_count_and_as_the_things_counted(gold, label):
    """ "20 dozens" is 20 dozens or 240 eggs; which one the question asks for, the answer cannot say:
    equal to the gold either way is equal, unequal both ways is unequal."""
    out = (
        "Total eggs = 90 + 150 = 240 eggs\n\nTotal dozens = 240 / 12 = 20\n\nThe answer is 20 dozens of eggs."
    )
    assert Verifier(second_opinion=False).verify(out, gold, "gsm8k").label == label


def test_scientific_notation_at_a_sentence_end_is_read_whole(verifier):
    """ "1.025e1." ends a sentence: the full stop after the exponent is no decimal point (the property
    suite found "1.025" read, and called a right answer wrong)."""
    out = "Промежуточный итог равен the total.\n\nТаким образом, всего получается 1.025e1."
    assert concluding(out, "gsm8k") == "1.025e1"
    assert verifier.verify(out, "10.25", "gsm8k").label != "wrong"


def test_a_bracketed_list_of_numbers_is_one_value():
    assert concluding("To find 3w, we multiply.\n\nSo, 3w = (3, 6, 9).", "math") == "(3, 6, 9)"


def test_a_paragraph_break_ends_a_sentence(verifier):
    out = (
        "Then we have:\n\n$-12 \\div  (-2) = 6$\n\nFinally, we add 5:\n\n$6 + 5 = 11$\n\n"
        "So, $(-3) \\times  4 \\div  (-2) + 5 = 11$."
    )
    assert verifier.verify(out, "11", "math").label == "correct"
    assert verifier.verify(out, "6", "math").label == "wrong"


PENCILS = (  # a Llama-3.1-8B base-model GSM8K answer: "in the box." closes four of its sentences
    "Explanation: There are 20 pencils in the box. If 4 pencils are missing, then there are 16 pencils in "
    "the box.\nNow, we have to find the number of pairs of pencils in the box.\nWe know that 1 pair of "
    "pencils = 2 pencils.\nSo, 16 pencils = 16/2 = 8 pairs of pencils.\n"
    "Therefore, there are 8 pairs of pencils in the box."
)


def test_a_phrase_the_working_reuses_is_no_loop(verifier):
    assert not looping(PENCILS)
    assert concluding(PENCILS, "gsm8k") == "8"
    assert verifier.verify(PENCILS, "8", "gsm8k").label == "correct"
    assert verifier.verify(PENCILS, "10", "gsm8k").label != "correct"


_WORDS = st.lists(
    st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8), min_size=5, max_size=12, unique=True
)


@settings(max_examples=60, derandomize=True)
@given(_WORDS, st.integers(4, 8))
def test_a_sentence_said_again_and_again_is_a_loop(words, times):
    sentence = " ".join(words) + "."
    assert looping(" ".join([sentence] * times))


@settings(max_examples=60, derandomize=True)
@given(
    st.lists(
        st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8), min_size=16, max_size=30, unique=True
    ),
    st.integers(1, 5),
)
def test_one_phrase_among_other_words_is_no_loop(words, times):
    """One trigram up to five times, other words between each use: working that reuses a phrase."""
    phrase = "in the box."
    chunks = [" ".join(words[3 * k : 3 * k + 3]) for k in range(times + 1)]
    assert not looping(f" {phrase} ".join(chunks))


def test_a_value_the_concluding_sentence_sets_in_bold_is_its_answer(verifier):
    """The bold value is the output's own mark: no second opinion needed (math-verify, reading the
    plain text, takes the last number, 7); a WRONG still needs a statement that confirms it."""
    out = (
        "**Step 3: Calculate the answer**\n\n* 12 x 7 = **84 crayons**\n\n"
        "Therefore, there will be **84 crayons** in 7 boxes."
    )
    assert (verifier.verify(out, "84", "gsm8k").label, verifier.verify(out, "85", "gsm8k").label) == (
        "correct",
        "wrong",
    )
    assert emphasized_value("there will be **84 crayons** in 7 boxes.") == "84 crayons"
    assert emphasized_value("**Therefore, there are 84 crayons.**") is None  # a clause, not a value
    assert emphasized_value("**84** crayons in **7** boxes.") is None  # two marked: which is open


def test_commas_group_thousands_where_the_gold_groups_them_so(verifier):
    """A MATH gold written "3,544" groups thousands by commas: the answer's "5,000 - 1,456 = 3,544" is
    read that way (as a list it would be unequal). Against a bare 3544 nothing says which reading the
    answer meant."""
    out = "Subtract column by column, borrowing where needed.\n\nSo, \\(5,000 - 1,456 = 3,544\\)."
    assert verifier.verify(out, "3,544", "math").label == "correct"
    assert verifier.verify(out, "3544", "math").reason == "ambiguous answer"
    assert verifier.verify(out, "3,545", "math").label == "wrong"


# ------------------------------------------------- a check cut off in an unfinished clause

CHECK_CUT_MID_CLAUSE = (  # a GPT-4.1 reply cut at its token limit inside its verification
    "Combined value = Herb's house + Juan's house\n"
    "Combined value = $76,000 + $53,200 = $129,200\n\n"
    "**Step 3: Verification**\nLet's check:\nJuan's house is $53,200.\n"
    "Difference from Herb's = $76,000 - $53,200 = $22,800\n"
    "$22,800 is 30% of $76,000, {cut}"
)


@pytest.mark.parametrize(
    "cut", ["so the calculation is", "and so", "which is the total of", "so the difference =", "so the sum,"]
)
def test_a_value_before_a_cut_in_an_unfinished_clause_is_no_commitment(verifier, cut):
    """The last value the working wrote before the cut is not what the reply commits to: not wrong
    where the gold is stated earlier; wrong where it is stated nowhere (rule (b))."""
    out = CHECK_CUT_MID_CLAUSE.format(cut=cut)
    right = verifier.verify(out, "129200", "gsm8k")
    assert (right.label, right.reason) == ("unknown", TAV), right
    assert verifier.verify(out, "5", "gsm8k").label == "wrong"


def test_an_explicit_answer_before_the_cut_still_decides(verifier):
    """A marker or a box before the unfinished check commits to the answer: decided either way."""
    out = CHECK_CUT_MID_CLAUSE.replace("\n\n**Step 3", "\n\nFinal answer: $129,200\n\n**Step 3").format(
        cut="so the calculation is"
    )
    assert verifier.verify(out, "129200", "gsm8k").label == "correct"
    assert verifier.verify(out, "22800", "gsm8k").label == "wrong"


# ------------------------------------------------- an answer line over a rating line


def test_an_answer_line_over_a_rating_line_is_the_answer(verifier):
    """ "ANSWER: even" then "CONFIDENCE: 100" (the format a prompt asked for): the marker's line is the
    committed answer, not the expression in the sentence before; the rating line is no part of it."""
    out = "Therefore, h(-x) = h(x).\n\nSo \\( h(x) \\) is even.\n\nANSWER: even\nCONFIDENCE: 100"
    assert verifier.verify(out, "\\text{even}", "math").label == "correct"
    assert verifier.verify(out, "\\text{odd}", "math").label == "wrong"
    assert without_closing_rating(out) == out
    # a rating alone after the conclusion is still no answer of its own
    rated = "So \\( h(x) \\) is even.\n\nCONFIDENCE: 100"
    assert without_closing_rating(rated) == "So \\( h(x) \\) is even."
