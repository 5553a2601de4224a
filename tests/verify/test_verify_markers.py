"""Answer forms read as classes: markers of other languages (data, miners.verify.markers), a statement
cut off at the very end, an option named by its letter in prose, yes/no against true/false, a loop
of another answer after the answer, and an output certainly cut off before any answer. Each class is
tested both ways: its forms read right, and the near forms that must stay unknown or wrong.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/verify/test_verify_markers.py -q
"""

from __future__ import annotations

import pytest

from miners.verify import Verifier
from miners.verify.extract import read_answer
from miners.verify.markers import ANSWER_MARKERS, BOOLEAN_WORDS, boolean_value
from miners.verify.rules import find_spans, option_labels

WORKING = "We add the two parts: 5 + 7 = 12.\n\n"
NEUTRAL = "We look at the parts first.\n\n"  # working with no number in it


def verdict(output: str, gold: str, kind: str = "math", options=None):
    v = Verifier().verify(output, gold, kind, options=options)
    return v.label, v.reason


# ------------------------------------------------------------------ markers in other languages


@pytest.mark.parametrize("marker", ANSWER_MARKERS, ids=lambda m: m.language)
def test_every_marker_word_of_every_language_reads_its_answer(marker):
    """The property over the table: each word, before a colon, in brackets and as a heading, gives
    the value after it -- and a different value is wrong, not unknown."""
    for word in (*marker.words, *marker.same_line):
        for form in (f"{word}: 12", f"{word}：12", f"【{word}】12", f"[{word.title()}] 12 <eoa>"):
            assert verdict(WORKING + form, "12") == ("correct", "compared equal"), form
            assert verdict(WORKING + form, "13") == ("wrong", "compared unequal"), form
        if word not in marker.same_line:
            assert verdict(WORKING + f"## {word}\n\n12", "12") == ("correct", "compared equal"), word


@pytest.mark.parametrize("marker", [m for m in ANSWER_MARKERS if m.copulas], ids=lambda m: m.language)
def test_every_marker_copula_reads_the_sentence_after_it(marker):
    for word in marker.words:
        for copula in marker.copulas:
            sep = "" if not copula.isascii() and copula > "\u0530" else " "
            text = f"{WORKING}{word}{sep}{copula}{sep}12."
            assert verdict(text, "12") == ("correct", "compared equal"), text


@pytest.mark.parametrize(
    "output,gold,expected",
    [
        ("【解析】集合的交集是{0,1,2}。<eoe>\n【答案】: D <eoa>", "D", ("correct", "compared equal")),
        ("【解析】……<eoe>\n【答案】C<eoa>", "D", ("wrong", "compared unequal")),
        ("所以答案是D。", "D", ("correct", "compared equal")),
        ("Ответ: $\\frac{1}{2}$", "0.5", ("correct", "compared equal")),
        ("Die Antwort lautet 42.", "42", ("correct", "compared equal")),
        ("La réponse est 7.", "7", ("correct", "compared equal")),
        ("**Final Answer**\n\n$x = 3$", "3", ("correct", "compared equal")),
        ("## Final Answer\n12", "12", ("correct", "compared equal")),
        ("**Answer:** 12", "12", ("correct", "compared equal")),
        ('{"reasoning": "5+7", "answer": "12"}', "12", ("correct", "compared equal")),
        ("<answer>12</answer>", "12", ("correct", "compared equal")),
        ("Answer: (C)", "C", ("correct", "compared equal")),
        ("The answer is Option C.", "C", ("correct", "compared equal")),
        ("The answer is choice (c).", "C", ("correct", "compared equal")),
        ("The answer is $\\text{(C)}$.", "C", ("correct", "compared equal")),
        ("So $\\boxed{12}$.\n\nTherefore, the answer is 12 apples.", "12", ("correct", "compared equal")),
    ],
)
def test_forms_a_fresh_source_brings(output, gold, expected):
    assert verdict(output, gold) == expected


