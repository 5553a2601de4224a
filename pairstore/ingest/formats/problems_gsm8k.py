"""`gsm8k`: openai/gsm8k rows (main or socratic), as published.

pairstore ingest problems --dataset gsm8k --path gsm8k/
"""

from __future__ import annotations

from pairstore.ingest.declare import TEXT, Field, Format, declare
from pairstore.ingest.kinds import Text

FORMAT = declare(
    Format(
        name="gsm8k",
        table="problems",
        summary="openai/gsm8k rows: a question and its worked answer ending in `#### <answer>`.",
        notes="The gold is what follows `####`, commas dropped.",
        fields=(
            Field("question", TEXT, "the problem", role="question", kind=Text(), required=True),
            Field(
                "answer",
                TEXT,
                "the worked solution, ending in `#### <answer>`",
                role="solution and gold",
                kind=Text(),
                required=True,
            ),
        ),
        signature=("question", "answer"),
        order=0,
    )
)
