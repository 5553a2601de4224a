"""Tests for miners.verify: extraction, every answer form both ways, pathological inputs, cache, verdicts.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/verify/test_verify.py -q

No test asserts a duration: the hang guards run the work in a thread and only check that it ended.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from miners.verify import UNKNOWN_REASONS, Verifier, answers_equal, extract_answer, is_equivalent, verify
from miners.verify import fast as fast_path
from miners.verify import symbolic as answer_symbolic
from pairstore.errors import BadInput


def finishes(fn, *args):
    """fn(*args) in a worker thread, joined with a generous limit: a hang guard, not a speed test."""
    out: dict[str, object] = {}
    th = threading.Thread(target=lambda: out.setdefault("value", fn(*args)), daemon=True)
    th.start()
    th.join(timeout=120)
    assert not th.is_alive(), "did not finish"
    return out["value"]


def assert_never_opposite(text, gold, kind, expected):
    """The verdict is never the opposite of the label, and the fast path's own reading is the label:
    a weak form the second opinion contests may be unknown (no miner trains on it), never reversed."""
    verdict = verify(text, gold, kind)
    assert verdict.label != ("wrong" if expected else "correct"), verdict
    if verdict.readings:
        assert verdict.readings[0].label in ("correct" if expected else "wrong", "unknown")
    if verdict.label == "unknown":
        assert verdict.reason in UNKNOWN_REASONS


# ------------------------------------------------------------------------------------------------
# extraction
# ------------------------------------------------------------------------------------------------

EXTRACTION = [
    # (output, kind, expected answer)
    ("We add them.\nThe answer is \\boxed{\\frac{\\sqrt{3}}{2}}.", "math", "\\frac{\\sqrt{3}}{2}"),
    ("so $\\boxed{\\{1, \\{2\\}\\}}$ holds", "math", "\\{1, \\{2\\}\\}"),
    ("First \\boxed{3} is wrong; the real one is \\boxed{\\dfrac{1}{2}}", "math", "\\dfrac{1}{2}"),
    ("He pays 3 * 4 = 12 dollars.\n#### 12", "gsm8k", "12"),
    ("Total is 7 + 5 = 12.\nFinal answer: 12", "task", "12"),
    ("**Final Answer:** 42", "gsm8k", "42"),
    ("The answer is $3.5$. Because half of 7 is 3.5.", "gsm8k", "3.5"),
    ("The answer is 3.5.", "gsm8k", "3.5"),
    ("Answer: 17", "gsm8k", "17"),
    # self-correction: the last committed answer wins
    ("The answer is 5.\nWait, I dropped a term. Redoing it: 5 + 1 = 6.\nThe answer is 6.", "gsm8k", "6"),
    ("Final answer: 8\nHmm, recheck: 9 is right.\nFinal answer: 9", "task", "9"),
    # a hallucinated follow-up question after the answer is not the answer
    (
        "3 + 3 = 6.\nThe answer is 6.\n\nQuestion: Tom has 4 apples and buys 8. How many?\nAnswer: 12",
        "gsm8k",
        "6",
    ),
    ("Final answer: 6\nQ: what is 2+2?\nA: The answer is 4.", "gsm8k", "6"),
    ("The answer is 6.<|im_start|>user\nAnother one?\nThe answer is 7", "gsm8k", "6"),
    # talk about an answer is not an answer
    ("Final answer: 10\nI double-checked and the answer is correct.", "gsm8k", "10"),
    # a bare short output is its own answer
    ("x = 3", "math", "x = 3"),
    ("$\\frac{1}{2}$", "math", "\\frac{1}{2}"),
]


@pytest.mark.parametrize("text,kind,expected", EXTRACTION)
def test_extract_answer(text, kind, expected):
    assert extract_answer(text, kind) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n ",
        "Let me think about this problem step by step.\nFirst we need the number of apples.\n"
        "Then we can work out the rest of it.",
        "How many letters are in banana?\n" * 20,
        "\\boxed{unclosed",
    ],
)
def test_extract_answer_none_found(text):
    assert extract_answer(text, "gsm8k") is None
    assert is_equivalent(text, "6", "gsm8k") is False


def test_unclosed_box_falls_back_to_a_marker():
    assert extract_answer("The answer is 4.\n\\boxed{5", "math") == "4"


def test_bad_kind_is_an_error():
    with pytest.raises(BadInput, match="kind"):
        is_equivalent("4", "4", "mmlu")


# ------------------------------------------------------------------------------------------------
# every form, both ways
# ------------------------------------------------------------------------------------------------

EQUAL = [
    # (pred_text, gold, kind)
    ("The answer is 1,250.", "1250", "gsm8k"),  # thousands separator
    ("#### 1,234,567", "1234567", "gsm8k"),
    ("Final answer: $1,250.00", "1250", "gsm8k"),  # currency
    ("Final answer: \\$18", "18", "gsm8k"),
    ("The answer is 18 apples.", "18", "gsm8k"),  # units
    ("Final answer: 12 km/h", "12", "gsm8k"),
    ("\\boxed{5 \\text{ cm}^2}", "5", "math"),
    ("\\boxed{25\\%}", "25", "math"),  # percentages
    ("Final answer: 25%", "25", "gsm8k"),
    ("\\boxed{50\\%}", "0.5", "math"),
    ("Final answer: 18.00", "18", "gsm8k"),  # integers vs decimals vs fractions
    ("\\boxed{0.5}", "\\frac{1}{2}", "math"),
    ("\\boxed{\\dfrac{3}{4}}", "0.75", "math"),
    ("\\boxed{\\tfrac{3}{4}}", "\\frac34", "math"),
    ("\\boxed{6/8}", "\\frac{3}{4}", "math"),
    ("\\boxed{.25}", "\\frac{1}{4}", "math"),
    ("Final answer: 7/2", "3.5", "gsm8k"),
    ("\\boxed{2\\frac{1}{2}}", "\\frac{5}{2}", "math"),  # mixed numbers
    ("Final answer: 3 1/2", "3.5", "gsm8k"),
    ("\\boxed{2\\sqrt{3}}", "\\sqrt{12}", "math"),  # radicals
    ("\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{\\sqrt{2}}{2}", "math"),
    ("\\boxed{\\sqrt[3]{8}}", "2", "math"),
    ("\\boxed{\\frac{\\pi}{2}}", "\\pi/2", "math"),  # pi
    ("\\boxed{2\\pi}", "2 \\pi", "math"),
    ("\\boxed{30^\\circ}", "30", "math"),  # degrees
    ("\\boxed{30^{\\circ}}", "30", "math"),
    ("The answer is 45°.", "45", "math"),
    ("\\boxed{-3°C}", "-3", "gsm8k"),  # a degree sign and its scale are a unit
    ("Final answer: -3 °F", "-3", "gsm8k"),
    ("\\boxed{20\\,^{\\circ}\\mathrm{C}}", "20", "math"),
    ("\\boxed{20^\\circ C}", "20", "math"),
    ("\\boxed{20℃}", "20", "math"),
    ("The answer is 68℉.", "68", "gsm8k"),
    ("\\boxed{-3}", "-3", "math"),  # negative numbers
    ("\\boxed{−3}", "-3", "math"),
    ("\\boxed{\\frac{-1}{2}}", "-\\frac{1}{2}", "math"),
    ("\\boxed{1.5 \\times 10^{3}}", "1500", "math"),  # scientific notation
    ("\\boxed{1.5e3}", "1500", "math"),
    ("\\boxed{2^{10}}", "1024", "math"),
    ("\\boxed{(1, 2)}", "(1,2)", "math"),  # tuples
    ("\\boxed{\\left( 3, -4 \\right)}", "(3,-4)", "math"),
    ("\\boxed{\\{3, 1, 2\\}}", "\\{1,2,3\\}", "math"),  # sets
    ("\\boxed{3, 1, 2}", "\\{1,2,3\\}", "math"),
    ("\\boxed{[1, 2)}", "[1,2)", "math"),  # intervals
    ("\\boxed{(-\\infty, 3]}", "(-\\infty,3]", "math"),
    ("\\boxed{(-\\infty, 0) \\cup (1, \\infty)}", "(-\\infty,0)\\cup(1,\\infty)", "math"),
    ("\\boxed{\\text{Monday}}", "\\text{monday}", "math"),  # \text answers
    ("\\boxed{\\textbf{no solution}}", "\\text{No solution}", "math"),
    ("The answer is (B).", "B", "math"),  # multiple choice
    ("\\boxed{\\text{(C)}}", "\\text{(C)}", "math"),
    ("\\boxed{x = 3}", "3", "math"),  # x = 3 against 3
    ("\\boxed{3}", "x=3", "math"),
    ("\\boxed{y = 2x + 3}", "y=3+2x", "math"),
    ("\\boxed{(x+1)^2}", "x^2+2x+1", "math"),  # expressions
    ("\\boxed{3+2i}", "2i+3", "math"),
    ("\\boxed{\\begin{pmatrix} 1 \\\\ -2 \\end{pmatrix}}", "\\begin{pmatrix}1\\\\-2\\end{pmatrix}", "math"),
    ("\\boxed{\\log_2 8}", "3", "math"),
    ("\\boxed{\\binom{5}{2}}", "10", "math"),
    ("\\boxed{5!}", "120", "math"),
    ("\\boxed{\\pm 3}", "3, -3", "math"),  # symbolic back end
    ("\\boxed{3 < x}", "x > 3", "math"),
    ("Final answer: bnn", "bnn", "task"),  # loop-fix task strings
    ("Final answer: **42**", "42", "task"),
    ("Final answer: 0.(142857)", "0.\\overline{142857}", "task"),
    ("Long division gives 12.\n#### 12", "So each gets 12.\n#### 12", "gsm8k"),  # gold as a solution
]

NOT_EQUAL = [
    ("The answer is 1,251.", "1250", "gsm8k"),
    ("#### 1,234,568", "1234567", "gsm8k"),
    ("Final answer: $1,250.50", "1250", "gsm8k"),
    ("Final answer: \\$19", "18", "gsm8k"),
    ("The answer is 17 apples.", "18", "gsm8k"),
    ("Final answer: 120 km/h", "12", "gsm8k"),
    ("\\boxed{6 \\text{ cm}^2}", "5", "math"),
    ("\\boxed{26\\%}", "25", "math"),
    ("Final answer: 20%", "25", "gsm8k"),
    ("\\boxed{5\\%}", "0.5", "math"),
    ("Final answer: 18.01", "18", "gsm8k"),
    ("\\boxed{0.55}", "\\frac{1}{2}", "math"),
    ("\\boxed{\\dfrac{4}{3}}", "0.75", "math"),
    ("\\boxed{0.333}", "\\frac{1}{3}", "math"),
    ("\\boxed{6/9}", "\\frac{3}{4}", "math"),
    ("Final answer: 2/7", "3.5", "gsm8k"),
    ("\\boxed{2\\frac{1}{3}}", "\\frac{5}{2}", "math"),
    ("Final answer: 3 1/4", "3.5", "gsm8k"),
    ("\\boxed{3\\sqrt{2}}", "\\sqrt{12}", "math"),
    ("\\boxed{\\sqrt{3}}", "\\frac{\\sqrt{2}}{2}", "math"),
    ("\\boxed{\\frac{\\pi}{3}}", "\\pi/2", "math"),
    ("\\boxed{3.14}", "\\pi", "math"),
    ("\\boxed{60^\\circ}", "30", "math"),
    ("\\boxed{-3°C}", "3", "gsm8k"),
    ("\\boxed{20^\\circ C}", "-20", "math"),
    ("\\boxed{3}", "-3", "math"),
    ("\\boxed{\\frac{1}{2}}", "-\\frac{1}{2}", "math"),
    ("\\boxed{1.5 \\times 10^{4}}", "1500", "math"),
    ("\\boxed{1.5e2}", "1500", "math"),
    ("\\boxed{2^{11}}", "1024", "math"),
    ("\\boxed{(2, 1)}", "(1,2)", "math"),
    ("\\boxed{(3, 4)}", "(3,-4)", "math"),
    ("\\boxed{\\{1, 2\\}}", "\\{1,2,3\\}", "math"),
    ("\\boxed{(1, 2)}", "\\{1,2\\}", "math"),
    ("\\boxed{[1, 2]}", "[1,2)", "math"),
    ("\\boxed{(1, 2)}", "[1,2)", "math"),
    ("\\boxed{(-\\infty, 3)}", "(-\\infty,3]", "math"),
    ("\\boxed{\\text{Tuesday}}", "\\text{Monday}", "math"),
    ("The answer is (D).", "B", "math"),
    ("The answer is 42.", "B", "math"),
    ("\\boxed{x = 4}", "3", "math"),
    ("\\boxed{y = 3x + 2}", "y=3+2x", "math"),
    ("\\boxed{(x-1)^2}", "x^2+2x+1", "math"),
    ("\\boxed{3-2i}", "3+2i", "math"),
    ("\\boxed{\\begin{pmatrix} -2 \\\\ 1 \\end{pmatrix}}", "\\begin{pmatrix}1\\\\-2\\end{pmatrix}", "math"),
    ("\\boxed{\\log_2 16}", "3", "math"),
    ("\\boxed{\\binom{5}{3}}", "11", "math"),
    ("\\boxed{3}", "3, -3", "math"),
    ("\\boxed{x < 3}", "x > 3", "math"),
    ("Final answer: bnna", "bnn", "task"),
    ("Final answer: Bnn", "bnn", "task"),
    ("Final answer: 41", "42", "task"),
    ("Final answer: 0.1428571428571428571428", "0.142857", "task"),  # a digit runaway
    ("Long division gives 13.\n#### 13", "So each gets 12.\n#### 12", "gsm8k"),
]


@pytest.mark.parametrize("pred,gold,kind", EQUAL)
def test_equal_forms(pred, gold, kind):
    assert is_equivalent(pred, gold, kind) is True


@pytest.mark.parametrize("pred,gold,kind", NOT_EQUAL)
def test_unequal_forms(pred, gold, kind):
    assert is_equivalent(pred, gold, kind) is False


@pytest.mark.parametrize(
    "text,gold,expected",
    [
        ("The answer is 6.\n\nQuestion: Tom has 4 apples and buys 8. How many?\nAnswer: 12", "6", True),
        ("The answer is 6.\n\nQuestion: Tom has 4 apples and buys 8. How many?\nAnswer: 12", "12", False),
        ("The answer is 5.\nWait, that is wrong: 2 + 4 = 6.\nFinal answer: 6", "6", True),
        ("The answer is 6.\nHmm, I misread. It is 7.\nFinal answer: 7", "6", False),
        ("6 - 0 = 6 - 0 = 6 - 0 = 6 - 0 = 6 - 0 = 6\n6 - 0 = 6 - 0 = 6 - 0 = 6", "6", False),
    ],
)
def test_whole_output_verdicts(text, gold, expected):
    assert is_equivalent(text, gold, "gsm8k") is expected


# ------------------------------------------------------------------------------------------------
# the forms of real model outputs and public test suites (bench/data/verify_outside_*.jsonl), one
# case per form; each was judged wrong before these forms were handled
# ------------------------------------------------------------------------------------------------

OUTSIDE_FORMS = [
    # (form, output, gold, kind, equal?)
    ("decimal comma", "1000,99", "1000.99", "math", True),
    ("decimal comma in prose", "Soucis : 2,74 $ a..", "2.74", "math", True),
    ("space as thousands separator", "1 000", "1000", "math", True),
    ("\\! as thousands separator", "is $\\boxed{11,\\! 111,\\! 111,\\! 100}$", "11111111100", "math", True),
    ("unboxed answer in \\[ \\]", "Answer \\[ 9 \\]", "9", "math", True),
    ("unboxed answer in $$ $$", "Answer $$ 9 $$", "9", "math", True),
    ("relation written two ways", "Therefore $x \\geq 5$ is the solution.", "x >= 5", "math", True),
    ("\\neq", "We find that $x \\neq 3$.", "x != 3", "math", True),
    ("double inequality as an interval", "$-2 \\le x \\le 7$", "x \\in [-2,7]", "math", True),
    ("an equation for the same line", "$y=-\\frac{1}{2}x+\\frac{3}{4}$", "2x+4y-3=0", "math", True),
    (
        "\\left[\\begin{array}\\right] matrix",
        "Special matrix: $ \\left[\\begin{array}{cc}1 & 2 \\\\3 & 4\\end{array}\\right] $",
        "\\begin{pmatrix}1 & 2 \\\\3 & 4\\end{pmatrix}",
        "math",
        True,
    ),
    (
        "pmatrix against bmatrix",
        "Here is a zero matrix: $ \\begin{pmatrix}0 & 0 \\\\0 & 0\\end{pmatrix} $",
        "\\begin{bmatrix}0 & 0 \\\\0 & 0\\end{bmatrix}",
        "math",
        True,
    ),
    ("boxes side by side", "\\boxed{1} and \\boxed{2} and \\boxed{3}", "1,2,3", "math", True),
    (
        "named boxes side by side",
        "$$\\boxed{k = 45} \\quad \\text{and} \\quad \\boxed{n = 2}$$",
        "k = 45, n = 2",
        "math",
        True,
    ),
    ("tuples for named values", "$(5,2),(7,2)$", "p=5,q=2;p=7,q=2", "math", True),
    ("ratio for a labelled ratio", "$\\boxed{7:32}$", "S_{MBCN}:S=7:32", "math", True),
    ("final answer in prose", "Final Answer: The largest $n$ is 34.", "34", "math", True),
    (
        "prose, then boilerplate",
        "Final Answer: The volume of $ABCDEFGH$ is 120. I hope it is correct.",
        "120",
        "math",
        True,
    ),
    (
        "answer after a repetition loop",
        "The answer is 36. " + "But But " * 40 + "[/think] <answer> 15 </answer>",
        "15",
        "math",
        True,
    ),
    (
        "a loop commits to nothing",
        "So 24 - 0 = 24 - 0 = 24 - 0 = 24 - 0 = 24 - 0 = 24 - 0 = 24 - 0 = 24",
        "24",
        "gsm8k",
        False,
    ),
    (
        "cut by <|im_start|>",
        "Therefore, there are 12 distinct arithmetic sequences that meet the three given "
        "conditions. I hope it is correct. <|im_start|>user",
        "12",
        "math",
        True,
    ),
    (
        "hallucinated next question",
        "3 + 3 = 6.\nSo the answer is $\\boxed{6}$.\n\nNow it's your turn to solve a "
        "question! Here's the question:\nWhat is 2+2? \\boxed{4}",
        "4",
        "math",
        False,
    ),
    (
        "invented User turn",
        " x + y = 30 \\\\ x - y = 4 </think> <answer> 17 </answer\nUser: The ratio of girls to "
        "boys is $5:3$. How many girls?\nAssistant: <think> girls = 5/8 * 60 </think> <answer> 30 </answer>",
        "17",
        "math",
        True,
    ),
    ("long decimal for a fraction", "$0.0833333333333333$", "\\frac{1}{12}", "math", True),
    (
        "<answer> tags",
        "<think> I need x + x^2 = 156. </think> <answer> The positive number is 12. </answer>",
        "12",
        "math",
        True,
    ),
    (
        "prose in <answer> after the reasoning",
        "</think> <answer> In the equation $|x-1|=7$, both $x=8$ and $x=-6$ "
        "satisfy the equation. Thus, the sum of the solutions is $8+(-6)=2$. </answer>",
        "2",
        "math",
        True,
    ),
    (
        "chain ending in the answer",
        "The answer (arabic numerals) is \n\n60 + 15 + 30 = 105",
        "105",
        "gsm8k",
        True,
    ),
    ("GSM8K calculator marks", "She makes 9 * 2 = $<<9*2=18>>18 every day\nA: 18", "18", "gsm8k", True),
    (
        "number words",
        "Therefore, the answer (arabic numerals) is two hundred ninety-four dollars.",
        "294",
        "gsm8k",
        True,
    ),
    (
        "number words with cents",
        "Therefore, the answer (arabic numerals) is Thirty-Four Dollars and Seventy-Two Cents.",
        "34.72",
        "gsm8k",
        True,
    ),
    ("currency and thousands separators", "the number is not 10 which is 1,000.99€", "1000.99", "math", True),
    (
        "base subscript",
        "<answer> \\( 10001_2 \\)\n\nUser: What is the units digit of $2^{2021}$?",
        "10001_2",
        "math",
        True,
    ),
    (
        "long garbage tail",
        "The area is \\(\\boxed{25}\\).pd自如取消 Brig that Bo noon Δ RELEASE\n IK())))\n "
        "”_trajectory ######## embarottes渗透",
        "25",
        "math",
        True,
    ),
    ("a bare number is read in the gold's unit", "\\boxed{0.1}", "10\\%", "math", False),
]


@pytest.mark.parametrize("form,text,gold,kind,expected", OUTSIDE_FORMS, ids=[f[0] for f in OUTSIDE_FORMS])
def test_outside_forms(form, text, gold, kind, expected):
    assert_never_opposite(text, gold, kind, expected)


# the forms of the held-out audit corpus (bench/data/verify_audit_round2.jsonl), one case per form;
# each was judged wrong before the form was handled
AUDIT_FORMS = [
    # (form, output, gold, kind, equal?)
    (
        "JSON answer field after a reasoning field",
        '```json\n{\n    "reasoning": "So $x = \\\\boxed{12}$ at '
        'first, but the two extra eggs make it 12 + 2 = 14.",\n    "answer": "14"\n}\n```',
        "14",
        "gsm8k",
        True,
    ),
    (
        "JSON answer field with escaped LaTeX",
        '{\n    "reasoning": "The ratio of the two areas is three to four, so '
        'the fraction is three quarters.",\n    "answer": "\\\\frac{3}{4}"\n}',
        "\\frac34",
        "math",
        True,
    ),
    (
        "JSON answer field with unescaped LaTeX",
        '{\n    "reasoning": "The ratio of the two areas is three to four, '
        'so the fraction is three quarters.",\n    "answer": "\\frac{3}{4}"\n}',
        "0.75",
        "math",
        True,
    ),
    (
        "JSON answer field holding a number",
        '{\n    "reasoning": "She had nine apples and gave two of them away, '
        'so nine minus two is left.",\n    "answer": 7\n}',
        "7",
        "math",
        True,
    ),
    (
        "JSON final_answer field",
        '{\n    "steps": ["She had nine apples.", "She gave two of them away."],\n    "final_answer": "7"\n}',
        "7",
        "math",
        True,
    ),
    (
        "fields after the JSON answer field are commentary",
        '{\n    "answer": "5",\n    "confidence": 0.9,\n    "notes": "at first I thought the answer is 6"\n}',
        "5",
        "math",
        True,
    ),
    (
        "JSON answer field with money",
        '{\n    "reasoning": "He earns $180.00 a day for seven days, which is '
        '$1,260.00 a week.",\n    "answer": "$1,260.00"\n}',
        "1260",
        "gsm8k",
        True,
    ),
    (
        "sentence after a program's output",
        "```python\nprint(total_vehicles - 26)\n```\n```output\n4.0\n```\n"
        "Four containers were imported on the second day.",
        "4",
        "gsm8k",
        True,
    ),
    (
        "a number in the code is no answer",
        "```python\ntotal_vehicles = 30\nprint(total_vehicles // 5 - 2)\n```\n"
        "```output\n4\n```\nFour containers were imported in total on the second day.",
        "30",
        "gsm8k",
        False,
    ),
    (
        "percent sentence after a program's output",
        "```python\nprint(12 / 20 * 100)\n```\n```output\n60.0\n```"
        "\n60% of the students enrolled in hip-hop dance.",
        "60",
        "gsm8k",
        True,
    ),
    (
        "passive sentence that opens with the answer",
        "```python\nprint(6000 / 2000)\n```\n```output\n3.0\n```\n"
        "Three trucks will be needed to transport 80 flagstones in one trip.",
        "3",
        "gsm8k",
        True,
    ),
    (
        "an output ending inside a code block",
        "The answer needs code.\n```python\ntotal = 30\n",
        "30",
        "gsm8k",
        False,
    ),
    ("a rate unit with inches", "Dividing, the speed is $\\boxed{4 \\text{ in/s}}$.", "4", "math", True),
    ("a currency written as letters", "So the cost is \\boxed{R28}.", "28", "math", True),
    ("a bare numeral for a base-n gold", "is $\\boxed{2516}$ in base eight.", "2516_8", "math", True),
    (
        "a bare numeral with digits the base lacks",
        "is $\\boxed{2596}$ in base eight.",
        "2516_8",
        "math",
        False,
    ),
    (
        "a gold written as a sentence",
        "Some other content. \\boxed{43}.",
        "Answer is forty three.",
        "math",
        True,
    ),
    (
        "a ratio pattern with an ellipsis",
        "The squares give $\\boxed{1:4:9:\\ldots}$",
        "1:2:3:\\ldots",
        "math",
        False,
    ),
]


@pytest.mark.parametrize("form,text,gold,kind,expected", AUDIT_FORMS, ids=[f[0] for f in AUDIT_FORMS])
def test_audit_forms(form, text, gold, kind, expected):
    assert_never_opposite(text, gold, kind, expected)


# ------------------------------------------------------------------------------------------------
# pathological inputs: False, quickly, never an exception
# ------------------------------------------------------------------------------------------------

PATHOLOGICAL = [
    "\\boxed{10^{10^{10}}}",
    "\\boxed{2^{2^{2^{2^{2^{2}}}}}}",
    "\\boxed{9^{9^{9}}}",
    "\\boxed{10**10**10}",
    "\\boxed{100000!}",
    "\\boxed{\\binom{10^{9}}{5 \\cdot 10^{8}}}",
    "\\boxed{" + "(" * 300 + "x" + ")" * 300 + "}",
    "\\boxed{" + "\\frac{1}{" * 60 + "2" + "}" * 60 + "}",
    "\\boxed{" + "+".join(f"x^{{{k}}}" for k in range(400)) + "}",
    "\\boxed{(x+1)^{100000}}",
    "\\boxed{\\sqrt{" * 80 + "2" + "}" * 80,
    "\\boxed{e^{e^{e^{e^{100}}}}}",
    "\\boxed{\\sin(10^{400})}",
]


@pytest.mark.parametrize("pred", PATHOLOGICAL)
def test_pathological_input_is_false_and_bounded(pred):
    assert is_equivalent(pred, "5", "math") is False  # main thread: the guard and the timer apply
    assert finishes(is_equivalent, pred, "5", "math") is False  # another thread: the guard alone


def test_pathological_input_in_a_worker_thread():
    """Signals only reach the main thread: the guard alone must keep other threads safe."""
    results: dict[str, bool] = {}

    def work():
        results["tower"] = is_equivalent("\\boxed{10^{10^{10}}}", "5", "math")
        results["factorial"] = is_equivalent("\\boxed{100000!}", "5", "math")
        results["symbolic"] = is_equivalent("\\boxed{\\pm 3}", "3, -3", "math")

    th = threading.Thread(target=work, daemon=True)
    th.start()
    th.join(timeout=30)
    assert not th.is_alive()
    assert results == {"tower": False, "factorial": False, "symbolic": True}


def test_symbolic_back_end_is_cut_off_by_the_timer(monkeypatch):
    """A symbolic comparison that runs too long is undecided (unknown), counted as a timeout; the
    caller's SIGALRM handler and timer are restored."""

    class SlowMathVerify:
        LatexExtractionConfig = ExprExtractionConfig = staticmethod(lambda: None)

        @staticmethod
        def parse(*args, **kwargs):
            time.sleep(30)  # interrupted by the interval timer
            return ["never"]

        @staticmethod
        def verify(*args, **kwargs):
            return True

    monkeypatch.setattr(answer_symbolic, "_load_math_verify", lambda: SlowMathVerify)
    monkeypatch.setattr(answer_symbolic, "SYMBOLIC_TIMEOUT_S", 0.05)
    before = signal.getsignal(signal.SIGALRM)
    v = Verifier()
    verdict = v.verify("\\boxed{\\log 100}", "2", "math")  # \\log without a base: the fast path defers
    assert (verdict.label, verdict.reason) == ("unknown", "comparison undecided")
    assert v.stats["timeouts"] == 1
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_an_unexpected_exception_is_a_counted_deferral(monkeypatch):
    """A bug in the fast path never becomes a silent verdict: it is counted and math-verify decides."""

    def broken(*args):
        raise KeyError("a bug")

    monkeypatch.setattr(fast_path, "value_verdict", broken)
    v = Verifier()
    assert v.verify_answer("\\frac{1}{2}", "0.5", "math").label == "correct"  # math-verify still agrees
    assert v.stats["fast path exceptions"] == 1 and v.stats["calls"] == 1


