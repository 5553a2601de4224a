"""The verifier's named types: what extraction found, each verifier's reading, and the verdict.

    Verdict("unknown", "verifiers disagree", "12", rule="answer_is",
            readings=(Reading("fast", "correct", "12"), Reading("math-verify", "wrong", "14")))

A verdict is one of three labels. `correct` and `wrong` are definite: a miner may turn them into
pairs. `unknown` is the verifier saying it cannot tell; its reason says why, and no miner trains on
it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CORRECT, WRONG, UNKNOWN = "correct", "wrong", "unknown"
LABELS = (CORRECT, WRONG, UNKNOWN)

# Reasons, one per way a verdict is reached (the miners count unknowns by these).
EQUAL = "compared equal"
UNEQUAL = "compared unequal"
EMPTY_OUTPUT = "empty output"
EMPTY_ANSWER = "empty answer"  # an empty \boxed{} or <answer></answer>: commits to nothing
LOOPED = "looped before any answer"
TRUNCATED = "truncated before any answer"
# cut off, and the gold's value is stated before the cut (miners.verify.stated): it may have answered
TRUNCATED_AFTER_VALUE = "truncated after a possible answer"
NO_ANSWER = "no answer found"
AMBIGUOUS = "ambiguous answer"
DISAGREE = "verifiers disagree"
UNDECIDED = "comparison undecided"  # a timeout, an unparsable expression, an unforeseen error
WEAK_UNCONFIRMED = "weak form unconfirmed"  # read out of prose, and math-verify could not read it
RUNAWAY = "answer too long"  # a runaway span: no verifier reads 2,000 characters of "answer"
# a value against a letter gold ("18" against "D") without the options to say which letter it is
OPTIONS_UNKNOWN = "option values unknown"
# the fast path could not decide and math-verify did not read both sides as mathematics: it kept the
# raw string of a span it could not parse, parsed part of one, or read a matrix against a number
# (miners.verify.readable); its "unequal" there compares strings, not answers
UNREADABLE = "verifiers cannot read the answer"
# the gold could not be reduced to an answer (its reader failed): nothing to compare with
GOLD_UNREADABLE = "gold cannot be read"
# The property's reasons (miners.verify.evidence): a WRONG the output's own text does not ground
# the gold's value is stated nowhere in the output: no reading of it can hold the right answer
GOLD_ABSENT = "gold's value stated nowhere"
# an empty answer, or a loop, in an output that states the gold's value: the answer may be there
EMPTY_AFTER_VALUE = "empty answer after a possible answer"
LOOPED_AFTER_VALUE = "looped after a possible answer"
# an answer that ends on an operator, an "=" or an unfinished clause, or the left side of an equation
INCOMPLETE = "answer incomplete"
ALTERNATIVES = "answer lists alternatives"  # "12 or 15" against one value
# the answer's statement, read past the span, states the gold's value: the two readings differ
UNCONFIRMED = "statement states the gold's value"
UNKNOWN_REASONS = (
    NO_ANSWER,
    TRUNCATED_AFTER_VALUE,
    EMPTY_AFTER_VALUE,
    LOOPED_AFTER_VALUE,
    INCOMPLETE,
    ALTERNATIVES,
    UNCONFIRMED,
    AMBIGUOUS,
    DISAGREE,
    UNDECIDED,
    WEAK_UNCONFIRMED,
    RUNAWAY,
    OPTIONS_UNKNOWN,
    UNREADABLE,
    GOLD_UNREADABLE,
)

FAST, MATH_VERIFY = "fast", "math-verify"


@dataclass(frozen=True)
class Extraction:
    """What the span rules read out of an output: the answer (None when none), the rule that found
    it, whether that form is strong (read without a second opinion), and why there is no answer."""

    answer: str | None
    rule: str | None = None
    strong: bool = False
    missing: str | None = None  # EMPTY_OUTPUT, EMPTY_ANSWER, TRUNCATED, NO_ANSWER or AMBIGUOUS (no answer)
    # the text the answer was read from (a span, or a concluding sentence) before it was reduced to
    # a value: where the gold is an option letter, the letters it names by label count
    # ("D) 3.85 miles" -> D)
    span_text: str | None = None
    # where the span stands in the text read (a prefix of the output): the property's second reading
    # reads on from `end` (miners.verify.evidence)
    start: int = 0
    end: int = 0
    # the language of the marker that found the answer, where one did: its numerals are read with
    # that language's marks (miners.verify.markers.NUMBER_MARKS)
    language: str | None = None


@dataclass(frozen=True)
class Reading:
    """One verifier's reading of an output: its label and the answer it compared."""

    verifier: str  # FAST or MATH_VERIFY
    label: str
    answer: str | None

    def as_dict(self) -> dict:
        return {"verifier": self.verifier, "label": self.label, "answer": self.answer}


@dataclass(frozen=True)
class Verdict:
    """correct, wrong or unknown, with the reason, the extracted answer, the rule that found it and
    the readings behind it (two where math-verify was asked)."""

    label: str
    reason: str
    answer: str | None = None
    rule: str | None = None
    readings: tuple[Reading, ...] = field(default=())

    @property
    def definite(self) -> bool:
        return self.label != UNKNOWN

    @property
    def correct(self) -> bool:
        return self.label == CORRECT

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "reason": self.reason,
            "answer": self.answer,
            "rule": self.rule,
            "readings": [r.as_dict() for r in self.readings],
        }
