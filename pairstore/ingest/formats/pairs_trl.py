"""`trl`: pair files in TRL's preference layouts (standard and conversational, explicit or implicit
prompt) and its prompt-completion layout, as most tools write pairs.

    pairstore ingest pairs past_round.parquet --source attached
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import LABEL, MODEL, SCORE, TEXT, Field, Format, declare
from pairstore.ingest.kinds import Answer
from pairstore.ingest.messages import Messages
from pairstore.ingest.pair_rows import agree, answer_of, id_fields, messages, origin_list, with_system
from pairstore.ingest.records import Fields

PROMPT_ALIASES = ("question", "query")
ANSWER_ALIASES = ("completion", "response", "output")
NO_PROMPT = "no prompt (expected prompt, question or query, or a conversation in chosen)"


def reshape(values: dict[str, Any], f: Fields) -> dict[str, Any]:
    """The pair of a record: the prompt (given, or the chosen conversation's turns before its answer), one
    answer a side; every text of the record in it, or the record refused (pairstore.ingest.pair_rows)."""
    if f.has("label"):
        raise f.error("label", "an unpaired row (label: good or bad) is not a pair: give chosen and rejected")
    prompt = values.get("prompt")
    named = "the prompt field"
    for alias in PROMPT_ALIASES:
        if f.has(alias):
            if prompt is not None:
                raise f.error(alias, f"{alias!r} beside another prompt field would be lost: give one prompt")
            prompt, named = messages(f, alias), f"the {alias} field"
    chosen = answer_of(f, "chosen")
    answers = [(name, got) for name in ANSWER_ALIASES if (got := answer_of(f, name)) is not None]
    if chosen is None and answers:
        chosen = answers[0][1]
        answers = answers[1:]
    if prompt is None:
        if chosen is None or not chosen[0]:
            raise f.error("prompt", NO_PROMPT)
        prompt, named = chosen[0], "chosen's"
    elif chosen is not None:
        agree(f, "chosen", chosen[0], prompt, named)
    for name, got in answers:
        agree(f, name, got[0], prompt, named)
        if chosen is not None and got[1].strip() != chosen[1].strip():
            raise f.error(name, f"{name!r} beside 'chosen' would be lost: give one answer per side")
    rejected = answer_of(f, "rejected")
    if rejected is not None:
        agree(f, "rejected", rejected[0], prompt, named)
    prompt = with_system(f, prompt)
    if not any(m["role"] == "user" for m in prompt):
        raise f.error("prompt", NO_PROMPT)
    values["prompt"] = prompt
    values["chosen"] = None if chosen is None else chosen[1]
    values["rejected"] = None if rejected is None else rejected[1]
    values["origin_ids"] = origin_list(f)
    return values


FORMAT = declare(
    Format(
        name="trl",
        table="pairs",
        summary="TRL's layouts: prompt, chosen, rejected as strings or message lists (the prompt may be "
        "only inside chosen and rejected, before their answers), or prompt and completion for an NLL row.",
        notes="Message lists are read whole, every turn: the turns before chosen's answer are the prompt or "
        "must equal the prompt field; rejected's turns must equal them too. A missing or null rejected "
        "makes an NLL-only row.",
        fields=(
            Field(
                "prompt",
                TEXT,
                "the prompt: a string or messages (or only inside chosen's conversation)",
                role="prompt",
                kind=Messages("prompt"),
                required=True,
                missing=NO_PROMPT,
                reshaped=True,
            ),
            Field("question", TEXT, "the prompt, under another name", role="prompt"),
            Field("query", TEXT, "the prompt, under another name", role="prompt"),
            Field("system", TEXT, "a system message put in front of the prompt", role="system message"),
            Field("system_prompt", TEXT, "the same, under another name", role="system message"),
            Field(
                "chosen",
                TEXT,
                "the preferred answer: a string, a message or a conversation",
                role="chosen",
                kind=Answer(),
            ),
            Field("rejected", TEXT, "the other answer", role="rejected", kind=Answer()),
            Field("completion", TEXT, "the answer of an NLL row (or chosen's, the same text)", role="chosen"),
            Field("response", TEXT, "the same, under another name", role="chosen"),
            Field("output", TEXT, "the same, under another name", role="chosen"),
            Field("label", LABEL, "an unpaired row's label: refused (not a pair)"),
            # Argilla's cleaned UltraFeedback pairs: each side's model and rating
            Field("chosen-model", MODEL, "the model that wrote chosen"),
            Field("rejected-model", MODEL, "the model that wrote rejected"),
            Field("chosen-rating", SCORE, "chosen's rating"),
            Field("rejected-rating", SCORE, "rejected's rating"),
            *id_fields(),
        ),
        reshape=reshape,
        order=90,
    )
)
