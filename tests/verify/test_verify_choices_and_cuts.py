"""Two classes of verdict: a multiple-choice answer given as an option's value, and an output cut off
after it committed to an answer.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/verify/test_verify_choices_and_cuts.py -q
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from audits.loops import scan
from miners.judge import OutputJudge
from miners.verify import Verifier, symbolic, verify
from miners.verify.verifier import before_cut, cut_point

# an answer tag around a sentence with several numbers: a weak form, which math-verify confirms
DISAGREE_FREE = "<think>x = 8 or x = -6</think> <answer>The sum of the solutions is $8+(-6)=2$.</answer>"

OPTIONS = ["$15$", "$17$", "$\\frac{35}{2}$", "$18$", "$\\frac{55}{3}$"]


# ---------------------------------------------------------------------------------- multiple choice


@pytest.mark.parametrize(
    "output,gold,label,reason",
    [
        ("The answer is \\boxed{18}.", "D", "correct", "compared equal"),  # option D's value
        ("The answer is \\boxed{36/2}.", "D", "correct", "compared equal"),  # the value, another form
        ("The answer is \\boxed{17.5}.", "D", "wrong", "compared unequal"),  # option C's value
        ("The answer is \\boxed{\\frac{55}{3}}.", "E", "correct", "compared equal"),
        ("The answer is \\boxed{16}.", "D", "wrong", "compared unequal"),  # no option's value
        ("The answer is \\boxed{D}.", "D", "correct", "compared equal"),  # the letter, as before
        ("The answer is \\boxed{(C)}.", "D", "wrong", "compared unequal"),
        ("The answer is (D) 18.", "D", "correct", "compared equal"),
    ],
)
def test_a_choice_answered_with_a_value_is_that_option(output, gold, label, reason):
    verdict = Verifier().verify(output, gold, "math", options=OPTIONS)
    assert (verdict.label, verdict.reason) == (label, reason)


def test_every_option_value_reads_as_its_letter():
    """The property over the whole option list: the value of option k is correct against letter k and
    wrong against every other letter."""
    v = Verifier()
    for k, option in enumerate(OPTIONS):
        output = f"So the result is \\boxed{{{option.strip('$')}}}."
        for j in range(len(OPTIONS)):
            got = v.verify(output, "ABCDE"[j], "math", options=OPTIONS).label
            assert got == ("correct" if j == k else "wrong"), (option, "ABCDE"[j], got)


def test_a_value_against_a_letter_without_options_is_unknown():
    """Without the options nobody can say which letter 18 is: never "wrong" (the right option's value
    would become a rejected answer)."""
    verdict = verify("The answer is \\boxed{18}.", "D", "math")
    assert (verdict.label, verdict.reason) == ("unknown", "option values unknown")
    short = Verifier().verify("The answer is \\boxed{18}.", "D", "math", options=OPTIONS[:2])
    assert short.label == "unknown"  # the options end before D


def test_two_options_of_one_value_leave_the_letter_open():
    options = ["$1/2$", "$0.5$", "$3$"]
    assert Verifier().verify("\\boxed{\\frac12}", "A", "math", options=options).label == "unknown"
    assert Verifier().verify("\\boxed{3}", "A", "math", options=options).label == "wrong"


FOUR = ["$1$", "$2$", "$3$", "$4$"]


@pytest.mark.parametrize(
    "answer",
    ["ACD", "A, C, D", "A,C,D", "A、C、D", "A、C 和 D", "A, C and D", "(A), (C), (D)", "\\text{A, C, D}",
     "D, A, C", "A C D", "A; C; D"],
)  # fmt: skip
def test_a_multiple_select_answer_is_its_set_of_letters(answer):
    # the gaokao's multiple-select form: the letters in any order, whatever separates them
    verdict = Verifier().verify(f"综上所述，答案为 \\boxed{{{answer}}}", "ACD", "math", options=FOUR)
    assert (verdict.label, verdict.reason) == ("correct", "compared equal")


@pytest.mark.parametrize("answer", ["A, C", "A", "C", "A, B, C, D", "ABD", "B, C", "A, C, D, E"])
def test_a_multiple_select_answer_with_another_set_is_wrong(answer):
    verdict = Verifier().verify(f"The answer is \\boxed{{{answer}}}.", "ACD", "math", options=FOUR)
    assert (verdict.label, verdict.reason) == ("wrong", "compared unequal")


def test_letters_are_read_as_a_set_only_where_the_gold_is_a_multiple_select_of_given_options():
    # without options, "AC" may be a segment's name: compared as it was written, not as a set
    assert Verifier().verify("\\boxed{C, A}", "AC", "math").label != "correct"
    assert Verifier().verify("\\boxed{AC}", "AC", "math").label == "correct"
    # a value gold is not a set of letters
    assert Verifier().verify("\\boxed{A, C}", "3", "math", options=FOUR).label != "correct"


def test_option_labels_inside_the_options_are_not_values():
    options = ["(A) 15", "(B) 17", "(C) 18"]
    assert Verifier().verify("\\boxed{18}", "C", "math", options=options).label == "correct"
    assert Verifier().verify("\\boxed{18}", "A", "math", options=options).label == "wrong"


# ---------------------------------------------------------------------------------------- cut off

CONFIRM_THEN_CUT = (
    "The robe takes 2 bolts of blue fiber and half that much white fiber, so 1 bolt.\n\n"
    "So, the total number of bolts is \\( 2 + 1 = 3 \\).\n\n"
    "Let's confirm this with a simple Python code.\n```python\nblue = 2\nwhite = blue / 2\nprint(blue +"
)
RESULT_THEN_CODE_THEN_CUT = (
    "Walking: 1.5 miles per hour for 4 hours, running: 6 miles per hour for 2 hours.\n\n"
    "Therefore, the total distance is 18 miles.\n\n"
    "Now, let's write the Python code to confirm this calculation:\n\n"
    "```python\nprint(1.5 * 4 + 6 * 2)\n```\n```output\n18.0\n```\n"
    "Now, let's correct the Python code:\n\n```python\nwalking = 6 / 4\n"
)


@pytest.mark.parametrize(
    "output,gold,label,reason",
    [
        # a committed answer before the cut counts (convention 4), either way round
        (CONFIRM_THEN_CUT, "3", "correct", "compared equal"),
        (CONFIRM_THEN_CUT, "4", "wrong", "compared unequal"),
        (RESULT_THEN_CODE_THEN_CUT, "18", "correct", "compared equal"),
        (RESULT_THEN_CODE_THEN_CUT, "20", "wrong", "compared unequal"),
        # nothing committed before the cut: cut off before any answer
        ("We compute 3 + 4 =", "7", "wrong", "truncated before any answer"),
        ("The total is \\boxed{\\frac{1", "7", "wrong", "truncated before any answer"),
        (
            "First we add the apples.\n```python\napples = 3 + 4\nprint(",
            "7",
            "wrong",
            "truncated before any answer",
        ),
        # the working was done and a check followed, but no sentence commits to a value: cannot tell
        (
            "We add the apples of both baskets.\n\nLet's verify this with Python.\n```python\nprint(",
            "7",
            "unknown",
            "no answer found",
        ),
    ],
)
def test_a_cut_off_output_is_read_up_to_the_cut(output, gold, label, reason):
    verdict = verify(output, gold, "gsm8k")
    assert (verdict.label, verdict.reason) == (label, reason)


def test_an_answer_read_before_a_cut_is_confirmed_by_math_verify():
    """Read from a cut-off text, the answer is a weak form: math-verify reads that text too."""
    verdict = verify(CONFIRM_THEN_CUT, "3", "gsm8k")
    assert [r.verifier for r in verdict.readings] == ["fast", "math-verify"]


def test_cut_point_is_where_the_unfinished_part_begins():
    assert cut_point("Done. The answer is 7.") is None  # finished
    assert cut_point("The answer is 7") is None  # no full stop is no cut
    text = "So x = 3.\n```python\nprint(x"
    assert text[cut_point(text) :].startswith("```python")
    boxed = "So the answer is \\boxed{\\frac{1}{2"
    assert boxed[cut_point(boxed) :].startswith("\\boxed{")
    op = "Line one.\nthen 3 + 4 ="
    assert op[cut_point(op) :] == "then 3 + 4 ="
    head, followed = before_cut(RESULT_THEN_CODE_THEN_CUT, cut_point(RESULT_THEN_CODE_THEN_CUT))
    assert followed and head.endswith("the total distance is 18 miles.")


def test_a_finished_output_with_code_is_not_read_as_cut():
    done = "So the total is 7.\n```python\nprint(3 + 4)\n```\nThe program prints 7, so the answer is 7."
    assert cut_point(done) is None
    assert verify(done, "7", "gsm8k").label == "correct"


# ------------------------------------------------------------------------------------- the miners


def test_the_judge_scans_in_batches_with_the_same_reports():
    outputs = [
        "3 + 4 = 7.\nFinal answer: 7",
        "I count the apples again and again. " * 40,
        "3 + 4 = 7.\nFinal answer: 7",  # judged once
        "",
        "0.142857" * 60,
    ]
    judged = OutputJudge().judge_all([(o, "7", "gsm8k") for o in outputs], workers=1)
    assert [j.report for j in judged] == [scan(o) for o in outputs]
    assert [j.verdict.label for j in judged] == ["correct", "wrong", "correct", "wrong", "wrong"]


# -------------------------------------------------------------------------------------- the audit


def test_the_audit_reads_the_options_of_a_labelled_file(tmp_path, run_cli, write_jsonl):
    rec = {"id": "q1", "pred": "The answer is \\boxed{18}.", "gold": "D", "kind": "math", "equal": True}
    path = write_jsonl(tmp_path / "mc.jsonl", [{**rec, "options": OPTIONS}])
    r = run_cli("audit", "verifier", "--path", str(path), "--json")
    assert r.exit_code == 0, r.output
    group = json.loads(r.output)["datasets"][0]
    assert group["ours"].get("correct") == 1 and group["ours_wrong_definite"] == 0
    bare = write_jsonl(tmp_path / "bare.jsonl", [rec])
    r = run_cli("audit", "verifier", "--path", str(bare), "--json")
    assert json.loads(r.output)["datasets"][0]["unknown_reasons"] == {"option values unknown": 1}
    bad = write_jsonl(tmp_path / "bad.jsonl", [{**rec, "options": "A or B"}])
    r = run_cli("audit", "verifier", "--path", str(bad))
    assert r.exit_code == 2 and "options" in r.output and "line 1" in r.output


def test_ten_options_go_by_ten_letters():
    """MMLU-Pro's options run to J: a letter past E is a choice where the problem has that many."""
    options = [f"${k}$" for k in range(10, 20)]  # A = 10, ..., H = 17, J = 19
    v = Verifier()
    assert v.verify("The answer is (H).", "H", "math", options=options).label == "correct"
    assert v.verify("The answer is (B).", "H", "math", options=options).label == "wrong"
    assert v.verify("The answer is \\boxed{17}.", "H", "math", options=options).label == "correct"
    assert v.verify("The answer is \\boxed{19}.", "H", "math", options=options).label == "wrong"
    # without options a gold past E is no choice letter: compared as written
    assert v.verify("The answer is H.", "H", "math").label == "correct"


# ------------------------------------------------------------------------------ the second opinion


def test_math_verify_reading_our_value_reuses_our_comparison():
    """A weak form confirmed: math-verify extracts the same value, so its label is ours and sympy is not
    asked to compare again; its reading is still recorded."""
    v = Verifier()
    verdict = v.verify(DISAGREE_FREE, "2", "math")
    assert verdict.label == "correct"
    readings = {r.verifier: r for r in verdict.readings}
    assert readings["math-verify"].label == "correct" and readings["math-verify"].answer
    assert v.stats["output_same_value"] == 1


def test_a_gold_is_parsed_once():
    symbolic.clear_caches()
    stats: Counter = Counter()
    assert symbolic.span_verdict("x^2+2x+1", "(x+1)^2", stats) is True
    assert symbolic.span_verdict("x^2+1", "(x+1)^2", stats) is False
    info = symbolic.gold_cache_info()
    assert (info.misses, info.hits) == (1, 1)
