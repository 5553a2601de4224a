"""What every pair shape reads into, and the rules they share: a pair file's row, read whole.

A pair shape (pairstore.ingest.formats: `trl`, `hh-rlhf`, `sharegpt`, `alpaca`, `ultrafeedback`,
`openai-messages`, `openai-preference`, ...) reads a record into the columns of PAIR: the prompt as
messages, the chosen and rejected answers (rejected None: an NLL-only row), the ids and labels. The rules
here are the ones that make "read whole" true of every shape:

- a conversation given as the answer (`chosen` as a message list) holds the prompt before its last
  assistant message: those turns are the prompt, or must equal the prompt given beside it (a `prompt`
  column that disagrees with the lists, a truncated copy, is refused), and rejected's turns before its
  answer must equal them; turns after the answer would be lost and are refused;
- one answer per side: a second answer field beside `chosen` (`completion`, `response`, `output`) is
  refused unless it says the same;
- a `system` (or `system_prompt`) field beside a prompt that opens with its own system message is
  refused unless the two are the same text;
- a `rejected` given but holding no answer is refused (never silently an NLL row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

# One list of id fields: what an ingest of pairs and the leak audit both take as a row's origin ids.
from pairstore.holdout.record_fields import ID_FIELDS
from pairstore.ingest.declare import ID, LABEL, Field
from pairstore.ingest.kinds import MSG_TYPE, Id, Problem, Text
from pairstore.ingest.messages import read_messages
from pairstore.ingest.records import Fields

PAIR = pa.schema(
    [
        ("prompt", MSG_TYPE),
        ("chosen", pa.string()),
        ("rejected", pa.string()),
        ("pair_id", pa.string()),
        ("source", pa.string()),
        ("family", pa.string()),
        ("task_key", pa.string()),
        ("origin_ids", pa.list_(pa.string())),
        *((name, pa.string()) for name in ID_FIELDS),
        ("_row", pa.int64()),
    ]
)


def id_fields() -> tuple[Field, ...]:
    """The ids and labels every pair shape reads: kept as the pair's origins (the holdout matcher compares
    them with held-out item ids), its source, family and task key."""
    return (
        Field("pair_id", ID, "a pair id (pairstore's own, in an exported file)", kind=Text(allow_empty=True)),
        *(Field(name, ID, "an id of the row's origin", kind=Id(allow_empty=True)) for name in ID_FIELDS),
        Field("origin_ids", ID, "more origin ids, a list"),
        Field("source", LABEL, "the pair's source", kind=Text()),
        Field("family", LABEL, "the pair's family", kind=Text()),
        Field("task_key", ID, "the task key of a generated task", kind=Text(allow_empty=True)),
    )


def origin_list(f: Fields) -> list[str] | None:
    """`origin_ids`, a list of ids (strings or integers)."""
    v = f.rec.get("origin_ids")
    if v is None:
        return None
    if hasattr(v, "tolist"):
        v = v.tolist()
    if not isinstance(v, (list, tuple)) or any(
        isinstance(x, bool) or not isinstance(x, (str, int)) for x in v if x is not None
    ):
        raise f.error("origin_ids", "expected a list of ids")
    return [str(x) for x in v if x is not None]


def messages(f: Fields, name: str, value: Any = None) -> list[dict]:
    """A message list (or a string: one user message) of field `name`, read whole."""
    try:
        return read_messages(f.rec.get(name) if value is None else value, where=name)
    except Problem as e:
        raise f.error(e.field or name, str(e)) from None


def answer_of(f: Fields, name: str) -> tuple[list[dict], str] | None:
    """(the turns before the answer, the answer) of an answer field: a string (no turns), one message
    object, or a conversation whose last assistant message is the answer. None when the field is absent;
    refused when it holds no answer or turns after it."""
    v = f.rec.get(name)
    if v is None:
        return None
    if isinstance(v, str):
        return [], v
    if isinstance(v, dict):  # one message object (ShareGPT preference files write rejected so)
        v = [v]
    msgs = messages(f, name, v)
    last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=None)
    if last is None:
        raise f.error(name, "message list has no assistant message")
    if last != len(msgs) - 1:
        raise f.error(name, "turns after the last assistant message would be lost")
    return msgs[:last], msgs[last]["content"]


def with_system(
    f: Fields, prompt: list[dict], names: Sequence[str] = ("system", "system_prompt")
) -> list[dict]:
    """`prompt` with a system field put in front; one beside a prompt with another system message of its
    own is refused (one of the two would be lost)."""
    for name in names:
        system = f.rec.get(name)
        if system is None:
            continue
        if not isinstance(system, str):
            raise f.error(name, f"expected a string, got {type(system).__name__}")
        if not system:
            continue
        if prompt and prompt[0]["role"] == "system":
            if prompt[0]["content"].strip() != system.strip():
                raise f.error(
                    name,
                    f"{name!r} differs from the prompt's own system message: one of the two would be lost",
                )
            continue
        prompt = [{"role": "system", "content": system}] + prompt
    return prompt


def agree(f: Fields, name: str, turns: list[dict], prompt: list[dict] | None, against: str) -> None:
    """A conversation's turns before its answer are the prompt given (`against` names where it came from)
    or none: a prompt column beside message lists that disagree, or a truncated copy, would lose text."""
    if not turns or prompt is None:
        return
    same = len(turns) == len(prompt) and all(
        a["role"] == b["role"] and a["content"].strip() == b["content"].strip() for a, b in zip(turns, prompt)
    )
    if not same:
        raise f.error(
            name,
            f"its turns before the answer differ from {against}: give the prompt once (or the same turns)",
        )


def one_answer(
    f: Fields, chosen: str | None, names: Sequence[str] = ("completion", "response", "output")
) -> str | None:
    """The chosen answer, and any other answer field beside it: the same text, or refused."""
    for name in names:
        got = answer_of(f, name)
        if got is None:
            continue
        if chosen is None:
            chosen = got[1]
        elif got[1].strip() != chosen.strip():
            raise f.error(name, f"{name!r} beside another answer would be lost: give one answer per side")
    return chosen


def ids(f: Fields) -> dict[str, Any]:
    """The id and label columns of a record (the values the kinds of id_fields check)."""
    out: dict[str, Any] = {}
    for field in id_fields():
        if field.kind is None:
            continue
        v = f.rec.get(field.name)
        if v is None:
            continue
        try:
            out[field.name] = field.kind.value(v)
        except Problem as e:
            raise f.error(field.name, str(e)) from None
    out["origin_ids"] = origin_list(f)
    return out