@pytest.mark.parametrize(
    "output",
    [
        # talk about an answer, not one: nothing value-like after the copula
        NEUTRAL + "我们检查了一遍，答案是正确的",
        # a marker that continues a word of a spaced script is no marker
        NEUTRAL + "Responsabilidad: 12 personas trabajan aquí y el resto no",
        # a marker's colon in the middle of a sentence
        NEUTRAL + "我们要找的答案：首先设它为 12 个单位，再看",
        # words after a copula are talk about an answer, not one
        NEUTRAL + "Wir prüfen alles. Die Antwort ist richtig",
        NEUTRAL + "On vérifie. La réponse est correcte",
        # the marker ends its line and a paragraph follows: working or a refusal, not a value
        "【答案】\n首先，我们需要求出t。然后代入面积公式。因此无法直接给出具体的答案。",
        # a heading with a paragraph under it
        "## Answer\n\nWe first find t. Then we put it in the formula. Then we are done",
    ],
)
def test_near_marker_forms_commit_to_nothing(output):
    """No commitment: unknown, or wrong by rule (b) only (the gold's value stated nowhere)."""
    assert verdict(output, "12") in (("unknown", "no answer found"), ("wrong", "gold's value stated nowhere"))


def test_solution_word_is_read_only_with_its_value_on_its_line():
    """解答 heads a worked solution as often as it states an answer: a value on its line is the answer,
    a solution below it is not read as one."""
    assert verdict(WORKING + "解答：12", "12") == ("correct", "compared equal")
    assert read_answer("解答：\n设 x 为所求的数，则 x + 5 = 17。", "math").rule != "marker_line"


# ------------------------------------------------------------- a statement cut off at the end


@pytest.mark.parametrize(
    "ending",
    [
        "\n\nNow, considering all the above, the final answer is",
        "\n\nNow, considering all the above analysis, the final answer is:",
        "\nThe answer is -",
        "\nThe answer is",
        "\nFinal answer: ",
        "\n答案：",
        "\nSo the correct option is",
    ],
)
def test_a_cut_statement_at_the_end_leaves_the_answer_before_it(ending):
    assert verdict("The answer is (A)." + ending, "A") == ("correct", "compared equal")
    assert verdict("The answer is (A)." + ending, "B") == ("wrong", "compared unequal")


def test_a_cut_statement_with_nothing_before_it_is_truncation():
    """Certainly cut off (a statement of the answer broken at the end) and no answer anywhere: wrong,
    truncated before any answer."""
    text = "Jeremy drives 400 miles a month, and each tire can undergo 10,440,\nTherefore, the answer is"
    assert verdict(text, "6") == ("wrong", "truncated before any answer")


def test_an_empty_box_or_tag_still_commits_to_nothing():
    """The cut-statement class is markers only: an empty box at the end is the model's own empty
    answer (convention 6), not a cut. An empty answer is no evidence against the gold: it is wrong
    only where the output states the gold's value nowhere, and unknown where it does."""
    after_a_value = ("unknown", "empty answer after a possible answer")
    assert verdict("The answer is (A). So \\boxed{}", "A") == after_a_value
    assert verdict("The answer is 3.\n<answer></answer>", "3") == (
        "unknown",
        "empty answer after a possible answer",
    )
    assert verdict("The answer is 3.\n<answer></answer>", "7") == ("wrong", "empty answer")
    assert verdict("We add the parts. So \\boxed{}", "7") == ("wrong", "empty answer")


def test_a_finished_statement_at_the_end_is_no_cut():
    assert verdict("The answer is (A).\nThe final answer is B", "B") == ("correct", "compared equal")
    assert verdict("The answer is 12.\nThe answer is -12", "-12") == ("correct", "compared equal")


# ----------------------------------------------------------- an option named by its letter


OPTIONS = ["A)1 hour and 31 minutes", "B)2 minutes", "C)3.5 miles", "D)3.85 miles", "E)$78.20"]


@pytest.mark.parametrize(
    "output,gold",
    [
        ("Distance = 3.85 miles\n\nSo, the correct answer is:\n\nD) 3.85 miles", "D"),
        ("91 minutes = 1 hour and 31 minutes\n\nThe correct answer is:\nA)1 hour and 31 minutes", "A"),
        ("x = 2 minutes\n\nSo the correct answer is:\n\nB)2 minutes", "B"),
        ("So the correct answer is 'E)$78.20'.", "E"),
        ("So, the correct option is:\nB)2 minutes", "B"),
        ("x = 78.21 (approximately)\n\nThe original price is closest to option E) $78.20.", "E"),
    ],
)
def test_an_option_restated_with_its_letter_is_that_letter(output, gold):
    assert verdict(output, gold, options=OPTIONS) == ("correct", "compared equal")
    other = "C" if gold != "C" else "A"
    assert verdict(output, other, options=OPTIONS) == ("wrong", "compared unequal")