def test_stats_count_fast_and_deferred_verdicts_per_verifier():
    v, other = Verifier(), Verifier()
    assert v.verify_answer("2\\sqrt{3}", "\\sqrt{12}", "math").correct  # the exact evaluator
    assert v.verify_answer("\\sum_{k=1}^{3} k", "6", "math").correct  # \\sum: math-verify
    assert v.stats["fast path decided"] == 1 and v.stats["fast path undecided"] == 1
    assert v.stats["calls"] == 1
    assert not other.stats  # counters belong to a verifier, not to the module


@pytest.mark.parametrize(
    "pred,gold",
    [
        ("\\boxed{\\frac{}{}}", "1"),
        ("\\boxed{}", "1"),
        ("\\boxed{)(}", "(1,2)"),
        ("\\boxed{1/0}", "1"),
        ("\\boxed{\\sqrt{-1}}", "i"),
        ("\\boxed{\\log_1 5}", "3"),
        ("\\boxed{0^{-1}}", "1"),
        ("\\boxed{\\frac{1}{x-x}}", "1"),
        ("\\boxed{$$$}", "$"),
        ("\\boxed{\\begin{pmatrix}}", "1"),
        ("Final answer: \x00\x01\x02", "1"),
    ],
)
def test_malformed_input_never_raises(pred, gold):
    assert isinstance(is_equivalent(pred, gold, "math"), bool)
    assert isinstance(is_equivalent(pred, gold, "gsm8k"), bool)
    assert isinstance(is_equivalent(pred, gold, "task"), bool)


