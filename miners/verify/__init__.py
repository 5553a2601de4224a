"""The answer verifier: correct, wrong, or unknown when it cannot tell -- and why.

    from miners.verify import verify, Verifier, extract_answer
    verify("... so she pays $1,250.\\nFinal answer: $1,250", "1250", "gsm8k").label   # -> "correct"
    verify("Let me think step by step about the trains.", "7", "gsm8k").reason        # -> "no answer found"
    extract_answer("... The answer is \\\\boxed{\\\\dfrac{1}{2}}.", "math")              # -> "\\dfrac{1}{2}"

A Verdict (miners.verify.types) is `correct`, `wrong` or `unknown`, with its reason, the extracted
answer, the span rule that found it and the readings behind it (the fast path's and, where asked,
math-verify's). Miners train only on definite verdicts. How a verdict is reached:
miners.verify.verifier; the answer-span rules: miners.verify.rules; the one bracket-depth scanner:
miners.verify.brackets. Conventions and labelled corpora: bench/data/README.md; the benchmark
against math-verify: bench/bench_verify.py.

kind is "gsm8k" (gold is a number), "math" (gold is a MATH-style LaTeX answer) or "task" (gold is
the string a loop-fix generator computed). A gold that is a whole solution ("... #### 72", a boxed
MATH solution) is reduced to its answer.

Other packages import only this module (the sideways import docs/design.md "Layers" allows).
"""

from __future__ import annotations

from miners.verify import extract as _extract
from miners.verify.types import (
    CORRECT,
    LABELS,
    UNKNOWN,
    UNKNOWN_REASONS,
    WRONG,
    Reading,
    Verdict,
)
from miners.verify.verifier import KINDS, Verifier, check_kind

__all__ = [
    "CORRECT",
    "KINDS",
    "LABELS",
    "UNKNOWN",
    "UNKNOWN_REASONS",
    "WRONG",
    "Reading",
    "answers_equal",
    "Verdict",
    "Verifier",
    "extract_answer",
    "is_equivalent",
    "verify",
]


def verify(
    output: str | None, gold: str | None, kind: str = "math", verifier: Verifier | None = None
) -> Verdict:
    """The verdict on one output (a fresh Verifier unless one is given: pass one to share its cache
    and its counts)."""
    return (verifier or Verifier()).verify(output, gold, kind)


def extract_answer(text: str, kind: str = "math") -> str | None:
    """The final answer a model's whole output commits to, or None when it commits to none.

    The span that starts last wins (a self-correction's last answer); a hallucinated follow-up turn
    after an answer is cut off first. A short single-line output is its own answer.
    """
    check_kind(kind)
    return _extract.extract_answer(text, kind)


def is_equivalent(pred_text: str, gold: str, kind: str = "math", verifier: Verifier | None = None) -> bool:
    """Whether the output is verified correct (unknown counts as not correct: for accuracy figures,
    never for training labels -- miners read verify())."""
    return verify(pred_text, gold, kind, verifier).label == CORRECT


def answers_equal(answer: str, gold: str, kind: str = "math", verifier: Verifier | None = None) -> bool:
    """Whether an already extracted answer is verified equal to the gold (unknown is not)."""
    return (verifier or Verifier()).verify_answer(answer, gold, kind).label == CORRECT