def test_a_letter_list_against_one_letter_is_wrong_and_letters_in_prose_are_ambiguous():
    assert verdict("The answer is (B) and (D).", "B", options=OPTIONS) == ("wrong", "compared unequal")
    assert verdict("The answer is B, D.", "B", options=OPTIONS) == ("wrong", "compared unequal")
    assert verdict("The answer is (B), since (D) fails.", "B", options=OPTIONS) == (
        "unknown",
        "ambiguous answer",
    )


def test_option_labels_are_explicit_labels_only():
    assert option_labels("D) 3.85 miles") == (("D",), False)
    assert option_labels("closest to option E) $78.20") == (("E",), False)
    assert option_labels("(B) and (D)") == (("B", "D"), True)
    assert option_labels("A train leaves at 5 and arrives at 7") == ((), False)
    assert option_labels("x = 12") == ((), False)


def test_a_label_against_a_gold_that_is_no_letter_is_not_read_as_a_letter():
    assert verdict("So the correct answer is:\n\nD) 3.85 miles", "3.85") == ("correct", "compared equal")


# ------------------------------------------------------------------------ yes/no, true/false


@pytest.mark.parametrize("value", [True, False])
def test_every_boolean_word_compares_by_what_it_says(value):
    gold = "True" if value else "False"
    for word in BOOLEAN_WORDS[value]:
        assert boolean_value(word) is value, word
        # "Answer:" -- after "The answer is", "correct" is talk about an answer, not one
        assert verdict(f"{WORKING}Answer: {word}", gold)[0] == "correct", word
        assert verdict(f"{WORKING}Answer: {word}", "False" if value else "True")[0] == "wrong", word


def test_no_word_says_both_yes_and_no():
    assert not set(BOOLEAN_WORDS[True]) & set(BOOLEAN_WORDS[False])


def test_a_brace_left_open_by_an_escape_is_no_crash():
    assert verdict("We write the set as \\{1, 2, 3\\} and the rest as \\{", "7")[0] in ("unknown", "wrong")


def test_yes_against_true_and_no_against_yes():
    assert verdict("Since G satisfies all four conditions, it is a group.\nThe answer is Yes.", "True") == (
        "correct",
        "compared equal",
    )
    assert verdict("The answer is No.", "Yes") == ("wrong", "compared unequal")
    assert verdict("Ответ: да", "True") == ("correct", "compared equal")
    assert boolean_value("Yes, because 3 > 2") is None  # a sentence, not a yes/no word


# ----------------------------------------------------------------- a loop after the answer


def test_a_loop_of_another_answer_after_the_answer_is_ambiguous():
    loop = "```python\nTherefore, the answer is False.\n```\n" * 12
    assert verdict("It holds for linear maps.\nThe answer is True.\n" + loop, "True") == (
        "unknown",
        "ambiguous answer",
    )


def test_a_loop_of_the_same_answer_is_that_answer():
    loop = "The answer is -3/8.\n" * 20 + "The answer is -"
    assert verdict("So x = -3/8.\nThe answer is -3/8.\n" + loop, "-0.375") == ("correct", "compared equal")
    assert verdict("The answer is True.\n" * 20 + "The answer is", "True") == ("correct", "compared equal")


def test_two_repeats_are_no_loop():
    """Under three repeats is a restatement: the last answer counts (a self-correction)."""
    text = "The answer is 4.\nWait, recompute: 5.\nThe answer is 5.\nThe answer is 5."
    assert verdict(text, "5") == ("correct", "compared equal")


# ------------------------------------------------- certainly cut off before any answer


@pytest.mark.parametrize(
    "output",
    [
        "To find Q1, we can use the formula:\nTherefore, the range of",
        "The concentration is $300,000 \\mathrm{~g} / 12,000,000 t \\mathrm{ga",
        "We have\n\\begin{align*}\n&\\iint_{\\Sigma} x^3 dy\\,dz \\\\",
        "The volume is\n   \\[\n   V = \\frac{1}{6} \\left| \\mathbf{a} \\",
        "So we get $$ x = \\frac{3}{",
        "所以我们\ufffd",
    ],
)
def test_an_output_certainly_cut_off_before_any_answer_is_wrong(output):
    assert verdict(output, "7") == ("wrong", "truncated before any answer")


