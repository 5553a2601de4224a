"""`ultrafeedback`: HuggingFaceH4/ultrafeedback_binarized rows, as published.

pairstore ingest ultrafeedback --path ultrafeedback_binarized/
pairstore ingest pairs ultrafeedback_rows.parquet --source uf
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import SCORE, TEXT, Field, Format, declare
from pairstore.ingest.pair_rows import agree, answer_of, id_fields, ids, messages
from pairstore.ingest.records import Fields


def detect(rec: dict) -> bool:
    """Its scores, or `messages` beside a chosen conversation (a chosen message object or string beside
    `messages` is the OpenAI-style preference row: pairs_openai_messages)."""
    return any(rec.get(n) is not None for n in ("score_chosen", "score_rejected")) or (
        rec.get("messages") is not None and isinstance(rec.get("chosen"), list)
    )


def parse(f: Fields) -> dict[str, Any]:
    """chosen and rejected hold the user turn and the answer; `prompt` and `messages` repeat them (and
    must: a copy that differs would be lost)."""
    chosen, rejected = answer_of(f, "chosen"), answer_of(f, "rejected")
    if chosen is None:
        raise f.error("chosen", "missing field")
    prompt = chosen[0]
    if f.has("prompt"):
        given = messages(f, "prompt")
        if prompt:
            agree(f, "chosen", prompt, given, "the prompt field")
        prompt = given
    if not prompt:
        raise f.error("chosen", "expected the user turn before the assistant's answer")
    if rejected is not None:
        agree(f, "rejected", rejected[0], prompt, "chosen's")
    if f.has("messages"):
        copy = messages(f, "messages")
        if copy != [*prompt, {"role": "assistant", "content": chosen[1]}] and copy != chosen[0] + [
            {"role": "assistant", "content": chosen[1]}
        ]:
            raise f.error("messages", "differs from the chosen conversation: its text would be lost")
    return {
        **ids(f),
        "prompt": prompt,
        "chosen": chosen[1],
        "rejected": None if rejected is None else rejected[1],
    }


FORMAT = declare(
    Format(
        name="ultrafeedback",
        table="pairs",
        summary="HuggingFaceH4/ultrafeedback_binarized rows: prompt, prompt_id, chosen and rejected (the "
        "user "
        "turn and the answer), messages (chosen again), score_chosen, score_rejected.",
        fields=(
            Field("prompt", TEXT, "the prompt (the user turn of chosen, again)", role="prompt"),
            Field(
                "chosen",
                TEXT,
                "the user turn and the preferred answer",
                role="prompt and chosen",
                required=True,
            ),
            Field("rejected", TEXT, "the user turn and the other answer", role="rejected"),
            Field(
                "messages", TEXT, "chosen's conversation, again (must be the same)", role="prompt and chosen"
            ),
            Field("score_chosen", SCORE, "the chosen answer's rating"),
            Field("score_rejected", SCORE, "the other answer's rating"),
            *id_fields(),
        ),
        parse=parse,
        order=45,
        extra={"detect": detect},
    )
)
