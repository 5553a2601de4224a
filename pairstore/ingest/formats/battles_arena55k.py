"""`arena55k`: lmsys-arena-human-preference-55k rows (the Kaggle `train.csv`), as published.

pairstore ingest battles train.csv --format arena55k --own-model gpt-4-0613 --others pairs
"""

from __future__ import annotations

import json

from pairstore.ingest.arena import SIDES, WINNERS, ArenaBattle, scalar
from pairstore.ingest.declare import ID, LABEL, MODEL, TEXT, Field, Format, declare
from pairstore.ingest.records import Fields, lone_surrogate


def _turn_list(f: Fields, name: str) -> list | str:
    """A 55k JSON-encoded list of turns: its strings, or a drop reason for a null or broken turn."""
    raw = f.rec.get(name)
    if raw is None:
        raise f.error(name, "missing field")
    if not isinstance(raw, str):
        raise f.error(name, f"expected a JSON-encoded list of strings, got {type(raw).__name__}")
    try:
        turns = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        raise f.error(name, "expected a JSON-encoded list of strings, got text that is not JSON") from None
    if not isinstance(turns, list) or not turns or not all(t is None or isinstance(t, str) for t in turns):
        raise f.error(name, "expected a JSON-encoded non-empty list of strings")
    if any(t is None for t in turns):
        return "null prompt" if name == "prompt" else "null response"
    if lone_surrogate(turns):
        return "invalid unicode"
    return turns


def parse_arena55k(f: Fields) -> ArenaBattle | str:
    """One lmsys-arena-human-preference-55k row, or the reason it is dropped."""
    battle_id = f.str("id", allow_int=True)
    models = {"a": f.str("model_a"), "b": f.str("model_b")}
    given = {name: scalar(f, f"winner_{name}", int) for name in ("model_a", "model_b", "tie")}
    flags: dict[str, int] = {}
    for name, v in given.items():
        if v is None or v not in (0, 1):
            raise f.error(f"winner_{name}", "missing field" if v is None else f"expected 0 or 1, got {v}")
        flags[name] = v
    if sum(flags.values()) != 1:
        raise f.error("winner_tie", "exactly one of winner_model_a, winner_model_b, winner_tie must be 1")
    listed = {name: _turn_list(f, name) for name in ("prompt", "response_a", "response_b")}
    turns: dict[str, list[str]] = {}
    for name, reason in listed.items():
        if isinstance(reason, str):
            return reason
        turns[name] = reason
    for side in SIDES:
        if len(turns[f"response_{side}"]) != len(turns["prompt"]):
            raise f.error(
                f"response_{side}",
                f"{len(turns[f'response_{side}'])} responses for {len(turns['prompt'])} prompt turns",
            )
    winner = next(name for name, v in flags.items() if v == 1)
    return ArenaBattle(
        battle_id,
        turns["prompt"],
        {s: turns[f"response_{s}"] for s in SIDES},
        models,
        WINNERS[winner],
        origin=FORMAT.name,
    )


FORMAT = declare(
    Format(
        name="arena55k",
        table="battles",
        summary="lmsys-arena-human-preference-55k rows (the Kaggle `train.csv`, or its parquet or Hub copy).",
        notes="A tie here covers both-bad votes too. model_a is the model shown on the left: the own model's "
        "side is its position.",
        fields=(
            Field("id", ID, "the battle's id (`battle_id`)", required=True),
            Field("model_a", MODEL, "the model shown on the left", required=True),
            Field("model_b", MODEL, "the model shown on the right", required=True),
            Field(
                "prompt",
                TEXT,
                "the user turns, a JSON-encoded list of strings",
                role="user turns",
                required=True,
            ),
            Field(
                "response_a",
                TEXT,
                "model_a's answer to each turn, JSON-encoded",
                role="own or opponent answers",
                required=True,
            ),
            Field(
                "response_b",
                TEXT,
                "model_b's answer to each turn, JSON-encoded",
                role="opponent or own answers",
                required=True,
            ),
            Field("winner_model_a", LABEL, "1 when model_a won", required=True),
            Field("winner_model_b", LABEL, "1 when model_b won", required=True),
            Field("winner_tie", LABEL, "1 for a tie (or both bad)", required=True),
        ),
        signature=("model_a", "model_b", "response_a", "response_b", "winner_model_a"),
        parse=parse_arena55k,
        order=20,
    )
)
