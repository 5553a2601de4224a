"""`sharegpt`: ShareGPT conversations (LLaMA-Factory's sharegpt layout and its preference variant).

pairstore ingest pairs sharegpt_dpo.json --source sharegpt
"""

from __future__ import annotations

import json
from typing import Any

from pairstore.ingest.declare import TEXT, Field, Format, declare
from pairstore.ingest.pair_rows import agree, answer_of, id_fields, ids, messages, with_system
from pairstore.ingest.records import Fields


def detect(rec: dict) -> bool:
    return rec.get("conversations") is not None


def with_tools(f: Fields, prompt: list[dict], name: str = "tools") -> list[dict]:
    """The tool descriptions a prompt came with, in a <tools> block of its system message (as the tool-use
    chat templates put them), so the gate reads them."""
    tools = f.rec.get(name)
    if tools is None:
        return prompt
    if not isinstance(tools, str):
        tools = json.dumps(tools, ensure_ascii=False)
    block = f"<tools>\n{tools}\n</tools>"
    if prompt and prompt[0]["role"] == "system":
        return [{"role": "system", "content": f"{prompt[0]['content']}\n\n{block}"}] + prompt[1:]
    return [{"role": "system", "content": block}] + prompt


def parse(f: Fields) -> dict[str, Any]:
    """With chosen and rejected (message objects or strings): the whole conversation is the prompt. Without:
    the turns before its last assistant turn are the prompt, that turn the answer of an NLL row."""
    conversation = messages(f, "conversations")
    chosen, rejected = answer_of(f, "chosen"), answer_of(f, "rejected")
    if chosen is not None or rejected is not None:
        prompt = conversation
        for name, got in (("chosen", chosen), ("rejected", rejected)):
            if got is not None:
                agree(f, name, got[0], prompt, "the conversation")
        answer = None if chosen is None else chosen[1]
    else:
        last = max((i for i, m in enumerate(conversation) if m["role"] == "assistant"), default=None)
        if last is None:
            raise f.error("conversations", "no assistant turn to take as the answer (and no chosen)")
        if last != len(conversation) - 1:
            raise f.error("conversations", "turns after the last assistant turn would be lost")
        prompt, answer = conversation[:last], conversation[last]["content"]
    prompt = with_tools(f, with_system(f, prompt))
    if not any(m["role"] == "user" for m in prompt):
        raise f.error("conversations", "no user turn before the answer")
    return {
        **ids(f),
        "prompt": prompt,
        "chosen": answer,
        "rejected": None if rejected is None else rejected[1],
    }


FORMAT = declare(
    Format(
        name="sharegpt",
        table="pairs",
        summary="ShareGPT conversations ({from, value} turns, or role/content messages) under "
        "`conversations`; "
        "LLaMA-Factory's preference variant adds chosen and rejected, each one message object.",
        notes="Tool turns (function_call, observation) are read as text (pairstore.ingest.messages); `tools` "
        "goes into the system message in a <tools> block.",
        fields=(
            Field(
                "conversations",
                TEXT,
                "the conversation",
                role="prompt (and the answer of an NLL row)",
                required=True,
            ),
            Field("chosen", TEXT, "the preferred answer: a message object or a string", role="chosen"),
            Field("rejected", TEXT, "the other answer", role="rejected"),
            Field("system", TEXT, "a system message", role="system message"),
            Field("tools", TEXT, "the tools offered", role="system message (a <tools> block)"),
            *id_fields(),
        ),
        parse=parse,
        order=40,
        extra={"detect": detect},
    )
)
