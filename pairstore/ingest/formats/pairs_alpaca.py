"""`alpaca`: instruction files (Alpaca, LLaMA-Factory's alpaca layout with its preference variant, Dolly).

pairstore ingest pairs alpaca_data.json --source alpaca
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import LABEL, TEXT, Field, Format, declare
from pairstore.ingest.pair_rows import answer_of, id_fields, ids, with_system
from pairstore.ingest.records import Fields

EXTRAS = ("input", "context")  # more prompt text, after the instruction (Alpaca input, Dolly context)
ANSWERS = ("output", "response")


def detect(rec: dict) -> bool:
    return rec.get("instruction") is not None


def _history(f: Fields) -> list[dict]:
    """Alpaca `history`: [[instruction, answer], ...] before the current instruction."""
    value = f.rec.get("history")
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(h, (list, tuple)) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in value
    ):
        raise f.error("history", "expected a list of [instruction, answer] string pairs")
    return [
        m for q, a in value for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})
    ]


def parse(f: Fields) -> dict[str, Any]:
    """The instruction and its input or context as one user turn, after any earlier turns; the output (or
    response) the answer of an NLL row, or chosen and rejected a pair's (one answer a side)."""
    instruction = f.str("instruction", allow_empty=True)
    texts = [instruction]
    for name in EXTRAS:
        extra = f.str(name, required=False, allow_empty=True)
        if extra and extra.strip():
            texts.append(extra)
    prompt = with_system(f, _history(f) + [{"role": "user", "content": "\n\n".join(texts)}])
    chosen = answer_of(f, "chosen")
    answer = None if chosen is None else chosen[1]
    for name in ANSWERS:
        got = answer_of(f, name)
        if got is None:
            continue
        if answer is not None and got[1].strip() != answer.strip():
            raise f.error(name, f"{name!r} beside another answer would be lost: give one answer per side")
        answer = answer if answer is not None else got[1]
    rejected = answer_of(f, "rejected")
    return {
        **ids(f),
        "prompt": prompt,
        "chosen": answer,
        "rejected": None if rejected is None else rejected[1],
    }


FORMAT = declare(
    Format(
        name="alpaca",
        table="pairs",
        summary="instruction rows: Alpaca and LLaMA-Factory's alpaca layout (instruction, input, output, "
        "system, "
        "history; its preference variant gives chosen and rejected), Dolly (instruction, context, "
        "response).",
        notes="The instruction and its input (or context) are one user turn, joined by a blank line, after "
        "the history's turns.",
        fields=(
            Field("instruction", TEXT, "the instruction", role="user turn", required=True),
            Field("input", TEXT, "more of the prompt", role="user turn"),
            Field("context", TEXT, "more of the prompt (Dolly)", role="user turn"),
            Field("system", TEXT, "a system message", role="system message"),
            Field("history", TEXT, "earlier [instruction, answer] turns", role="user and assistant turns"),
            Field("output", TEXT, "the answer (an NLL row, or chosen's, the same text)", role="chosen"),
            Field("response", TEXT, "the answer (Dolly)", role="chosen"),
            Field("chosen", TEXT, "the preferred answer", role="chosen"),
            Field("rejected", TEXT, "the other answer", role="rejected"),
            Field("category", LABEL, "Dolly's task category"),
            *id_fields(),
        ),
        parse=parse,
        order=30,
        extra={"detect": detect},
    )
)
