"""`compliance`: handcrafted compliance pairs and NLL rows.

pairstore ingest compliance compliance.jsonl
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import TEXT, Field, Format, declare
from pairstore.ingest.pair_rows import id_fields, ids, messages
from pairstore.ingest.records import Fields


def detect(rec: dict) -> bool:
    return rec.get("target") is not None


def parse(f: Fields) -> dict[str, Any]:
    """{prompt, chosen, rejected}: a pair; {prompt, target}: an NLL row. The prompt is kept as given (a system
    message included)."""
    prompt = messages(f, "prompt") if f.has("prompt") else None
    if prompt is None:
        raise f.error("prompt", "missing field")
    if f.has("target"):
        if f.has("chosen") or f.has("rejected"):
            raise f.error("target", "give either target (an NLL row) or chosen and rejected, not both")
        return {**ids(f), "prompt": prompt, "chosen": f.str("target"), "rejected": None}
    return {**ids(f), "prompt": prompt, "chosen": f.str("chosen"), "rejected": f.str("rejected")}


FORMAT = declare(
    Format(
        name="compliance",
        table="pairs",
        summary="handcrafted compliance rows: {prompt, chosen, rejected} a pair, {prompt, target} an NLL row "
        "(`pairstore ingest compliance`; in a pair file, a record with `target`).",
        fields=(
            Field(
                "prompt",
                TEXT,
                "the prompt: a string or messages (a system message kept)",
                role="prompt",
                required=True,
            ),
            Field("chosen", TEXT, "the compliant answer", role="chosen"),
            Field("rejected", TEXT, "the non-compliant answer", role="rejected"),
            Field("target", TEXT, "the answer of an NLL row", role="chosen"),
            *id_fields(),
        ),
        parse=parse,
        order=60,
        extra={"detect": detect},
    )
)
