"""`hh-rlhf`: Anthropic/hh-rlhf rows, chosen and rejected as whole dialogues.

pairstore ingest pairs hh-rlhf/train.jsonl.gz --source hh
"""

from __future__ import annotations

import re
from typing import Any

from pairstore.ingest.declare import TEXT, Field, Format, declare
from pairstore.ingest.pair_rows import id_fields, ids
from pairstore.ingest.records import Fields

_TURN = re.compile(r"(?:^|\n\n)(Human|Assistant):[ ]?")


def dialogue(text: str) -> list[dict] | None:
    """An HH-RLHF dialogue string ("\\n\\nHuman: ...\\n\\nAssistant: ...") as messages; None when it is
    not one."""
    parts = _TURN.split(text)
    if len(parts) < 3 or parts[0].strip():
        return None
    roles = {"Human": "user", "Assistant": "assistant"}
    return [{"role": roles[r], "content": c.strip()} for r, c in zip(parts[1::2], parts[2::2])]


def detect(rec: dict) -> bool:
    chosen = rec.get("chosen")
    return (
        isinstance(chosen, str)
        and "\n\nHuman:" in chosen
        and not any(rec.get(n) is not None for n in ("prompt", "question", "query", "instruction"))
    )


def parse(f: Fields) -> dict[str, Any]:
    """(prompt, chosen, rejected): the dialogues share every turn but the last answer."""
    chosen, rejected = f.rec.get("chosen"), f.rec.get("rejected")
    c = dialogue(chosen) if isinstance(chosen, str) else None
    if c is None or c[-1]["role"] != "assistant":
        raise f.error("chosen", "an HH-RLHF dialogue must end with an Assistant turn")
    r = None
    if rejected is not None:
        r = dialogue(rejected) if isinstance(rejected, str) else None
        if r is None or r[-1]["role"] != "assistant":
            raise f.error("rejected", "an HH-RLHF dialogue must end with an Assistant turn")
        if r[:-1] != c[:-1]:
            raise f.error(
                "rejected", "the rejected dialogue's turns before its last answer differ from chosen's"
            )
    return {
        **ids(f),
        "prompt": c[:-1],
        "chosen": c[-1]["content"],
        "rejected": None if r is None else r[-1]["content"],
    }


FORMAT = declare(
    Format(
        name="hh-rlhf",
        table="pairs",
        summary="Anthropic/hh-rlhf rows: chosen and rejected as whole dialogues "
        '("\\n\\nHuman: ...\\n\\nAssistant: '
        '..."), sharing every turn but the last answer.',
        notes="The shared turns are the prompt, each dialogue's last Assistant turn its answer; the role "
        "markers "
        "are the layout, not text.",
        fields=(
            Field(
                "chosen",
                TEXT,
                "the dialogue ending in the preferred answer",
                role="prompt and chosen",
                required=True,
            ),
            Field("rejected", TEXT, "the same dialogue ending in the other answer", role="rejected"),
            *id_fields(),
        ),
        parse=parse,
        order=20,
        extra={"detect": detect},
    )
)
