"""Chat messages in every common spelling, read whole: the one reader of a message list in a user's file.

    read_messages([{"from": "human", "value": "hi"}], where="conversations")
    # -> [{"role": "user", "content": "hi"}]

Read, field for field (docs/schema.md, "Input formats"):

- a string: one user message;
- a list of messages, each an object with `role` (or ShareGPT's `from`) and `content` (or `value`), or a
  `[role, text]` pair (FastChat); roles `system` (also `developer`), `user` (`human`), `assistant`
  (`gpt`, `bot`, `model`), and the tool turns below;
- content as a string or as OpenAI content parts (`[{"type": "text", "text": ...}]`, plain strings, a
  `refusal` part), the texts joined by a newline; a part of any other type (an image, audio) would be
  lost and is refused;
- OpenAI tool calls, read as text: an assistant message's `tool_calls` (and the older `function_call`)
  become `<tool_call>` blocks after its content, `{"name": ..., "arguments": ...}` with the arguments as
  given; a `tool` or `function` message (ShareGPT: `observation`) becomes a user turn holding its content
  in a `<tool_response>` block, ShareGPT's `function_call` turn an assistant turn with the call in a
  `<tool_call>` block; the spelling of the tool-use chat templates (Qwen2.5, Hermes), so the gate reads
  every argument and every tool result;
- an assistant message's `refusal` text, after its content;
- (`RenderedPrompt`, a prompt as a completion endpoint was sent it) a string a chat template rendered,
  ChatML, Llama 3 or Gemma: read back into its messages, the open assistant turn at its end left out.

Not text, and listed as such: a message's `name` (who spoke), `tool_call_id`, a tool call's `id` and
`type`, `weight` (OpenAI fine-tuning's 0 or 1). Any other key holding text is refused: its text would
be lost. The result holds only roles `system`, `user` and `assistant`, every content a string.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa

from pairstore.ingest.kinds import (
    MSG_TYPE,
    Checked,
    Column,
    Kind,
    NotDirect,
    Problem,
    as_array,
    type_name,
    user_messages,
)

ROLES = ("system", "user", "assistant")
ROLE_NAMES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "gpt": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
    "observation": "tool",
    "function_call": "call",
}
# Message keys that hold no text of the conversation (who spoke, ids, training weights).
NON_TEXT_KEYS = ("name", "tool_call_id", "weight", "id", "type", "index")
_TEXT_PART_TYPES = ("text", "input_text", "output_text")


def _string_leaf(v: Any, at: str) -> str | None:
    """The path of the first string inside `v`, else None."""
    stack = [(at, v)]
    while stack:
        where, x = stack.pop()
        if isinstance(x, str):
            return where
        if isinstance(x, dict):
            stack.extend((f"{where}.{k}", y) for k, y in reversed(list(x.items())))
        elif isinstance(x, list):
            stack.extend((f"{where}[{i}]", y) for i, y in reversed(list(enumerate(x))))
    return None


def _content(value: Any, at: str) -> str | None:
    """A message's content: a string, None, or content parts (their texts joined)."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise Problem(f"{at}: expected a string or a list of content parts, got {type_name(value)}")
    texts = []
    for j, part in enumerate(value):
        if isinstance(part, str):
            texts.append(part)
            continue
        kind = part.get("type") if isinstance(part, dict) else type_name(part)
        if isinstance(part, dict) and kind in (*_TEXT_PART_TYPES, "refusal"):
            key = "refusal" if kind == "refusal" else "text"
            text = part.get(key)
            if not isinstance(text, str):
                raise Problem(f"{at}[{j}].{key}: expected a string")
            unread = next((k for k in part if k not in ("type", key) and _string_leaf(part[k], "")), None)
            if unread is not None:
                raise Problem("text this reader does not read would be lost", field=f"{at}[{j}].{unread}")
            texts.append(text)
        else:
            raise Problem(
                f"a {kind!r} content part would be lost: only text parts can be read", field=f"{at}[{j}]"
            )
    return "\n".join(texts)


