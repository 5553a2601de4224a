"""`native`: pairstore's own battle records, single-turn or multi-turn.

pairstore ingest battles battles.jsonl
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import ID, LABEL, MODEL, SETTING, TEXT, TIME, Field, Format, declare
from pairstore.ingest.kinds import Choice, Id, Json, Text, Time
from pairstore.ingest.messages import Messages
from pairstore.ingest.records import Fields

VOTES = ("win", "loss", "tie", "both_bad")
_SINGLE = ("prompt", "own_answer", "opponent_answer")


def _turns(f: Fields) -> tuple[list[str], list[str], list[str]]:
    turns = f.rec["turns"]
    if not isinstance(turns, list) or not turns:
        raise f.error("turns", "expected a non-empty list of {user, own, opponent}")
    users: list[str] = []
    own: list[str] = []
    opp: list[str] = []
    for i, t in enumerate(turns):
        if not isinstance(t, dict):
            raise f.error(f"turns[{i}]", "expected an object with user, own, opponent")
        extra = next((k for k in t if k not in ("user", "own", "opponent")), None)
        if extra is not None:
            raise f.error(f"turns[{i}].{extra}", "unknown key of a turn (expected user, own, opponent)")
        for name, dest in (("user", users), ("own", own), ("opponent", opp)):
            v = t.get(name)
            if not isinstance(v, str):
                raise f.error(
                    f"turns[{i}].{name}",
                    "missing field" if v is None else f"expected a string, got {type(v).__name__}",
                )
            dest.append(v)
    return users, own, opp


def reshape(values: dict[str, Any], f: Fields) -> dict[str, Any]:
    """What the kinds cannot say: a multi-turn battle's `turns`, a `system` message, and the shape of a
    single-turn prompt (one user message, no assistant)."""
    system = f.str("system", required=False)
    if f.has("turns"):
        if any(f.has(name) for name in _SINGLE):
            raise f.error("turns", "give either turns or prompt/own_answer/opponent_answer, not both")
        users, own, opp = _turns(f)
        values["prompt"] = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": u} for u in users
        ]
        values["own_answers"], values["opponent_answers"] = own, opp
        return values
    for name in _SINGLE:
        if name not in values:
            raise f.error(name, "missing field")
    prompt = values["prompt"]
    roles = [m["role"] for m in prompt]
    if "assistant" in roles:
        raise f.error("prompt", "assistant messages in a battle prompt: give a multi-turn battle as turns")
    if roles.count("user") != 1:
        raise f.error("prompt", "a single-turn battle prompt needs exactly one user message")
    if system and "system" not in roles:
        values["prompt"] = [{"role": "system", "content": system}] + prompt
    return values


FORMAT = declare(
    Format(
        name="native",
        table="battles",
        summary="pairstore's battle records (JSONL, JSON, parquet, CSV, a Hub folder or a save_to_disk "
        "folder), "
        "the vote from the own model's side.",
        notes="A single-turn battle gives prompt, own_answer and opponent_answer; a multi-turn one gives "
        "turns "
        "instead.",
        fields=(
            Field("battle_id", ID, "the platform's id", kind=Id(), required=True),
            Field("vote", LABEL, "from the own model's side", kind=Choice(VOTES), required=True),
            Field(
                "prompt",
                TEXT,
                "the question: a string or messages",
                role="user turn",
                kind=Messages("prompt"),
                required=True,
                reshaped=True,
            ),
            Field(
                "own_answer",
                TEXT,
                "the own model's answer",
                role="own answer",
                kind=Text(allow_empty=True),
                required=True,
                into="own_answers",
                reshaped=True,
            ),
            Field(
                "opponent_answer",
                TEXT,
                "the opponent's answer",
                role="opponent answer",
                kind=Text(allow_empty=True),
                required=True,
                into="opponent_answers",
                reshaped=True,
            ),
            Field(
                "turns",
                TEXT,
                "a multi-turn battle: [{user, own, opponent}, ...] instead of the three above",
                role="user turns, own and opponent answers",
            ),
            Field("system", TEXT, "a system message put in front of the prompt", role="system message"),
            Field("category", LABEL, "the platform's category", kind=Text()),
            Field("own_model", MODEL, "the own model's name", kind=Text()),
            Field("opponent_model", MODEL, "the opponent's name", kind=Text()),
            Field("voted_at", TIME, "when the vote was cast", kind=Time()),
            Field("annotator", ID, "who voted", kind=Text()),
            Field("origin", LABEL, "where the vote was cast (serve, fastchat-log, ...)", kind=Text()),
            Field("own_position", LABEL, "the side the own model was shown on", kind=Choice(("a", "b"))),
            Field(
                "decoding",
                SETTING,
                "decoding settings per model",
                kind=Json("expected an object of decoding settings per model"),
            ),
            Field("shown_at", TIME, "when the battle was shown", kind=Time()),
        ),
        signature=("battle_id", "vote"),
        reshape=reshape,
        order=0,
    )
)
