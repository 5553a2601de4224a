"""`openai-preference`: OpenAI's preference fine-tuning rows (input, preferred_output, non_preferred_output).

pairstore ingest pairs dpo_train.jsonl --source openai
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import LABEL, TEXT, Field, Format, declare
from pairstore.ingest.formats.pairs_sharegpt import with_tools
from pairstore.ingest.pair_rows import answer_of, id_fields, ids, messages
from pairstore.ingest.records import Fields


def detect(rec: dict) -> bool:
    return rec.get("preferred_output") is not None or rec.get("non_preferred_output") is not None


def parse(f: Fields) -> dict[str, Any]:
    given = f.rec.get("input")
    if not isinstance(given, dict):
        raise f.error("input", "expected an object with messages")
    extra = next((k for k in given if k not in ("messages", "tools", "parallel_tool_calls")), None)
    if extra is not None:
        raise f.error(
            f"input.{extra}", "unknown key of input (expected messages, tools, parallel_tool_calls)"
        )
    inner = Fields(given, f.path, f.line)
    prompt = with_tools(inner, messages(inner, "messages"))
    chosen = answer_of(f, "preferred_output")
    rejected = answer_of(f, "non_preferred_output")
    for name, got in (("preferred_output", chosen), ("non_preferred_output", rejected)):
        if got is not None and got[0]:
            raise f.error(name, "expected the assistant's answer only")
    return {
        **ids(f),
        "prompt": prompt,
        "chosen": None if chosen is None else chosen[1],
        "rejected": None if rejected is None else rejected[1],
    }


FORMAT = declare(
    Format(
        name="openai-preference",
        table="pairs",
        summary="OpenAI's preference fine-tuning rows: input ({messages, tools}), preferred_output and "
        "non_preferred_output (each the assistant's message).",
        fields=(
            Field(
                "input.messages", TEXT, "the conversation before the answers", role="prompt", required=True
            ),
            Field("input.tools", TEXT, "the tools offered", role="system message (a <tools> block)"),
            Field("input.parallel_tool_calls", LABEL, "whether tools may be called in parallel"),
            Field("preferred_output", TEXT, "the preferred answer", role="chosen", required=True),
            Field("non_preferred_output", TEXT, "the other answer", role="rejected"),
            *id_fields(),
        ),
        parse=parse,
        order=10,
        extra={"detect": detect},
    )
)
