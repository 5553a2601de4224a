"""`openai-messages`: OpenAI chat fine-tuning rows (`messages`, tool calls included): NLL rows; with chosen
and rejected (LLaMA-Factory's preference layout in OpenAI roles), pairs.

pairstore ingest pairs chat_sft.jsonl --source sft
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import LABEL, TEXT, Field, Format, declare
from pairstore.ingest.formats.pairs_sharegpt import with_tools
from pairstore.ingest.pair_rows import agree, answer_of, id_fields, ids, messages, with_system
from pairstore.ingest.records import Fields


def detect(rec: dict) -> bool:
    """`messages` (a chosen conversation beside it is UltraFeedback's: tried before this one)."""
    return rec.get("messages") is not None


def _preference(f: Fields, conversation: list[dict]) -> dict[str, Any] | None:
    """With chosen or rejected (a message object, a string, or a conversation repeating `messages`): the
    whole conversation is the prompt. None without either."""
    chosen, rejected = answer_of(f, "chosen"), answer_of(f, "rejected")
    if chosen is None and rejected is None:
        return None
    if conversation and conversation[-1]["role"] == "assistant":
        raise f.error(
            "messages", "ends with an assistant message beside chosen: give the turns before the answers"
        )
    for name, got in (("chosen", chosen), ("rejected", rejected)):
        if got is not None:
            agree(f, name, got[0], conversation, "the messages")
    prompt = with_tools(f, with_system(f, conversation))
    if not any(m["role"] == "user" for m in prompt):
        raise f.error("messages", "no user message before the answers")
    return {
        **ids(f),
        "prompt": prompt,
        "chosen": None if chosen is None else chosen[1],
        "rejected": None if rejected is None else rejected[1],
    }


def parse(f: Fields) -> dict[str, Any]:
    """The turns before the last assistant message are the prompt, that message the answer; with chosen
    and rejected, the messages are the prompt and each side one answer."""
    conversation = messages(f, "messages")
    pair = _preference(f, conversation)
    if pair is not None:
        return pair
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
        "their arguments), optionally `tools`: an NLL row whose answer is the last assistant message. "
        "With chosen and rejected (LLaMA-Factory's preference layout in OpenAI roles), `messages` is the "
        "prompt and each side one answer.",
        fields=(
            Field("messages", TEXT, "the conversation", role="prompt and the answer", required=True),
            Field("chosen", TEXT, "the preferred answer: a message object or a string", role="chosen"),
            Field("rejected", TEXT, "the other answer", role="rejected"),
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
