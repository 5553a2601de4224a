"""Two classes of verdict: an output that echoes the prompt's answer format before it works, and an
output that goes on, after its answer, to invent the next turn of a few-shot prompt.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/verify/test_verify_echoes_and_turns.py -q

- The prompt's format echoed ("#### <number>" and the problem after it) states no answer: it is no
  committed answer, so the problem it goes on with is no invented question, and the reply's own
  `#### N` is read. A final marker that is itself empty still commits to nothing.
- An output whose turn opens with "A:" and that, after a marker stated its answer ("The answer is
  3."), opens another "A:" turn invented that turn: the answer is the one before it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miners.verify import Verifier
from miners.verify.extract import _FOLLOWUP_RE, extract_answer, followup_starts

# what a chat model's output holds when its prompt is echoed in it (the template's tokens dropped)
ECHO_EN = (
    "user\n\nYou are a careful math tutor. Solve the following problem step by step.\n"
    "At the end, output ONLY the final numeric answer on a line starting with:\n#### <number>\n\n"
    "Problem:\nA shop sells {a} boxes of {b} pens each. How many pens does it sell?assistant\n\n"
)
ECHO_ZH = (
    "请逐步解答下面这道题。\n最后请只在单独一行输出最终的数字答案，格式为：\n#### <number>\n\n"
    "题目：\n商店卖出 {a} 盒笔，每盒 {b} 支。\n\n"
)
WORKING = "Step 1: Pens per box = {b}.\nStep 2: Total pens = {a} * {b}\nTotal pens = {c}\n\n"


def _echoed(value: int, a: int = 12, b: int = 7, echo: str = ECHO_EN, ending: str = "#### {v}") -> str:
    return echo.format(a=a, b=b) + WORKING.format(a=a, b=b, c=a * b) + ending.format(v=value)


@pytest.mark.parametrize("echo", [ECHO_EN, ECHO_ZH], ids=["en", "zh"])
@pytest.mark.parametrize(
    "ending",
    [
        "#### {v}",
        "### Final Answer:\n\n#### {v}",
        "---\n\n#### {v}\n\n#### <number>{v}",  # the template's placeholder written before the value
        "Total pens = <<12*7={v}>>{v}.\n#### {v}",
    ],
)
def test_the_reply_after_an_echoed_format_is_read(echo, ending):
    right = _echoed(84, echo=echo, ending=ending)
    assert extract_answer(right, "gsm8k") == "84"
    assert Verifier().verify(right, "84", "gsm8k").label == "correct"
    wrong = _echoed(85, echo=echo, ending=ending.replace("12*7", "12*7+1"))
    verdict = Verifier().verify(wrong, "84", "gsm8k")
    # (84 stands in the working: a WRONG needs the committed 85, compared unequal)
    assert (verdict.label, verdict.reason, verdict.answer) == ("wrong", "compared unequal", "85")


@given(st.integers(2, 60), st.integers(2, 60), st.integers(1, 5000), st.sampled_from([ECHO_EN, ECHO_ZH]))
def test_an_echoed_format_never_blocks_the_final_answer(a, b, shown, echo):
    """The class as a property: whatever the reply's `#### N`, it is the answer, and the verdict is
    the comparison of N with the gold (never unknown for the echo, never the opposite)."""
    output = _echoed(shown, a, b, echo)
    verdict = Verifier().verify(output, str(a * b), "gsm8k")
    assert verdict.answer == str(shown)
    assert verdict.label == ("correct" if shown == a * b else "wrong")


@pytest.mark.parametrize(
    "ending,gold,label,reason",
    [
        # the reply's own final marker left empty: it commits to nothing, whatever came before
        ("####", "84", "unknown", "no answer found"),  # (no span: hashes with nothing after them)
        ("#### ___", "84", "unknown", "empty answer after a possible answer"),
        ("#### <number>", "84", "unknown", "empty answer after a possible answer"),
        ("Answer: ___", "84", "unknown", "empty answer after a possible answer"),
        # ... and is wrong only by rule (b): the gold's value stated nowhere
        ("#### <number>", "5000", "wrong", "empty answer"),
    ],
)
def test_an_empty_final_marker_still_commits_to_nothing(ending, gold, label, reason):
    verdict = Verifier().verify(_echoed(0, ending=ending), gold, "gsm8k")
    assert (verdict.label, verdict.reason) == (label, reason)


@pytest.mark.parametrize("echo", [ECHO_EN, ECHO_ZH], ids=["en", "zh"])
@pytest.mark.parametrize(
    "ending,gold,label",
    [
        # no marker of its own: the reply's concluding sentence, confirmed by math-verify
        ("Therefore, the shop sells {v} pens.", "84", "correct"),
        ("因此，商店一共卖出 {v} 支笔。", "84", "correct"),
        ("Therefore, the shop sells {v} pens.", "90", "wrong"),
    ],
)
def test_a_reply_without_a_marker_after_an_echoed_format(echo, ending, gold, label):
    """The echoed format is no empty answer: the reply is read as one with no marker."""
    verdict = Verifier().verify(_echoed(84, echo=echo, ending=ending), gold, "gsm8k")
    assert verdict.label == label, verdict
    assert verdict.reason != "empty answer after a possible answer"


def test_an_invented_question_after_the_reply_is_still_cut():
    """The echo's problem is no invented question; a new question after the reply's answer is."""
    output = _echoed(84) + "\n\nQuestion: A shop sells 3 boxes of 4 pens. How many pens?\n#### 12"
    assert extract_answer(output, "gsm8k") == "84"
    assert Verifier().verify(output, "84", "gsm8k").label == "correct"
    assert Verifier().verify(output, "12", "gsm8k").label != "correct"


# ------------------------------------------------------------------------------- invented turns

TURN = (
    "A: He has {n} cards now and got {k} more, so he had {n} - {k} = {v} cards at first. The answer is {v}."
)
QUESTION = "\n\nQ: Tom has 4 apples and buys 8. How many?\nA: The answer is 12."


@pytest.mark.parametrize(
    "output,answer",
    [
        # the same turn again and again, cut inside the last one
        ("\n" + "\n\n".join([TURN.format(n=10, k=7, v=3)] * 4) + "\n\nA: If there are 1", "3"),
        # the prompt's exemplars replayed as "A:" turns, each with its own answer
        (
            "\n"
            + TURN.format(n=10, k=7, v=3)
            + "\n\nA: If there are 3 cars in the lot and 2 more arrive, how many cars are there?"
            + "\n\nA: There are 3 cars. 2 more arrive. 3 + 2 = 5. The answer is 5.",
            "3",
        ),
        # a "Q:" turn invented the same way
        (TURN.format(n=10, k=7, v=3) + QUESTION, "3"),
    ],
)
def test_an_invented_turn_after_the_answer_is_no_answer(output, answer):
    assert extract_answer(output, "gsm8k") == answer
    assert Verifier().verify(output, answer, "gsm8k").label == "correct"
    assert Verifier().verify(output, "12" if answer != "12" else "13", "gsm8k").label != "correct"


@pytest.mark.parametrize(
    "output,answer",
    [
        # no marker stated an answer before the second "A:" line: it is the turn's answer
        ("A: Let's think step by step. He had 10 cards and got 7 more.\nA: 17", "17"),
        # an output that does not open an "A:" turn: its "A:" line is its answer line
        ("He had 10 - 7 = 3 cards. So the answer is 3.\nA: 17", "17"),
    ],
)
def test_an_a_line_that_opens_no_new_turn_is_read(output, answer):
    assert extract_answer(output, "gsm8k") == answer


# pieces a follow-up search meets: both of its forms, their near misses, line breaks, a word joined to a
# phrase ("known it's your turn" is no "now it's your turn"), a form broken by a line break
FOLLOWUP_PIECES = (
    "\n",
    "\n\n",
    " ",
    "Question:",
    "question 2.",
    "Q:",
    "q.",
    "> **Problem 3:**",
    "New problem：",
    "Follow-up question:",
    "Now it's your turn",
    "NOW IS YOUR TURN",
    "your turn!",
    "Your turn:",
    "here is a new question",
    "Can you now solve",
    "now solve the following\nproblem.",
    "Please answer this question",
    "known",
    "éyour turn:",
    "The answer is 12.",
    "x = 3",
    "Questions",
    "\\(q\\)",
)


@settings(max_examples=300, derandomize=True)
@given(st.lists(st.sampled_from(FOLLOWUP_PIECES), max_size=14), st.data())
def test_the_follow_up_fast_path_is_the_regex(pieces, data):
    """followup_starts (two prefix searches merged) finds what _FOLLOWUP_RE.finditer finds, from
    any place (often where a piece begins: a line that starts right at the search's start): the one
    declaration of the invented-turn forms, and its fast path held equal to it."""
    text = "".join(pieces)
    boundaries = [sum(len(p) for p in pieces[:k]) for k in range(len(pieces) + 1)]
    pos = data.draw(st.one_of(st.sampled_from(boundaries), st.integers(0, len(text))))
    assert followup_starts(text, pos) == [m.start() for m in _FOLLOWUP_RE.finditer(text, pos)]


# a chat transcript stored with its prompt, the template's special tokens dropped (the role words stay,
# glued to the text): the prompt asks for a box the reply never writes
CHAT_ECHO = (
    "system\n\nCutting Knowledge Date: December 2023\n\nAnswer the following questions. You should "
    "think step-by-step and put your final answer within \\boxed{}.user\n\nQuestion: A bus goes 300 "
    "miles and a car 240 miles. How many miles farther did the bus go?assistant\n\n"
)
REPLY = (
    "Difference = 300 miles - 240 miles\nDifference = 60 miles\n\n"
    "So, the bus went {v} miles farther than the car."
)


@pytest.mark.parametrize(
    "echo",
    [
        CHAT_ECHO,
        "请一步一步地思考，并将最终答案放在\\boxed{}中。\n\n",
        "Please write the answer in $\\boxed{}$.\n\n",
    ],
    ids=["chat", "zh", "dollars"],
)
def test_a_box_the_prompt_asks_for_is_no_empty_answer(echo):
    """An empty box inside an instruction ("put your final answer within \\boxed{}") is the prompt's
    format echoed, not an answer the reply left empty: the reply's own concluding sentence is read."""
    verifier = Verifier()
    right = verifier.verify(echo + REPLY.format(v=60), "60", "gsm8k")
    assert (right.label, right.rule) == ("correct", "concluding_sentence"), right
    assert verifier.verify(echo + REPLY.format(v=60), "70", "gsm8k").label == "wrong"


def test_a_box_the_reply_leaves_empty_is_still_empty():
    verdict = Verifier().verify("We add 12 and 30, so the answer is \\boxed{}.", "42", "gsm8k")
    assert verdict.reason in ("empty answer", "empty answer after a possible answer"), verdict
