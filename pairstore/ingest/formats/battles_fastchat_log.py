"""`fastchat-log`: FastChat's raw vote logs (`<date>-conv.json`, one JSON object a line), read as the
Arena's web server writes them.

    pairstore ingest battles logs/2024-05-01-conv.json --format fastchat-log --own-model my-model
    pairstore ingest battles logs/ --format fastchat-log --own-model my-model     # every *-conv.json, by name

A vote line is {"tstamp", "type", "models", "states", "ip"}: `type` one of leftvote, rightvote, tievote,
bothbad_vote (other types, the chat and regenerate lines of the same log, are counted as 'not a vote');
`models` the two names shown (empty or "Model A"/"Model B" in an anonymous battle, where the hidden
names are `states[i].model_name`); `states` the two conversations, each {"conv_id", "model_name",
"messages": [[role, text], ...], "offset", ...}, the messages from `offset` on alternating user and
assistant. The left state is model A.

Dropped, by the reason FastChat's own cleaning (fastchat/serve/monitor/clean_battle_data.py) drops them:

- 'missing model': a null model name;
- 'invalid': one shown name empty and the other not, a hidden name that disagrees with the shown one, a
  conversation with no message after its offset;
- 'none message': a message without text (a turn still generating when the vote came);
- 'leaked identity': a message naming a model or its maker (the same word list as FastChat's cleaning:
  a model naming itself lets the voter know who is who, so the vote is not blind);
- 'error': a platform error text in an answer (network error, moderation, API error);
- 'unfinished': the streaming cursor left in an answer.

Also dropped here, where FastChat's cleaning would keep a row that cannot be a battle: 'user turns
differ' (the two sides did not get the same prompts) and 'not alternating'. Not done here: FastChat's
renaming of old model names (gpt-4 -> gpt-4-0314 by date, bard -> palm-2, ...): names are kept as logged;
the IP address is not stored (the annotator is unknown). The left state is the own model's side
when it is model A: the side is its position.

A state's `system_message` is its chat template's system prompt (the template's, the same for every
battle of that model, which the voter never wrote): listed as metadata, not read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pairstore.errors import BadInput
from pairstore.ingest.arena import ArenaBattle
from pairstore.ingest.declare import ID, LABEL, META, MODEL, SETTING, TEXT, TIME, Field, Format, declare
from pairstore.ingest.records import Fields

if TYPE_CHECKING:
    from pairstore.files import StrPath

VOTE_TYPES = {"leftvote": "a", "rightvote": "b", "tievote": "tie", "bothbad_vote": "both_bad"}

# Words whose presence anywhere in a battle's messages means a model may have said who it is.
IDENTITY_WORDS = tuple(
    w.lower()
    for w in (
        "vicuna", "lmsys", "koala", "uc berkeley", "open assistant", "laion", "chatglm", "chatgpt", "gpt-4",
        "openai", "anthropic", "claude", "bard", "palm", "lamda", "google", "gemini", "llama", "qianwan",
        "qwen", "alibaba", "mistral", "zhipu", "KEG lab", "01.AI", "AI2", "Tülu", "Tulu", "deepseek",
        "hermes", "cohere", "DBRX", "databricks",
    )
)  # fmt: skip
ERROR_WORDS = tuple(
    w.lower()
    for w in (
        "NETWORK ERROR DUE TO HIGH TRAFFIC. PLEASE REGENERATE OR REFRESH THIS PAGE.",
        "$MODERATION$ YOUR INPUT VIOLATES OUR CONTENT MODERATION GUIDELINES.",
        "API REQUEST ERROR. Please increase the number of max tokens.",
        "**API REQUEST ERROR** Reason: The response was blocked.",
        "**API REQUEST ERROR**",
    )
)
UNFINISHED_WORDS = ("▌", '<span class="cursor">')
_ANONYMOUS_NAMES = ("", "Model A", "Model B")


def log_files(path: StrPath) -> list[Path]:
    """One log file, or every `*-conv.json` in a folder, in name (that is, date) order."""
    root = Path(path)
    if not root.exists():
        raise BadInput("no such file or folder", path=str(root))
    if root.is_file():
        return [root]
    files = sorted(p for p in root.glob("*-conv.json") if p.is_file())
    if not files:
        raise BadInput("no *-conv.json files in this folder (FastChat's vote logs)", path=str(root))
    return files


def _shown_name(name: str) -> str:
    """FastChat shows a named model as '<h3>Model A: name</h3>\\n' in some versions."""
    if name.startswith("<h3>") and ": " in name:
        return name[name.find(": ") + 2 : -len("</h3>\n")]
    return name


def _conversation(f: Fields, side: int) -> tuple[list[str], list[str]] | str:
    state = f.rec["states"][side]
    where = f"states[{side}]"
    if not isinstance(state, dict):
        raise f.error(where, "expected a conversation state object")
    messages, offset = state.get("messages"), state.get("offset", 0)
    if not isinstance(messages, list):
        raise f.error(f"{where}.messages", "missing field" if messages is None else "expected a list")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise f.error(f"{where}.offset", "expected a non-negative integer")
    turns = messages[offset:]
    if not turns:
        return "invalid"
    texts = []
    for i, m in enumerate(turns):
        if not isinstance(m, list) or len(m) != 2:
            raise f.error(f"{where}.messages[{offset + i}]", "expected [role, text]")
        text = m[1]
        if text is None or text == "":
            return "none message"
        if isinstance(text, list) and text and isinstance(text[0], str):
            text = text[0]  # a vision turn: (text, image hashes); the text is what was asked
        if not isinstance(text, str):
            raise f.error(f"{where}.messages[{offset + i}]", f"expected text, got {type(text).__name__}")
        texts.append(text)
    if len(texts) % 2:
        return "not alternating"
    return texts[0::2], texts[1::2]


def _drop_reason(texts: list[str]) -> str | None:
    joined = "".join(texts).lower()
    for reason, words in (
        ("leaked identity", IDENTITY_WORDS),
        ("error", ERROR_WORDS),
        ("unfinished", UNFINISHED_WORDS),
    ):
        if any(w in joined for w in words):
            return reason
    return None


def parse_fastchat_log(f: Fields) -> ArenaBattle | str:
    """One line of a FastChat conv log, or the reason it is not a kept vote."""
    kind = f.rec.get("type")
    if not isinstance(kind, str):
        raise f.error("type", "missing field" if kind is None else "expected a string")
    if kind not in VOTE_TYPES:
        return "not a vote"
    models, states = f.rec.get("models"), f.rec.get("states")
    if not isinstance(models, list) or len(models) != 2:
        raise f.error("models", "expected the two model names shown")
    if not isinstance(states, list) or len(states) != 2:
        raise f.error("states", "expected the two conversation states")
    if models[0] is None or models[1] is None:
        return "missing model"
    if not all(isinstance(m, str) for m in models):
        raise f.error("models", "expected strings")
    shown = [_shown_name(m) for m in models]
    hidden: list[Any] = [s.get("model_name") if isinstance(s, dict) else None for s in states]
    if hidden[0] is None:
        hidden = list(shown)
    if (shown[0] == "") != (shown[1] == ""):
        return "invalid"
    anonymous = shown[0] in _ANONYMOUS_NAMES
    names = hidden if anonymous else shown
    if not anonymous and (hidden[0] not in shown[0] or hidden[1] not in shown[1]):
        return "invalid"
    if not all(isinstance(n, str) and n for n in names):
        return "invalid"
    sides = []
    for side in (0, 1):
        got = _conversation(f, side)
        if isinstance(got, str):
            return got
        sides.append(got)
    reason = _drop_reason([t for users, answers in sides for t in users + answers])
    if reason:
        return reason
    if sides[0][0] != sides[1][0]:
        return "user turns differ"
    conv_id = states[0].get("conv_id")
    if not isinstance(conv_id, str) or not conv_id:
        raise f.error("states[0].conv_id", "missing field")
    tstamp = f.float("tstamp", required=True)
    assert tstamp is not None  # required=True
    return ArenaBattle(
        conv_id,
        sides[0][0],
        {"a": sides[0][1], "b": sides[1][1]},
        {"a": str(names[0]), "b": str(names[1])},
        VOTE_TYPES[kind],
        voted_at=datetime.fromtimestamp(tstamp, tz=UTC).replace(tzinfo=None),
        anonymous=anonymous,
        origin=FORMAT.name,
    )


FORMAT = declare(
    Format(
        name="fastchat-log",
        table="battles",
        summary="FastChat's raw vote logs (`<date>-conv.json`, one JSON object a line, or a folder of them), "
        "cleaned as FastChat's own cleaning does.",
        notes="Only vote lines (leftvote, rightvote, tievote, bothbad_vote) are read; the chat and "
        "regenerate lines of the same log are counted as 'not a vote'. The left state is model A.",
        fields=(
            Field(
                "type",
                LABEL,
                "the kind of line (a vote: leftvote, rightvote, tievote, bothbad_vote)",
                required=True,
            ),
            Field("tstamp", TIME, "when the vote was cast, epoch seconds (`voted_at`)", required=True),
            Field("models", MODEL, "the two names shown (empty or Model A/B when anonymous)", required=True),
            Field(
                "states[].messages",
                TEXT,
                "each side's conversation, [role, text] pairs",
                role="user turns, own and opponent answers",
                required=True,
            ),
            Field("states[].conv_id", ID, "the conversation's id (the left one is `battle_id`)"),
            Field("states[].model_name", MODEL, "the model behind the side"),
            Field("states[].offset", SETTING, "where the conversation starts in `messages`"),
            Field("states[].system_message", META, "the chat template's own system prompt (not the user's)"),
            Field("states[].roles", LABEL, "the template's role names"),
            Field("states[].template_name", LABEL, "the chat template's name"),
            Field("ip", META, "the voter's IP address (not stored)"),
        ),
        signature=("type", "models", "states"),
        parse=parse_fastchat_log,
        files=log_files,
        order=30,
    )
)