# ------------------------------------------------------------------------------------------------
# cache
# ------------------------------------------------------------------------------------------------


def test_verdicts_are_cached_per_answer_and_gold():
    v = Verifier()
    outputs = [f"Sample {k}: reasoning differs each time.\nFinal answer: 1,250" for k in range(20)]
    assert all(v.verify(o, "1250", "gsm8k").correct for o in outputs)
    assert v.stats["fast path decided"] == 1 and v.stats["cache hits"] == 19
    # a different kind or gold is a different entry
    assert v.verify_answer("1,250", "1250", "math").correct
    assert v.stats["fast path decided"] == 2


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed{" * 5000,
        "the answer is " * 5000,
        "How many letters are in banana? Final answer: \n" * 3000,
        "Final answer: 0." + "142857" * 5000,
        "我们来计算一下。" * 5000,
        "{" * 20000,
    ],
)
def test_long_degenerate_outputs_are_bounded(text):
    assert finishes(is_equivalent, text, "5", "gsm8k") is False
    assert finishes(is_equivalent, text, "5", "math") is False


def test_variables_are_compared_as_functions_not_names():
    assert answers_equal("\\sqrt{x^2}", "x", "math") is False  # |x| is not x
    assert answers_equal("\\frac{x^2-1}{x-1}", "x+1", "math") is True
    assert answers_equal("\\ln(e^{2})", "2", "math") is True
    assert answers_equal("i^2", "-1", "math") is True


