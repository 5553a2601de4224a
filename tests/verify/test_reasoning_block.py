"""An output that closes a reasoning block is read by its reply (miners.verify.extract._after_reasoning):
the block is working, and nothing in it -- a box of another value, a "Question:" line, an answer
statement -- decides what the reply after it commits to."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from miners.verify import Verifier
from miners.verify.extract import read_answer
from miners.verify.rules import RULES_BY_NAME

# what reasoning writes: its own answers, boxes, questions it poses itself, other values, markup
_WORKING = (
    "Let me think.",
    "The answer is 5.",
    "So the answer is $\\boxed{5}$.",
    "\\boxed{12}",
    "Question: what if n = 3?",
    "Q: is 4 right?",
    "Final Answer: 9",
    "#### 8",
    "Answer:",
    "Wait, 2 + 2 = 4.",
    "<answer>6</answer>",
    "\n",
    "\n\n",
    " ",
    "**Step 1**",
    "A: 3",
)
# replies: a span the rules read, in several forms
_REPLIES = (
    "The answer is $\\boxed{7}$.",
    "\n\n**Final Answer**\n\n$$\n\\boxed{7}\n$$",
    "\nFinal answer: 7",
    "<answer> 7 </answer>",
    "\n#### 7",
    "\nSo the answer is 7.",
    "\\boxed{7} and \\boxed{8}",
    "Answer: 7\nConfidence: 90%",
)
_TAGS = ("think", "thinking", "reasoning", "thought", "THINK")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(st.sampled_from(_WORKING), max_size=12),
    st.sampled_from(_REPLIES),
    st.sampled_from(_TAGS),
    st.sampled_from(("math", "gsm8k")),
)
def test_a_reply_after_a_reasoning_block_is_read_as_the_reply_alone(working, reply, tag, kind):
    """Whatever the block holds, the reading of the output is the reading of its reply, at the reply's
    place in the output."""
    head = f"<{tag}>" + "".join(working) + f"</{tag}>"
    alone = read_answer(reply, kind, whole=False)
    assert alone.answer is not None and alone.rule in RULES_BY_NAME, reply
    got = read_answer(head + reply, kind)
    assert got == replace(alone, start=alone.start + len(head), end=alone.end + len(head))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_WORKING), max_size=10), st.sampled_from(("", "\n", " Hmm.", "\n;;;;")))
def test_a_reply_with_no_span_leaves_the_output_read_whole(working, reply):
    """Where the reply holds no span, the output is read as an output with no reasoning block: the
    same reading as before the rule, whatever the block holds."""
    from miners.verify import extract

    text = "<think>" + "".join(working) + "</think>" + reply
    original = extract._after_reasoning
    try:
        extract._after_reasoning = lambda text, kind: None  # type: ignore[assignment]
        whole = read_answer(text, "math")
    finally:
        extract._after_reasoning = original
    assert read_answer(text, "math") == whole


def test_a_question_inside_the_working_is_no_invented_turn():
    """A question the model asks itself while it reasons ("Question: what if ...") came after a
    statement of another answer in the block; the reply's answer is the one committed to. Read as one
    text, the question cut the output there and the block's 5 was the answer."""
    output = (
        "<think>The answer is 5.\nQuestion: what if the speed doubles? Then 7.</think>\n"
        "The answer is $\\boxed{7}$."
    )
    verdict = Verifier().verify(output, "7", "math")
    assert (verdict.label, verdict.answer, verdict.rule) == ("correct", "7", "boxed")
