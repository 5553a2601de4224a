"""The verifier's property, over generated answer presentations: never the opposite definite verdict.

An output is built on five axes (tests/verify/presentations.py): the marker (21 languages, ASCII and
full-width punctuation, a copula sentence, none), the wrapper (bold, heading, quoted, fenced and
triple-quoted blocks, \\boxed{}, an answer tag, a JSON field, a table row), the position (last, first
then an explanation, then a check or a rating, inside a reasoning block, garbage after it), the
number form (every language's thousands and decimal marks, percent, currency, units, fractions,
mixed numbers, LaTeX, scientific notation, digits of other scripts) and the distractors
(intermediate values, the question's own numbers). Each is crossed with a right and a wrong value:
the verdict may be unknown, never the opposite of the truth; so too for a yes/no answer in the
square brackets a prompt asked for ("[Yes]", `bracketed_yes_no`), and for a word on the explicit
answer line a prompt asked for ("ANSWER: even" over "CONFIDENCE: 100", `answer_word_line`). The
coverage per class (definite verdicts) is recorded on the report and printed at the end of the run
(tests/verify/conftest.py).

Fixed seed (the derandomized profile of tests/conftest.py), a bounded number of examples here; the
benchmark runs many more (`bench/bench_verify.py --property`).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from miners.verify import Verifier
from tests.verify.conftest import COVERAGE_PROPERTY
from tests.verify.presentations import (
    Case,
    answer_word_line,
    bold_conclusion_to_the_reader,
    bracketed_yes_no,
    coverage_table,
    cut_after_a_weak_reading,
    feedback_turns_cut,
    hash_answer_line,
    invented_conversation,
    markdown_h4_steps,
    numbered_answer_line,
    numbered_parts,
    percent_answer_line,
    presentations,
    refusal_answer,
    thousands_equation_line,
    unit_gold,
)

EXAMPLES = 600


def never_the_opposite(case: Case, decided: bool = False) -> None:
    """The verdict on a generated case, asserted never the opposite of the truth (and, with
    `decided`, definite); noted for hypothesis's report of a failing example."""
    verdict = Verifier().verify(case.output, case.gold, case.kind)
    note(case.describe())
    assert verdict.label != ("wrong" if case.right else "correct"), repr(verdict)
    if decided:
        assert verdict.label != "unknown", repr(verdict)


def judge_all(verifier: Verifier, examples: int) -> tuple[list[tuple[Case, str]], Callable[[], None]]:
    """A hypothesis test over `examples` presentations that fails on an opposite verdict, and the
    (case, label) pairs it saw."""
    judged: list[tuple[Case, str]] = []

    @settings(max_examples=examples)
    @given(presentations())
    def never_the_opposite(case: Case) -> None:
        verdict = verifier.verify(case.output, case.gold, case.kind)
        note(case.describe())
        note(repr(verdict))
        judged.append((case, verdict.label))
        opposite = "wrong" if case.right else "correct"
        assert verdict.label != opposite, f"{verdict.label} ({verdict.reason}) for a {case.right} answer"

    return judged, never_the_opposite


@pytest.mark.slow
def test_never_the_opposite_verdict(record_property) -> None:
    judged, run = judge_all(Verifier(), EXAMPLES)
    try:
        run()
    finally:
        table = coverage_table(judged)
        record_property(COVERAGE_PROPERTY, table)
        print(table)


@settings(max_examples=200)
@given(bracketed_yes_no())
def test_bracketed_yes_no_never_the_opposite(case: Case) -> None:
    # a strong form with nothing after it: decided
    never_the_opposite(case, decided=case.classes["place"] == "last line")


@settings(max_examples=200)
@given(answer_word_line())
def test_answer_word_line_never_the_opposite(case: Case) -> None:
    # the marker's line commits to the word, a rating after it or not: decided
    never_the_opposite(case, decided=True)


