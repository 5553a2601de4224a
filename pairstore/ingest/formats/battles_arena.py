"""`arena`: lmsys/chatbot_arena_conversations rows, as published.

pairstore ingest battles chatbot_arena_conversations/ --format arena --own-model vicuna-13b
"""

from __future__ import annotations

from pairstore.ingest.arena import (
    SIDES,
    WINNERS,
    ArenaBattle,
    epoch_time,
    json_text,
    moderation_flag,
    scalar,
)
from pairstore.ingest.declare import ID, LABEL, META, MODEL, SETTING, TEXT, TIME, Field, Format, declare
from pairstore.ingest.kinds import Problem
from pairstore.ingest.messages import read_messages
from pairstore.ingest.records import Fields


def _conversation(f: Fields, name: str) -> tuple[list[str], list[str]] | str:
    """(user turns, assistant answers) of an alternating conversation, or a drop reason."""
    value = json_text(f, name)
    if value is None:
        raise f.error(name, "missing field")
    if isinstance(value, list):
        for m in value:
            if isinstance(m, dict) and "content" in m and m["content"] is None:
                return "null response" if m.get("role") == "assistant" else "null prompt"
    try:
        messages = read_messages(value, where=name)
    except Problem as e:
        raise f.error(e.field or name, str(e)) from None
    roles = [m["role"] for m in messages]
    if len(roles) % 2 or roles != ["user", "assistant"] * (len(roles) // 2):
        raise f.error(
            name,
            "expected user and assistant turns alternating, starting with user and ending "
            f"with assistant; got {', '.join(roles)}",
        )
    return [m["content"] for m in messages[::2]], [m["content"] for m in messages[1::2]]


def parse_arena(f: Fields) -> ArenaBattle | str:
    """One lmsys/chatbot_arena_conversations row, or the reason it is dropped."""
    battle_id = f.str("question_id", allow_int=True)
    models = {"a": f.str("model_a"), "b": f.str("model_b")}
    winner = f.str("winner")
    if winner not in WINNERS:
        raise f.error("winner", f"unknown value {winner!r} (expected one of {', '.join(WINNERS)})")
    sides = {}
    for side in SIDES:
        got = _conversation(f, f"conversation_{side}")
        if isinstance(got, str):
            return got
        sides[side] = got
    if sides["a"][0] != sides["b"][0]:
        raise f.error("conversation_b", "its user turns differ from conversation_a's (a battle shares them)")
    scalar(f, "turn", int)  # checked, not kept: the conversations give the turns
    judge = f.str("judge", required=False, allow_int=True)
    language = f.str("language", required=False, allow_empty=True)
    return ArenaBattle(
        battle_id,
        sides["a"][0],
        {s: sides[s][1] for s in SIDES},
        models,
        WINNERS[winner],
        voted_at=epoch_time(f, "tstamp"),
        language=language or None,
        flagged=moderation_flag(f),
        anonymous=scalar(f, "anony", bool),
        annotator=judge,
        origin=FORMAT.name,
    )


FORMAT = declare(
    Format(
        name="arena",
        table="battles",
        summary="lmsys/chatbot_arena_conversations rows (JSONL, parquet, CSV, a Hub folder or a save_to_disk "
        "folder); in a CSV the conversations and moderation objects are JSON text.",
        notes="The vote is read from the side of --own-model; model_a is the model shown on the left, so "
        "the own model's side is its position, and `judge` is the annotator.",
        fields=(
            Field("question_id", ID, "the battle's id (`battle_id`)", required=True),
            Field("model_a", MODEL, "the model shown on the left", required=True),
            Field("model_b", MODEL, "the model shown on the right", required=True),
            Field("winner", LABEL, "model_a, model_b, tie or tie (bothbad)", required=True),
            Field("judge", ID, "who voted (`annotator`)"),
            Field(
                "conversation_a",
                TEXT,
                "model_a's conversation: user and assistant turns",
                role="user turns, own or opponent answers",
                required=True,
            ),
            Field(
                "conversation_b",
                TEXT,
                "model_b's conversation, the same user turns",
                role="opponent or own answers",
                required=True,
            ),
            Field("turn", SETTING, "the number of turns (checked, the conversations give them)"),
            Field("anony", LABEL, "whether the voter saw the names (`anonymous`)"),
            Field("language", LABEL, "the conversation's language"),
            Field("tstamp", TIME, "when the vote was cast, epoch seconds (`voted_at`)"),
            Field("openai_moderation", META, "the moderation result (its `flagged` becomes `flagged`)"),
            Field("toxic_chat_tag", META, "toxicity tags per classifier (a flag becomes `flagged`)"),
        ),
        signature=("model_a", "model_b", "conversation_a", "conversation_b", "winner"),
        parse=parse_arena,
        order=10,
    )
)