# ------------------------------------------------------------------------------------------------
# loop-fix task golds, in the formats generators/ writes
# ------------------------------------------------------------------------------------------------

TASK_CASES = [
    # (answer, gold, equal?)
    ("83 R 0", "83 R 0", True),
    ("83 remainder 0", "83 R 0", True),
    ("Quotient: 83, remainder: 0", "83 R 0", True),
    ("83 R 1", "83 R 0", False),
    ("83", "83 R 0", False),
    ("165.580", "165.580", True),
    ("165.58", "165.580", False),  # "to 3 places" keeps the trailing zero
    ("165.5800000000000000", "165.580", False),
    ("0.1(6)", "0.1(6)", True),
    ("0.1\\overline{6}", "0.1(6)", True),
    ("1/6", "0.1(6)", False),  # the task asks for the expansion with the repeating part marked
    ("0.16666666", "0.1(6)", False),
    ("3.5", "7/2", True),
    ("\\frac{7}{2}", "7/2", True),
    ("-21,022", "-21022", True),
    ("5 times", "5", True),
    ("coppe", "coppe", True),
    ('"coppe"', "coppe", True),
    ("Coppe", "coppe", False),
    ("the 3 tres", "the 3 trees", False),  # trailing words are the answer here, not units
    ("the 3 tres.", "the 3 tres", True),
]


