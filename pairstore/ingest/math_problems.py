"""GSM8K and MATH rows in their public shapes: the question, the reference solution and the gold answer.

    from pairstore.ingest.math_problems import problem_fields
    fields = problem_fields("math", Fields(rec, path, line))
    fields.question, fields.solution, fields.gold, fields.subject, fields.level, fields.unique_id

Shapes read, field for field as the datasets publish them:

- GSM8K (openai/gsm8k): question, answer (the solution, ending in `#### <answer>`); gold is what
  follows `####`, commas dropped.
- MATH (EleutherAI/hendrycks_math): problem, solution, level ("Level 3"), type ("Algebra"); gold is the
  last \\boxed{...} of the solution.
- MATH-500-shaped (HuggingFaceH4/MATH-500, and the train split in the same columns): problem, solution,
  answer, subject, level as an integer, unique_id ("train/algebra/1.json"). The row's own `answer` is the
  gold when present; an integer level is written "Level N" like MATH's, so one filter selects both.

Used by `ingest problems` (train splits) and by eval suite files (test splits); the store's tables are
written elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pairstore.ingest.records import Fields

DATASETS = ("gsm8k", "math")
# The Hub datasets `ingest problems` reads without --path, and the configs (folders) of their local copies.
HUB_DATASETS = {
    "gsm8k": ("openai/gsm8k", ["main"]),
    "math": (
        "EleutherAI/hendrycks_math",
        [
            "algebra",
            "counting_and_probability",
            "geometry",
            "intermediate_algebra",
            "number_theory",
            "prealgebra",
            "precalculus",
        ],
    ),
}
# A file named like a held-out split.
TEST_NAME = re.compile(r"(^|[/_.\-])(test|validation|val|dev)([/_.\-]|$)", re.I)


@dataclass(frozen=True)
class ProblemFields:
    question: str
    solution: str
    gold: str
    subject: str | None = None
    level: str | None = None
    unique_id: str | None = None


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}), nested braces handled."""
    best = None
    for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            depth += (c == "{") - (c == "}")
            i += 1
        if depth == 0:
            best = text[m.end() : i - 1].strip()
    return best


def gsm8k_gold(answer: str) -> str | None:
    if "####" not in answer:
        return None
    return answer.rsplit("####", 1)[1].strip().replace(",", "")


def _level(f: Fields) -> str | None:
    if isinstance(f.rec.get("level"), int) and not isinstance(f.rec.get("level"), bool):
        return f"Level {f.int('level')}"
    return f.str("level", required=False)


def problem_fields(dataset: str, f: Fields) -> ProblemFields:
    """The problem in one record of `dataset` (gsm8k or math); BadInput naming the field when it has none."""
    if dataset == "gsm8k":
        question, solution = f.str("question"), f.str("answer")
        gold = gsm8k_gold(solution)
        if gold is None:
            raise f.error("answer", "no '#### <answer>' line")
        return ProblemFields(question, solution, gold)
    question, solution = f.str("problem"), f.str("solution")
    gold = (f.str("answer", required=False, allow_int=True, allow_empty=True) or "").strip() or last_boxed(
        solution
    )
    if gold is None:
        raise f.error("solution", "no \\boxed{...} answer (and no answer field)")
    return ProblemFields(
        question,
        solution,
        gold,
        subject=f.str("type", required=False) or f.str("subject", required=False),
        level=_level(f),
        unique_id=f.str("unique_id", required=False),
    )
