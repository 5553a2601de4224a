"""`math`: EleutherAI/hendrycks_math rows, and MATH-500-shaped rows.

pairstore ingest problems --dataset math --path hendrycks_math/
"""

from __future__ import annotations

from pairstore.ingest.declare import ID, LABEL, TEXT, Field, Format, declare
from pairstore.ingest.kinds import IntOrText, Text

FORMAT = declare(
    Format(
        name="math",
        table="problems",
        summary="EleutherAI/hendrycks_math rows (problem, solution, level, type), or MATH-500-shaped rows "
        "(problem, solution, answer, subject, integer level, unique_id).",
        notes="The gold is the row's `answer` when it has one, else the last `\\boxed{}` of the solution; an "
        "integer level is written `Level N`. A unique_id starting with `test/` is a test-split problem and "
        "is refused.",
        fields=(
            Field("problem", TEXT, "the problem", role="question", kind=Text(), required=True),
            Field("solution", TEXT, "the worked solution", role="solution", kind=Text(), required=True),
            Field(
                "answer", TEXT, "the final answer (MATH-500)", role="gold", kind=IntOrText(allow_empty=True)
            ),
            Field("type", LABEL, "the subject (MATH)", kind=Text()),
            Field("subject", LABEL, "the subject (MATH-500)", kind=Text()),
            Field("level", LABEL, "the difficulty, `Level 3` or 3", kind=IntOrText("Level {}")),
            Field("unique_id", ID, "the dataset's own id, `train/algebra/1.json`", kind=Text()),
        ),
        signature=("problem", "solution"),
        order=10,
    )
)