@settings(max_examples=150)
@given(percent_answer_line())
def test_percent_answer_line_never_the_opposite(case: Case) -> None:
    # the marker's line commits to the percentage, a rating on the next line or none: decided
    never_the_opposite(case, decided=True)


@settings(max_examples=150)
@given(feedback_turns_cut())
def test_feedback_turns_cut_never_the_opposite(case: Case) -> None:
    # a word cut short is no answer: the hashes' value is what the reply committed to
    never_the_opposite(case, decided=True)


@settings(max_examples=150)
@given(
    st.text(alphabet="$#*_`~=.:|>- \n", min_size=1, max_size=12),
    st.integers(0, 10**6),
)
def test_an_output_of_signs_alone_states_no_value(output: str, gold: int) -> None:
    """Marker and markup signs with nothing in them ("$####", "**") commit to no answer and state no
    value: wrong by the cut-off rule, never correct."""
    verdict = Verifier().verify(output, str(gold), "gsm8k")
    assert verdict.label == "wrong", repr(verdict)


@settings(max_examples=150)
@given(thousands_equation_line())
def test_thousands_equation_line_never_the_opposite(case: Case) -> None:
    never_the_opposite(case)


@settings(max_examples=150)
@given(bold_conclusion_to_the_reader())
def test_bold_conclusion_to_the_reader_never_the_opposite(case: Case) -> None:
    # the concluding clause commits to its value, a word to the reader after it or not: decided
    never_the_opposite(case, decided=True)


@settings(max_examples=150)
@given(refusal_answer())
def test_a_refusal_commits_to_no_value(case: Case) -> None:
    """A refusal never equals a gold; it is wrong where the output never writes the gold's value
    (rule (b)), and undecided where it does (`right` here: the gold is written nowhere)."""
    stated_nowhere_decides(case)


def stated_nowhere_decides(case: Case) -> None:
    """An output that commits to no value it can be judged by: never `correct`; `wrong` where the gold
    is written nowhere (`right` in these cases), else unknown."""
    verdict = Verifier().verify(case.output, case.gold, case.kind)
    note(case.describe())
    assert verdict.label != "correct", repr(verdict)
    assert verdict.label == ("wrong" if case.right else "unknown"), repr(verdict)


@settings(max_examples=100)
@given(cut_after_a_weak_reading())
def test_a_cut_output_s_unconfirmed_reading_is_no_answer(case: Case) -> None:
    """A cut-off output whose one reading nothing confirms is as one with no answer: rule (b), any
    gold (miners.verify.evidence.settle)."""
    stated_nowhere_decides(case)


@settings(max_examples=150)
@given(unit_gold())
def test_a_gold_with_its_unit_is_a_value(case: Case) -> None:
    never_the_opposite(case, decided=True)


@settings(max_examples=150)
@given(hash_answer_line())
def test_hash_answer_line_never_the_opposite(case: Case) -> None:
    # the "# <answer>" line ends the reply: decided
    never_the_opposite(case, decided=True)


@settings(max_examples=150)
@given(markdown_h4_steps())
def test_a_markdown_heading_of_level_four_is_no_answer(case: Case) -> None:
    # GSM8K's "#### <answer>" line last is read whatever headings came before it: decided
    never_the_opposite(case, decided=case.classes["ending"] == "#### {x}")


@settings(max_examples=150)
@given(numbered_parts())
def test_an_option_line_or_a_section_title_is_no_answer(case: Case) -> None:
    never_the_opposite(case)


@settings(max_examples=150)
@given(numbered_answer_line())
def test_a_numbered_answer_marker_reads_its_value(case: Case) -> None:
    never_the_opposite(case, decided=True)


@settings(max_examples=150)
@given(invented_conversation())
def test_an_invented_conversation_after_the_answer_is_no_part_of_it(case: Case) -> None:
    # the conclusion before the role line is the answer, the assistant's role word before it or not
    never_the_opposite(case, decided=True)
