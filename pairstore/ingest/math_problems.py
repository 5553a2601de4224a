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

import pyarrow as pa

from pairstore.ingest.formats import get_format
from pairstore.ingest.kinds import Problem
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


def problem_of(dataset: str, v: dict) -> ProblemFields:
    """The problem in one record's checked values (the kinds of pairstore.ingest.formats' `gsm8k` and
    `math` fields read them: strings, a level or an answer given as an integer written as text); Problem
    naming the field as `field: message` when it holds none."""
    if dataset == "gsm8k":
        gold = gsm8k_gold(v["answer"])
        if gold is None:
            raise FieldProblem("answer", "no '#### <answer>' line")
        return ProblemFields(v["question"], v["answer"], gold)
    gold = (v.get("answer") or "").strip() or last_boxed(v["solution"])
    if gold is None:
        raise FieldProblem("solution", "no \\boxed{...} answer (and no answer field)")
    return ProblemFields(
        v["problem"],
        v["solution"],
        gold,
        subject=v.get("type") or v.get("subject"),
        level=v.get("level"),
        unique_id=v.get("unique_id"),
    )


class FieldProblem(ValueError):
    """A record's value that breaks a rule of its dataset, with the field it is in."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def problem_fields(dataset: str, f: Fields) -> ProblemFields:
    """The problem in one record of `dataset` (gsm8k or math), its fields read by the format's kinds;
    BadInput naming the field when it has none."""
    values = {}
    for field in get_format("problems", dataset).fields:
        if field.kind is None:
            continue
        v = f.rec.get(field.name)
        if v is None:
            if field.required:
                raise f.error(field.name, "missing field")
            continue
        try:
            values[field.name] = field.kind.value(v)
        except Problem as e:
            raise f.error(field.name, str(e)) from None
        checked = field.kind.column(pa.array([values[field.name]], field.kind.arrow))
        if checked.first_bad is not None:
            raise f.error(field.name, checked.message)
    try:
        return problem_of(dataset, values)
    except FieldProblem as e:
        raise f.error(e.field, str(e)) from None
