"""Chatbot Arena battles in their public forms, read as they are published.

    pairstore ingest battles chatbot_arena_conversations/ --format arena --own-model vicuna-13b
    pairstore ingest battles train.csv --format arena55k --own-model gpt-4-0613 \\
        --own-model gpt-4-1106-preview --others pairs

Formats (from JSONL, parquet, CSV, a Hub folder or a save_to_disk folder: pairstore.ingest.dataset_files):

- `arena`, lmsys/chatbot_arena_conversations: question_id, model_a, model_b, winner (model_a | model_b |
  tie | tie (bothbad)), conversation_a / conversation_b (role/content messages, user and assistant
  alternating, the user turns shared), turn, tstamp (epoch seconds), language, judge, anony,
  openai_moderation, toxic_chat_tag. In a CSV the conversations and moderation objects are JSON text.
- `arena55k`, lmsys/lmsys-arena-human-preference-55k: id, model_a, model_b, prompt, response_a,
  response_b (JSON-encoded lists of strings, one per turn, that may hold null), winner_model_a,
  winner_model_b, winner_tie (0 or 1, exactly one 1). A tie here covers both-bad votes too.

This module reads and checks rows (parse_row) and maps them (battle_fields, other_pair);
pairstore.ingest.battles writes them. The vote of a battle the own model played is mapped to its
side; `winner` of a battle between two other models picks the chosen answer of an `arena` pair
(ties and both-bad give none).

Answers the platform could not give are counted, not refused: a null turn ('null response', 'null
prompt') and, in the 55k file, text cut inside a surrogate pair ('invalid unicode'). A row that breaks the
published schema (a missing or mistyped field, an unknown winner, conversations that do not align) raises
BadInput naming file, line and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from pairstore.errors import BadInput
from pairstore.ingest.records import Fields, lone_surrogate
from pairstore.keys import canonical_messages
from pairstore.tables.pairs import Origin, Pair, battle_pair_prompt, declare_sources

FORMATS = ("arena", "arena55k", "fastchat-log")  # fastchat-log: pairstore.ingest.fastchat
# --others pairs: battles between two other models, the winner's answer chosen.
SOURCES = declare_sources(("arena",), by=__name__)
OTHERS = ("skip", "pairs")
SIDES = ("a", "b")
_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "both_bad"}
_VOTES = {"tie": "tie", "both_bad": "both_bad"}


@dataclass
class ArenaBattle:
    battle_id: str
    users: list[str]  # the user turns, in order
    answers: dict[str, list[str]]  # side (a, b) -> that model's answer to each user turn
    models: dict[str, str]  # side -> model name
    winner: str  # a, b, tie or both_bad
    voted_at: datetime | None = None
    language: str | None = None
    flagged: bool | None = None
    anonymous: bool | None = None


# ---------------------------------------------------------------------------- typed values, CSV text too


def _json_text(f: Fields, name: str):
    """The field's value; in a CSV (or any text column) a JSON-encoded value is decoded."""
    v = f.rec.get(name)
    if isinstance(v, str):
        try:
            return json.loads(v)
        except (json.JSONDecodeError, RecursionError):
            raise f.error(name, "expected JSON text (a list or object)") from None
    return v


def _scalar(f: Fields, name: str, kind: type):
    """An int, float or bool field (None when absent); CSV gives it as text ("1", "1682351591.13", "True")."""
    v = f.rec.get(name)
    if isinstance(v, str):
        text = v.strip()
        if not text:
            return None
        try:
            v = {"true": True, "false": False}[text.lower()] if kind is bool else kind(text)
        except (KeyError, ValueError):
            raise f.error(name, f"expected {kind.__name__}, got {text!r}") from None
        f = Fields({name: v}, f.path, f.line)
    if kind is bool:
        return f.bool(name, default=None)
    return f.int(name) if kind is int else f.float(name)


def _voted_at(f: Fields, name: str) -> datetime | None:
    seconds = _scalar(f, name, float)
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        raise f.error(name, f"{seconds!r} is not a time in epoch seconds") from None


def _flagged(f: Fields) -> bool | None:
    """openai_moderation.flagged or any toxic_chat_tag model's flag; None when neither is given."""
    flags = []
    moderation = _json_text(f, "openai_moderation")
    if moderation is not None:
        if not isinstance(moderation, dict):
            raise f.error("openai_moderation", "expected an object")
        flags.append(moderation.get("flagged"))
    toxic = _json_text(f, "toxic_chat_tag")
    if toxic is not None:
        if not isinstance(toxic, dict):
            raise f.error("toxic_chat_tag", "expected an object")
        flags += [tag.get("flagged") for tag in toxic.values() if isinstance(tag, dict)]
    flags = [flag for flag in flags if flag is not None]
    return any(bool(flag) for flag in flags) if flags else None


# ---------------------------------------------------------------------------- the two formats