@pytest.mark.parametrize(
    "output",
    [
        # ends normally, with no marker: unknown, never wrong (the right answers called wrong before)
        "Therefore, the perimeter of the rectangle is 22",
        "Please provide the relevant dimensions or the actual diagram.",
        "We can then choose 1 person to sit at the first table",
        # an unclosed group in the middle of a finished output is no cut
        "We use \\begin{align} x = 1 and go on.\n\nThe two values differ, so we stop here.",
        # a short answer that is a letter or a variable
        "a",
        "A",
    ],
)
def test_an_output_that_may_have_ended_is_never_truncated(output):
    assert verdict(output, "7") != ("wrong", "truncated before any answer")


def test_a_cut_off_output_with_an_answer_before_the_cut_keeps_it():
    text = "The answer is 7.\n\nLet me double-check: we have $$ x = \\frac{3}{"
    assert verdict(text, "7") == ("correct", "compared equal")


@pytest.mark.parametrize("ending", ["The answer is: ...", "Final answer: ___", "Answer: [Answer]"])
def test_a_blank_the_model_wrote_is_an_empty_answer_not_a_cut(ending):
    """An output that ends on a template's blank ended normally: its answer is empty (convention 6),
    and what it said before is not read as its answer -- wrong where the gold's value is stated
    nowhere, unknown where the working states it."""
    assert verdict(NEUTRAL + ending, "12") == ("wrong", "empty answer")
    assert verdict(WORKING + ending, "12") == ("unknown", "empty answer after a possible answer")


@pytest.mark.parametrize("cue", ["∴", "故", "综上，", "因此"])
def test_a_concluding_sentence_after_a_therefore_sign_or_word(cue):
    text = f"∵ AB=AC，∠A=108°\n\n由三角形内角和得到两个底角相等。\n{cue}∠B=36°。"
    assert verdict(text, "36")[0] == "correct"
    assert verdict(text, "72")[0] in ("wrong", "unknown")  # a weak form: never correct


def test_marker_words_joined_by_an_underscore_or_a_hyphen():
    """ "FINAL_ANSWER: 18" is the marker "final answer" with its words joined otherwise."""
    for marker in ("FINAL_ANSWER", "Final-Answer", "final answer"):
        assert verdict(WORKING + f"{marker}: 18", "18") == ("correct", "compared equal"), marker
        assert verdict(WORKING + f"{marker}: 17", "18")[0] == "wrong", marker


def test_a_sentence_stating_several_values_commits_to_none():
    """Two values side by side and no '=': the one read is a guess; unknown where the output states
    the gold's value, wrong by rule (b) only where it states it nowhere."""
    out = "Total = 4 + 6 = 10 boxes.\n\nFinal Answer: Tim has 4 blue boxes and 6 red boxes left in his box."
    assert verdict(out, "10") == ("unknown", "ambiguous answer")
    assert verdict(out.replace("= 10 boxes", "boxes"), "10") == ("wrong", "gold's value stated nowhere")


def test_a_number_against_a_yes_no_gold_is_undecided():
    """ "Therefore, 4479 is not a prime number." read as 4479: what the sentence is about, not its
    answer to a yes/no question."""
    out = "We check the divisors.\n\nTherefore, 4479 is not a prime number."
    assert verdict(out, "No")[0] == "unknown"


def test_a_yes_no_word_in_brackets_is_the_answer():
    """The prompt's '[Yes]' or '[No]' format: the bracketed word is the answer, on its own line or
    inside the last sentence, first or last; display math and a markdown link are none."""
    said = "We check the divisors.\n\nTherefore, [No], 4479 is not a prime number."
    assert verdict(said, "No") == ("correct", "compared equal")
    assert verdict(said, "yes") == ("wrong", "compared unequal")
    assert verdict("We check the divisors.\n\nSo 14533 is a prime number.\n\n[Yes]", "yes")[0] == "correct"
    assert verdict("[No]\n\nExplanation: 13537 is divisible by 7.", "yes")[0] == "wrong"
    assert verdict("Es ist eine Primzahl.\n\n[Ja]", "yes")[0] == "correct"
    for text in ("See [yes](https://example.org) above.", "So \\[ No \\] holds.", "[Yes, it is]"):
        assert [s.rule for s in find_spans(text)] == [], text
