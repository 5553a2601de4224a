"""`openai-messages`: OpenAI chat fine-tuning rows (`messages`, tool calls included): NLL rows.

pairstore ingest pairs chat_sft.jsonl --source sft
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import LABEL, TEXT, Field, Format, declare
from pairstore.ingest.formats.pairs_sharegpt import with_tools
from pairstore.ingest.pair_rows import id_fields, ids, messages, with_system
from pairstore.ingest.records import Fields


def detect(rec: dict) -> bool:
    return rec.get("messages") is not None and rec.get("chosen") is None


def parse(f: Fields) -> dict[str, Any]:
    """The turns before the last assistant message are the prompt, that message the answer."""
    conversation = messages(f, "messages")
    last = max((i for i, m in enumerate(conversation) if m["role"] == "assistant"), default=None)
    if last is None:
        raise f.error("messages", "no assistant message to take as the answer")
    if last != len(conversation) - 1:
        raise f.error("messages", "turns after the last assistant message would be lost")
    prompt = with_tools(f, with_system(f, conversation[:last]))
    if not any(m["role"] == "user" for m in prompt):
        raise f.error("messages", "no user message before the answer")
    return {**ids(f), "prompt": prompt, "chosen": conversation[last]["content"], "rejected": None}


FORMAT = declare(
    Format(
        name="openai-messages",
        table="pairs",
        summary="OpenAI chat fine-tuning rows: `messages` (system, user, assistant, tool turns; tool calls "
        "and "
        "their arguments), optionally `tools`: an NLL row whose answer is the last assistant message.",
        fields=(
            Field("messages", TEXT, "the conversation", role="prompt and the answer", required=True),
            Field("tools", TEXT, "the tools offered", role="system message (a <tools> block)"),
            Field("system", TEXT, "a system message", role="system message"),
            Field("parallel_tool_calls", LABEL, "whether tools may be called in parallel"),
            *id_fields(),
        ),
        parse=parse,
        order=50,
        extra={"detect": detect},
    )
)