def _conversation(f: Fields, name: str) -> tuple[list[str], list[str]] | str:
    """(user turns, assistant answers) of an alternating conversation, or a drop reason."""
    value = _json_text(f, name)
    if value is None:
        raise f.error(name, "missing field")
    if isinstance(value, list):
        for m in value:
            if isinstance(m, dict) and "content" in m and m["content"] is None:
                return "null response" if m.get("role") == "assistant" else "null prompt"
    messages = canonical_messages(value, where=name, path=f.path, line=f.line)
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
    if winner not in _WINNERS:
        raise f.error("winner", f"unknown value {winner!r} (expected one of {', '.join(_WINNERS)})")
    sides = {}
    for side in SIDES:
        got = _conversation(f, f"conversation_{side}")
        if isinstance(got, str):
            return got
        sides[side] = got
    if sides["a"][0] != sides["b"][0]:
        raise f.error("conversation_b", "its user turns differ from conversation_a's (a battle shares them)")
    _scalar(f, "turn", int)  # checked, not kept: the conversations give the turns
    f.str("judge", required=False, allow_int=True)
    language = f.str("language", required=False, allow_empty=True)
    return ArenaBattle(
        battle_id,
        sides["a"][0],
        {s: sides[s][1] for s in SIDES},
        models,
        _WINNERS[winner],
        voted_at=_voted_at(f, "tstamp"),
        language=language or None,
        flagged=_flagged(f),
        anonymous=_scalar(f, "anony", bool),
    )


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
    flags = {name: _scalar(f, f"winner_{name}", int) for name in ("model_a", "model_b", "tie")}
    for name, v in flags.items():
        if v not in (0, 1):
            raise f.error(f"winner_{name}", "missing field" if v is None else f"expected 0 or 1, got {v}")
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
        battle_id, turns["prompt"], {s: turns[f"response_{s}"] for s in SIDES}, models, _WINNERS[winner]
    )


PARSERS = {"arena": parse_arena, "arena55k": parse_arena55k}


def parse_row(fmt: str, rec: dict, path, line: int) -> ArenaBattle | str:
    if fmt == "fastchat-log":
        from pairstore.ingest.fastchat import parse_fastchat_log  # it builds on ArenaBattle from here

        return parse_fastchat_log(Fields(rec, path, line))
    return PARSERS[fmt](Fields(rec, path, line))


# ---------------------------------------------------------------------------- mapping


def own_side(b: ArenaBattle, own_models: set[str]) -> str | None:
    """'a' or 'b' where an own model plays, None where none does; 'both' when own models play each other."""
    sides = [s for s in SIDES if b.models[s] in own_models]
    return "both" if len(sides) == 2 else (sides[0] if sides else None)


def battle_fields(b: ArenaBattle, side: str) -> dict:
    """The `battles` columns of a battle the own model played on `side`, the vote from that side."""
    other = "b" if side == "a" else "a"
    vote = _VOTES.get(b.winner) or ("win" if b.winner == side else "loss")
    return {
        "battle_id": b.battle_id,
        "prompt": [{"role": "user", "content": u} for u in b.users],
        "own_answers": b.answers[side],
        "opponent_answers": b.answers[other],
        "n_turns": len(b.users),
        "vote": vote,
        "category": None,
        "own_model": b.models[side],
        "opponent_model": b.models[other],
        "voted_at": b.voted_at,
        "language": b.language,
        "flagged": b.flagged,
        "anonymous": b.anonymous,
    }


def other_pair(b: ArenaBattle) -> Pair | str:
    """A battle between two other models as an `arena` pair: the winner's answer chosen (a multi-turn battle:
    the winner's earlier answers in the prompt, as for battle pairs); a tie or both-bad gives none."""
    if b.winner in _VOTES:
        return b.winner
    loser = "b" if b.winner == "a" else "a"
    chosen, rejected = b.answers[b.winner], b.answers[loser]
    rule = f"winner=model_{b.winner} → model_{b.winner}'s answer chosen (no own model in the battle)"
    return Pair(
        prompt=battle_pair_prompt(b.users, chosen),
        chosen=chosen[-1],
        rejected=rejected[-1],
        source=SOURCES[0],
        origins=[Origin("arena", b.battle_id, rule)],
    )


# The columns that tell each public form apart: a record holding all of one set is that form.
SIGNATURES = {
    "arena55k": {"model_a", "model_b", "response_a", "response_b", "winner_model_a"},
    "arena": {"model_a", "model_b", "conversation_a", "conversation_b", "winner"},
}


def format_hint(record: dict) -> str | None:
    """'; the columns ... look like --format X' when a record given as native battles has the columns of
    a public Arena form (a wrong --format guess), else None."""
    keys = set(record)
    for fmt, needed in SIGNATURES.items():
        if needed <= keys:
            return (
                f"; its columns ({', '.join(sorted(needed))}) are those of --format {fmt}: "
                f"pairstore ingest battles FILE --format {fmt} --own-model NAME"
            )
    return None


def check_options(fmt: str, own_models, others: str) -> set[str]:
    """The own model names, after checking the options of an Arena ingest."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r} (expected native, {', '.join(FORMATS)})", field="format")
    if others not in OTHERS:
        raise BadInput(f"unknown value {others!r} (expected one of {', '.join(OTHERS)})", field="others")
    own = {m.strip() for m in own_models or () if m and m.strip()}
    if not own:
        raise BadInput(
            f"--format {fmt} needs --own-model NAME (the model whose side the vote is read from; "
            "give it once per name)",
            field="own-model",
        )
    return own
