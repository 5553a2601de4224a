"""`jsonl`: per-item eval results, one object a line.

pairstore ingest evals results.jsonl --model sm11a --suite v6
"""

from __future__ import annotations

from pairstore.ingest.declare import ID, META, SCORE, TEXT, Field, Format, declare
from pairstore.ingest.kinds import AnyText, Bool, Id, Score, Text
from pairstore.ingest.messages import Messages

FORMAT = declare(
    Format(
        name="jsonl",
        table="evals",
        summary="per-item results: item_id, correct (true/false) or score (correct = score >= 0.5 when "
        "absent), "
        "and optionally extracted_answer, gold, output.",
        notes="With an output its length in scanner tokens, emptiness and loop flags are stored too; the "
        "output's text is not.",
        fields=(
            Field("item_id", ID, "the item's id in the suite (or give its question as prompt)", kind=Id()),
            Field(
                "prompt",
                TEXT,
                "the item's question: finds the suite's eval item by its match key where item_id is absent",
                role="eval item prompt (matched, not stored again)",
                kind=Messages("prompt"),
            ),
            Field("correct", SCORE, "whether the answer is right", kind=Bool()),
            Field("score", SCORE, "the item's score", kind=Score()),
            Field(
                "extracted_answer",
                TEXT,
                "the answer read from the output",
                role="extracted answer",
                kind=AnyText(),
            ),
            Field("gold", TEXT, "the gold answer", role="gold", kind=AnyText()),
            Field(
                "output",
                META,
                "the model's output: scanned for its length and loops, not stored",
                kind=Text(allow_empty=True),
            ),
        ),
        signature=("item_id",),
        order=0,
    )
)
