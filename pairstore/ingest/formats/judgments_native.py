"""`native`: blind judge verdicts, one a line.

pairstore ingest judgments verdicts.jsonl
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from pairstore.ingest.declare import ID, LABEL, MODEL, SCORE, TEXT, Field, Format, declare
from pairstore.ingest.kinds import (
    INFER,
    Bool,
    Checked,
    Choice,
    Column,
    Id,
    Kind,
    NotDirect,
    Problem,
    Text,
    as_array,
    type_name,
)

HEAVY_FLAWS = ("fabrication", "hallucinated_output", "degenerate_repetition", "broken_placeholder")
JUDGED_KINDS = ("battle", "eval_item")
WINNERS = ("a", "b", "tie")


class FlawList(Kind):
    """A list of heavy flaw names, each one of HEAVY_FLAWS; kept sorted, once each."""

    arrow = pa.list_(pa.string())
    direct = INFER
    doc = "a list of " + ", ".join(HEAVY_FLAWS)

    def value(self, v: Any) -> list[str]:
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise Problem("expected a list of heavy flaw names")
        return v

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type):
            return Checked(pa.nulls(len(arr), self.arrow))
        if arr.type != self.arrow:
            raise NotDirect(f"flaws: {type_name(arr.type)}")
        for i, flaws in enumerate(arr.to_pylist()):
            for x in flaws or ():
                if x not in HEAVY_FLAWS:
                    return Checked(
                        arr, i, f"unknown heavy flaw {x!r} (expected one of {', '.join(HEAVY_FLAWS)})"
                    )
        return Checked(pa.array([None if f is None else sorted(set(f)) for f in arr.to_pylist()], self.arrow))


FORMAT = declare(
    Format(
        name="native",
        table="judgments",
        summary="blind judge verdicts per battle (or per eval item, `<suite>/<item id>`): which of two "
        "models' "
        "answers is better and whether either has a heavy flaw.",
        fields=(
            Field(
                "battle_id",
                ID,
                "the battle judged (or `<suite>/<item id>` of an eval item)",
                kind=Id(),
                required=True,
            ),
            Field("model_a", MODEL, "the model shown as A", kind=Text(), required=True),
            Field("model_b", MODEL, "the model shown as B", kind=Text(), required=True),
            Field("winner", LABEL, "a, b or tie", kind=Choice(WINNERS), required=True),
            Field("heavy_flaw_a", SCORE, "A's answer has a heavy flaw", kind=Bool()),
            Field("heavy_flaw_b", SCORE, "B's answer has a heavy flaw", kind=Bool()),
            Field("flaws_a", LABEL, "the heavy flaws of A's answer", kind=FlawList()),
            Field("flaws_b", LABEL, "the heavy flaws of B's answer", kind=FlawList()),
            Field("judge", MODEL, "the judge (a model or a person)", kind=Text()),
            Field("notes", TEXT, "the judge's note", role="note (stored)", kind=Text(allow_empty=True)),
            Field("annotator", ID, "who judged", kind=Text()),
            Field("prompt_hash", ID, "the judged prompt's hash", kind=Text()),
            Field("item_kind", LABEL, "battle or eval_item", kind=Choice(JUDGED_KINDS)),
            Field("origin", LABEL, "where the verdict was made", kind=Text()),
            Field(
                "submission_id", ID, "the form's id (a second submit of one form is one verdict)", kind=Text()
            ),
        ),
        signature=("battle_id", "model_a", "model_b", "winner"),
        order=0,
    )
)
