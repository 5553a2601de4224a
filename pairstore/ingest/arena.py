"""What the Chatbot Arena's public forms share: a battle as the Arena shows it, and its mapping to the
store, read from the side of the own model.

The forms themselves are formats (pairstore.ingest.formats: `arena`, `arena55k`, `fastchat-log`), each
one module that reads a record into an ArenaBattle; pairstore.ingest.battles writes what this module
maps them to. The vote of a battle the own model played is read from its side; `winner` of a battle
between two other models picks the chosen answer of an `arena` pair (ties and both-bad give none). The
Arena shows model_a on the left: the own model's side is the side it was shown on (`own_position`), and
the voter (`judge`, where a form names one) is the battle's annotator.

Answers the platform could not give are counted, not refused: a null turn ('null response', 'null
prompt') and, in the 55k file, text cut inside a surrogate pair ('invalid unicode'). A row that breaks the
published schema (a missing or mistyped field, an unknown winner, conversations that do not align) raises
BadInput naming file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NotRequired, TypedDict, overload

from pairstore.errors import BadInput
from pairstore.ingest.records import Fields
from pairstore.tables.pairs import Origin, Pair, battle_pair_prompt, declare_sources

# --others pairs: battles between two other models, the winner's answer chosen.
SOURCES = declare_sources(("arena",), by=__name__)
OTHERS = ("skip", "pairs")
SIDES = ("a", "b")
WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "both_bad"}
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
    annotator: str | None = None  # who voted, where the form names the voter
    origin: str | None = None  # the form it came in, where the row records it


# ---------------------------------------------------------------------------- typed values, CSV text too


def json_text(f: Fields, name: str) -> object:
    """The field's value; in a CSV (or any text column) a JSON-encoded value is decoded."""
    v = f.rec.get(name)
    if isinstance(v, str):
        try:
            return json.loads(v)
        except (json.JSONDecodeError, RecursionError):
            raise f.error(name, "expected JSON text (a list or object)") from None
    return v


@overload
def scalar(f: Fields, name: str, kind: type[bool]) -> bool | None: ...
@overload
def scalar(f: Fields, name: str, kind: type[int]) -> int | None: ...
@overload
def scalar(f: Fields, name: str, kind: type[float]) -> float | None: ...
def scalar(f: Fields, name: str, kind: type[bool] | type[int] | type[float]) -> bool | int | float | None:
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


def epoch_time(f: Fields, name: str) -> datetime | None:
    seconds = scalar(f, name, float)
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        raise f.error(name, f"{seconds!r} is not a time in epoch seconds") from None


def moderation_flag(f: Fields) -> bool | None:
    """openai_moderation.flagged or any toxic_chat_tag model's flag; None when neither is given."""
    flags: list[object] = []
    moderation = json_text(f, "openai_moderation")
    if moderation is not None:
        if not isinstance(moderation, dict):
            raise f.error("openai_moderation", "expected an object")
        flags.append(moderation.get("flagged"))
    toxic = json_text(f, "toxic_chat_tag")
    if toxic is not None:
        if not isinstance(toxic, dict):
            raise f.error("toxic_chat_tag", "expected an object")
        flags += [tag.get("flagged") for tag in toxic.values() if isinstance(tag, dict)]
    given = [flag for flag in flags if flag is not None]
    return any(bool(flag) for flag in given) if given else None


# ---------------------------------------------------------------------------- mapping


def own_side(b: ArenaBattle, own_models: set[str]) -> str | None:
    """'a' or 'b' where an own model plays, None where none does; 'both' when own models play each other."""
    sides = [s for s in SIDES if b.models[s] in own_models]
    return "both" if len(sides) == 2 else (sides[0] if sides else None)


class BattleRow(TypedDict):
    """The `battles` columns of an Arena battle, read from the own model's side (battle_fields)."""

    battle_id: str
    prompt: list[dict[str, str]]
    own_answers: list[str]
    opponent_answers: list[str]
    n_turns: int
    vote: str
    category: str | None
    own_model: str
    opponent_model: str
    voted_at: datetime | None
    language: str | None
    flagged: bool | None
    anonymous: bool | None
    own_position: str
    annotator: NotRequired[str]
    origin: NotRequired[str]


def battle_fields(b: ArenaBattle, side: str) -> BattleRow:
    """The `battles` columns of a battle the own model played on `side`, the vote from that side. The
    Arena shows model_a on the left: the side is where the own model was shown."""
    other = "b" if side == "a" else "a"
    vote = _VOTES.get(b.winner) or ("win" if b.winner == side else "loss")
    row: BattleRow = {
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
        "own_position": side,
    }
    # given only where known, so a row's record hash holds what the form says
    if b.annotator is not None:
        row["annotator"] = b.annotator
    if b.origin is not None:
        row["origin"] = b.origin
    return row


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


def check_options(fmt: str, own_models: Iterable[str] | None, others: str) -> set[str]:
    """The own model names, after checking the options of an Arena ingest."""
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