def _call_text(call: Any, at: str) -> str:
    """One tool call as the text the tool-use templates write: <tool_call>{"name": ..., "arguments": ...}."""
    if isinstance(call, dict) and isinstance(call.get("function"), dict):
        unread = next((k for k in call if k not in ("function", "id", "type", "index")), None)
        if unread is not None and _string_leaf(call[unread], ""):
            raise Problem("text this reader does not read would be lost", field=f"{at}.{unread}")
        call, at = call["function"], f"{at}.function"
    if not isinstance(call, dict):
        raise Problem(f"{at}: expected a tool call object with name and arguments")
    name, arguments = call.get("name"), call.get("arguments", call.get("parameters"))
    if not isinstance(name, str):
        raise Problem(f"{at}.name: expected a string")
    unread = next((k for k in call if k not in ("name", "arguments", "parameters", "id", "type")), None)
    if unread is not None and _string_leaf(call[unread], ""):
        raise Problem("text this reader does not read would be lost", field=f"{at}.{unread}")
    if arguments is None:
        args = "{}"
    elif isinstance(arguments, str):
        args = arguments
    else:
        args = json.dumps(arguments, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


def _calls(m: dict, at: str) -> list[str]:
    calls = m.get("tool_calls")
    out = []
    if calls is not None:
        if not isinstance(calls, list):
            raise Problem(f"{at}.tool_calls: expected a list of tool calls")
        out += [_call_text(c, f"{at}.tool_calls[{k}]") for k, c in enumerate(calls)]
    if m.get("function_call") is not None:
        out.append(_call_text(m["function_call"], f"{at}.function_call"))
    return out


def _message(m: Any, at: str) -> dict:
    if isinstance(m, (list, tuple)) and len(m) == 2:
        m = {"role": m[0], "content": m[1]}
    if not isinstance(m, dict):
        raise Problem(f"{at}: expected a message object with role and content")
    role_key = "role" if "role" in m else "from" if "from" in m else "role"
    text_key = "content" if "content" in m or "value" not in m else "value"
    given = m.get(role_key)
    role = ROLE_NAMES.get(given) if isinstance(given, str) else None
    if role is None:
        role = ROLE_NAMES.get(given.lower()) if isinstance(given, str) else None
    if role is None:
        raise Problem(f"{at}.role: unknown role {given!r} (expected one of {', '.join(ROLES)})")
    known = {role_key, text_key, "tool_calls", "function_call", "refusal", *NON_TEXT_KEYS}
    unread = next((k for k in m if k not in known and _string_leaf(m[k], "")), None)
    if unread is not None:
        raise Problem("text this reader does not read would be lost", field=f"{at}.{unread}")
    content = _content(m.get(text_key), f"{at}.{text_key}")
    refusal = m.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise Problem(f"{at}.refusal: expected a string")
    calls = _calls(m, at)
    if (calls or refusal) and role not in ("assistant", "call"):
        raise Problem(f"{at}: tool calls and refusals belong to assistant messages, not {given!r}")
    if role == "call":  # ShareGPT's function_call turn: the call itself is the value
        if content is None:
            raise Problem(f"{at}.{text_key}: expected the tool call")
        return {"role": "assistant", "content": f"<tool_call>\n{content}\n</tool_call>"}
    if role == "tool":
        if content is None:
            raise Problem(f"{at}.{text_key}: expected a string, got NoneType")
        return {"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"}
    parts = [p for p in (content, refusal) if p] + calls
    if content is None and not calls and refusal is None:
        raise Problem(f"{at}.{text_key}: expected a string, got NoneType")
    text = "\n".join(parts) if parts else (content or "")
    return {"role": role, "content": text}


def read_messages(value: Any, *, where: str = "prompt") -> list[dict]:
    """A prompt or conversation in any spelling above, as [{"role", "content"}] with roles system, user and
    assistant; Problem naming the part (`where[i].key`) that cannot be read whole."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if hasattr(value, "tolist"):  # numpy / arrow arrays from parquet
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise Problem(f"{where}: expected a string or a list of messages, got {type_name(value)}")
    if not value:
        raise Problem(f"{where}: empty message list")
    return [_message(m, f"{where}[{i}]") for i, m in enumerate(value)]


class Messages(Kind):
    """A prompt or a conversation: a string (one user message) or a message list in any spelling
    read_messages reads."""

    arrow = MSG_TYPE
    direct = pa.string()
    doc = "a string (one user message) or a list of messages"

    def __init__(self, where: str):
        self.where = where

    def value(self, v: Any) -> list[dict]:
        return read_messages(v, where=self.where)

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type):
            return Checked(pa.nulls(len(arr), MSG_TYPE))
        if pa.types.is_string(arr.type):
            return Checked(user_messages(arr))
        if arr.type == MSG_TYPE:
            return Checked(arr)
        raise NotDirect(f"messages: {arr.type}")


# Chat templates whose rendering reads back into messages: (one whole turn: role and content, the open
# assistant turn a generation prompt leaves at the end). ChatML (Qwen, many fine-tunes), Llama 3, Gemma.
_RENDERED = (
    (r"<\|im_start\|>(system|user|assistant)\n(.*?)<\|im_end\|>\n?", r"<\|im_start\|>assistant\n?"),
    (
        r"<\|start_header_id\|>(system|user|assistant)<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>",
        r"<\|start_header_id\|>assistant<\|end_header_id\|>(?:\n\n)?",
    ),
    (r"<start_of_turn>(user|model)\n(.*?)<end_of_turn>\n?", r"<start_of_turn>model\n?"),
)
_TEMPLATES = [(re.compile(turn, re.S), re.compile(tail)) for turn, tail in _RENDERED]
_BOS = re.compile(r"<s>|<bos>|<\|begin_of_text\|>")


def rendered_messages(text: str) -> list[dict] | None:
    """The messages of a prompt a chat template rendered (`_RENDERED`), else None.

    The whole text must be turns of one template (a start-of-text token before them, the open assistant
    turn after them): text outside the turns would be lost, so such a string is not read this way."""
    start = m.end() if (m := _BOS.match(text)) else 0
    for turn, tail in _TEMPLATES:
        messages, pos = [], start
        while (m := turn.match(text, pos)) is not None:
            role = "assistant" if m.group(1) == "model" else m.group(1)
            messages.append({"role": role, "content": m.group(2)})
            pos = m.end()
        if (m := tail.match(text, pos)) is not None:
            pos = m.end()
        if messages and pos == len(text) and any(x["role"] == "user" for x in messages):
            return messages
    return None


class RenderedPrompt(Messages):
    """A prompt as a completion endpoint was sent it: a string a chat template rendered is read back into
    its messages (the trainer's template renders them again); any other string is one user message."""

    direct = None  # read record by record: a string column is not one user message per row
    doc = (
        "a string (one user message; a ChatML, Llama 3 or Gemma rendering: its messages) or a list of "
        "messages"
    )

    def value(self, v: Any) -> list[dict]:
        if isinstance(v, str) and (messages := rendered_messages(v)) is not None:
            return messages
        return super().value(v)