@pytest.mark.parametrize("answer,gold,expected", TASK_CASES)
def test_task_formats(answer, gold, expected):
    assert answers_equal(answer, gold, "task") is expected


def test_generated_chosen_answers_verify_against_their_gold():
    """The cross-team contract: every canonical chosen answer ends in a line the verifier reads."""
    from generators import generate_tasks

    tasks = generate_tasks(11, 140)
    assert {t.family for t in tasks} >= {"long_division", "fraction_expansion", "letter_removal"}
    for t in tasks:
        assert extract_answer(t.chosen, "task") == t.gold, t.task_id
        assert is_equivalent(t.chosen, t.gold, "task"), t.task_id


def test_nested_and_overlong_answers_are_bounded():
    nested = "\\boxed{" + "\\text{" * 3000 + "5" + "}" * 3000 + "}"
    assert finishes(is_equivalent, nested, "5", "math") is False  # 18,000 characters: a runaway
    assert finishes(answers_equal, "\\text{" * 200 + "5" + "}" * 200, "5", "math") is True  # deep but short


def test_long_text_answer_does_not_backtrack():
    # A letter-removal gold of many words once sent the trailing-units regex into exponential backtracking.
    for gold in (
        "on strang wizard guardd thir drawr byond thir loud grasshoppr bfor a pot",
        " ".join(["word"] * 300) + " a b",
    ):
        assert finishes(is_equivalent, "Final answer: " + gold, gold, "task")
