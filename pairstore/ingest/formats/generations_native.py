"""`native`: pairstore's generation records, one output a line.

pairstore ingest generations outs.jsonl --model so7a
"""

from __future__ import annotations

from pairstore.ingest.declare import ID, LABEL, SETTING, TEXT, Field, Format, declare
from pairstore.ingest.kinds import Choice, Float, Id, Int, Json, Text
from pairstore.ingest.messages import Messages

ITEM_KINDS = ("problem", "task", "eval_item", "prompt")

FORMAT = declare(
    Format(
        name="native",
        table="generations",
        summary="pairstore's generation records: an output, and the item it answers (by item_id, or by "
        "its question in prompt) or a free prompt.",
        notes="A record with item_kind and item_id names a stored item (a problem by its problem_id or "
        "its dataset's own id, unique_id); with item_kind and prompt but no item_id, the stored item "
        "whose question has the prompt's match key; with neither, a free prompt.",
        fields=(
            Field(
                "output",
                TEXT,
                "the model's output",
                role="output",
                kind=Text(allow_empty=True),
                required=True,
            ),
            Field("item_kind", LABEL, "what was answered", kind=Choice(ITEM_KINDS)),
            Field("item_id", ID, "the item's id, or its dataset's own id", kind=Id()),
            Field("suite", LABEL, "the eval suite of an eval item", kind=Text()),
            Field(
                "prompt",
                TEXT,
                "the prompt as sent: a string or messages",
                role="prompt",
                kind=Messages("prompt"),
            ),
            Field("sample_index", SETTING, "the sample's number for the item (0 when absent)", kind=Int(32)),
            Field("temperature", SETTING, "the sampling temperature", kind=Float()),
            Field("top_p", SETTING, "nucleus sampling p", kind=Float()),
            Field("max_new_tokens", SETTING, "the generation limit", kind=Int(32)),
            Field("seed", SETTING, "the sampling seed", kind=Int(64)),
            Field(
                "decoding",
                SETTING,
                "other decoding settings",
                kind=Json("expected an object of decoding settings"),
            ),
        ),
        signature=("output",),
        order=0,
    )
)
