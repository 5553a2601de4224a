"""Read whole or refused, as a property of the ingests that feed the gate: a record of any shape (extra
columns, nested lists and objects, message lists of any length and role order, tool calls) is refused, or
every string in it is found in the texts stored from it (read back from the store), unless it sits in a
field its format declares as not text (an id, a label, a score, ...) or is a message list's own structure
(a role, a part's type, a tool call's id). Texts are distinct tokens, so "found" means found. Each file is
written in a container drawn too: JSONL, a JSON array, either compressed (gzip, zstd)."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairstore.errors import BadInput
from pairstore.ingest.battles import ingest_battles
from pairstore.ingest.declare import TEXT
from pairstore.ingest.formats import get_format
from pairstore.ingest.formats.pairs_hh_rlhf import dialogue
from pairstore.ingest.generations import ingest_generations
from pairstore.ingest.pair_files import shape_of, shapes
from pairstore.ingest.pairs import ingest_pairs
from pairstore.ingest.problems import ingest_problems
from pairstore.keys import content_id, sha256_file
from pairstore.store.store import open_store
from tests.ingest.containers import CONTAINERS, write_records

# One worker runs the module in order: the last test reads what the others counted.
pytestmark = pytest.mark.xdist_group("read_whole")

TOKEN = st.integers(0, 10**9).map(lambda n: f"tok{n:09d}")
PHRASE = st.lists(TOKEN, min_size=1, max_size=3).map(" ".join)
ROLES = ["system", "user", "assistant", "user", "assistant", "tool", "human", "gpt", "observation", "robot"]
# Keys a message's own structure uses: not text (pairstore.ingest.messages' docstring lists them).
STRUCTURE = {"role", "from", "type", "id", "tool_call_id", "name", "weight", "index"}


@st.composite
def tool_call(draw) -> dict:
    arguments = draw(
        st.one_of(PHRASE.map(lambda t: json.dumps({"q": t})), st.fixed_dictionaries({"q": PHRASE}))
    )
    return {"id": draw(TOKEN), "type": "function", "function": {"name": draw(TOKEN), "arguments": arguments}}


@st.composite
def message(draw, roles=ROLES) -> dict:
    role = draw(st.sampled_from(roles))
    sharegpt = draw(st.integers(0, 4)) == 0
    content: object = draw(PHRASE)
    shape = draw(st.integers(0, 9))
    if shape == 0:
        content = [{"type": "text", "text": draw(PHRASE)}, draw(PHRASE)]
    m: dict = {"from": role, "value": content} if sharegpt else {"role": role, "content": content}
    if shape == 1 and role == "assistant":
        m["tool_calls"] = draw(st.lists(tool_call(), min_size=1, max_size=2))
        if draw(st.booleans()):
            m["content"] = None
    if shape == 2:
        m[draw(st.sampled_from(["name", "metadata", "weight"]))] = draw(st.one_of(PHRASE, st.integers(0, 1)))
    if shape == 3:
        m["content"] = {"nested": draw(PHRASE)}
    return m


def conversation(min_size=1, max_size=5, roles=ROLES):
    return st.lists(message(roles), min_size=min_size, max_size=max_size)


def ending_in_answer(prefix):
    return conversation(0, 0).map(lambda _: prefix)


@st.composite
def pair_record(draw) -> dict:
    """A pair record in one of the common layouts, then changed at random."""
    layout = draw(st.integers(0, 9))
    prompt = draw(st.one_of(PHRASE, conversation(1, 3, ["system", "user", "assistant", "user"])))
    if layout == 0:  # TRL, explicit prompt, answers as strings or conversations
        rec = {"prompt": prompt, "chosen": draw(st.one_of(PHRASE, conversation(1, 3))),
               "rejected": draw(st.one_of(PHRASE, conversation(1, 3)))}  # fmt: skip
    elif layout == 1:  # TRL, implicit prompt: both conversations, the turns before the answer shared or not
        shared = draw(conversation(1, 4, ["user", "assistant", "system", "user"]))
        other = shared if draw(st.booleans()) else draw(conversation(1, 3, ["user", "assistant"]))
        rec = {"chosen": [*shared, {"role": "assistant", "content": draw(PHRASE)}],
               "rejected": [*other, {"role": "assistant", "content": draw(PHRASE)}]}  # fmt: skip
    elif layout == 2:  # UltraFeedback
        text = draw(PHRASE)
        chosen = [{"role": "user", "content": text}, {"role": "assistant", "content": draw(PHRASE)}]
        rec = {"prompt": text, "prompt_id": draw(TOKEN), "chosen": chosen,
               "rejected": [{"role": "user", "content": text},
                            {"role": "assistant", "content": draw(PHRASE)}],
               "messages": chosen if draw(st.booleans()) else draw(conversation(2, 2)),
               "score_chosen": 8.0, "score_rejected": 3.0}  # fmt: skip
    elif layout == 3:  # ShareGPT preference
        rec = {"conversations": draw(conversation(1, 4)), "chosen": {"from": "gpt", "value": draw(PHRASE)},
               "rejected": {"from": "gpt", "value": draw(PHRASE)}}  # fmt: skip
    elif layout == 4:  # Alpaca / LLaMA-Factory
        rec = {"instruction": draw(PHRASE), "input": draw(PHRASE), "output": draw(PHRASE)}
        if draw(st.booleans()):
            rec["history"] = [[draw(PHRASE), draw(PHRASE)]]
    elif layout == 5:  # HH-RLHF
        head = f"\n\nHuman: {draw(PHRASE)}\n\nAssistant: {draw(PHRASE)}\n\nHuman: {draw(PHRASE)}"
        rec = {
            "chosen": f"{head}\n\nAssistant: {draw(PHRASE)}",
            "rejected": f"{head}\n\nAssistant: {draw(PHRASE)}",
        }
    elif layout == 6:  # OpenAI chat fine-tuning, tool calls and tool results
        rec = {"messages": draw(conversation(2, 6))}
        if draw(st.booleans()):
            rec["tools"] = [
                {"type": "function", "function": {"name": draw(TOKEN), "description": draw(PHRASE)}}
            ]
    elif layout in (8, 9):  # tool use: a call with its arguments, the tool's result, the answer
        call = {"role": "assistant", "content": draw(st.one_of(st.none(), PHRASE)),
                "tool_calls": draw(st.lists(tool_call(), min_size=1, max_size=2))}  # fmt: skip
        result = {"role": draw(st.sampled_from(["tool", "function"])), "tool_call_id": draw(TOKEN),
                  "content": draw(PHRASE)}  # fmt: skip
        turns = [{"role": "user", "content": draw(PHRASE)}, call, result]
        answer = {"role": "assistant", "content": draw(PHRASE)}
        if layout == 8:
            rec = {"messages": [*turns, answer]}
        else:
            rec = {
                "prompt": turns,
                "chosen": [answer],
                "rejected": [{"role": "assistant", "content": draw(PHRASE)}],
            }
    else:  # OpenAI preference fine-tuning
        rec = {"input": {"messages": draw(conversation(1, 3))},
               "preferred_output": [{"role": "assistant", "content": draw(PHRASE)}],
               "non_preferred_output": [{"role": "assistant", "content": draw(PHRASE)}]}  # fmt: skip
    return mutate(draw, rec)


def mutate(draw, rec: dict) -> dict:
    """Extra columns now and then: another answer, a system text, ids and scores, nested metadata."""
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(["system", "system", "completion", "completion", "response", "output",
                                    "meta",
                                    "notes", "id", "source", "score", "extra", "system_prompt", "question",
                                    "input"]))  # fmt: skip
        value = draw(
            st.one_of(
                PHRASE,
                PHRASE,
                PHRASE,
                st.integers(0, 9),
                st.floats(0, 1),
                st.lists(st.one_of(PHRASE, st.integers(0, 9)), max_size=2),
                st.fixed_dictionaries(
                    {"a": st.one_of(PHRASE, st.integers(0, 9)), "b": st.lists(PHRASE, max_size=1)}
                ),
            )
        )
        if (
            key in ("completion", "response", "output")
            and draw(st.booleans())
            and isinstance(rec.get("chosen"), str)
        ):
            value = rec["chosen"]  # the same answer twice: nothing lost
        rec[key] = value
    return rec


def texts_of(value, at: str = "") -> list[tuple[str, str]]:
    """(path, text) of every string in `value` that is text: a message's own structure left out."""
    out: list[tuple[str, str]] = []
    if isinstance(value, str):
        out.append((at, value))
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in STRUCTURE and not (k == "name" and at.endswith("function")):
                continue
            out += texts_of(v, f"{at}.{k}" if at else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += texts_of(v, f"{at}[{i}]")
    return out


def expected_texts(record: dict, fmt) -> list[str]:
    """The strings of a record the format must store: those under its text fields (every other key is one
    it does not declare, or a non-text one)."""
    text_tops = {f.top for f in fmt.fields if f.what == TEXT}
    declared = fmt.top_keys()
    out = []
    for key, value in record.items():
        if key in declared and key not in text_tops:
            continue  # an id, a label, a score
        for _, text in texts_of(value, key):
            if fmt.name == "hh-rlhf" and key in ("chosen", "rejected"):
                out += [m["content"] for m in dialogue(text) or []]
            else:
                out.append(text)
    return out


def stored(store, sql: str, params) -> str:
    """Every text of the stored rows, joined."""
    parts = []
    for row in store.con.execute(sql, params).fetchall():
        for v in row:
            if isinstance(v, str):
                parts.append(v)
            elif isinstance(v, list):
                parts += [m["content"] if isinstance(m, dict) else m for m in v if m is not None]
    return "\x00".join(parts)


_STORES: dict[str, object] = {}
_FILES = iter(range(10**9))


def open_once(name: str, new_store_file, tmp_path_factory):
    """One store per test (every example ingests into it: a new file each, read back by its name)."""
    if name not in _STORES:
        db = tmp_path_factory.mktemp(name) / "s.duckdb"
        shutil.copyfile(new_store_file, db)
        _STORES[name] = open_store(db)
    return _STORES[name]


def ingest_and_check(
    name, records, run, fmt_of, sql, which, new_store_file, tmp_path_factory, container="jsonl"
) -> None:
    """Ingest `records` as a new file (in `container`: JSONL, a JSON array, compressed): refused, or every
    text of every record found in the rows stored from that file (`sql` selects them by
    `which(path, records)`: this file's rows, whether new or already stored by an earlier example)."""
    store = open_once(name, new_store_file, tmp_path_factory)
    n = next(_FILES)
    path = tmp_path_factory.getbasetemp() / f"{name}-{n}.{container}"
    write_records(path, records)
    TRIED[name] += 1
    try:
        run(store, path, n)
    except BadInput:
        return
    haystack = stored(store, sql, which(path, records, n))
    for rec in records:
        for text in expected_texts(rec, fmt_of(rec)):
            assert text.strip() in haystack, (text, rec)
    STORED[name] += 1


STORED = {"pairs": 0, "battles": 0, "generations": 0, "problems": 0}
TRIED = dict.fromkeys(STORED, 0)


@settings(max_examples=150)
@given(records=st.lists(pair_record(), min_size=1, max_size=3), container=st.sampled_from(CONTAINERS))
def test_a_pair_file_is_stored_whole_or_refused(records, container, new_store_file, tmp_path_factory):
    trl = get_format("pairs", "trl")
    ingest_and_check(
        "pairs",
        records,
        lambda s, p, n: ingest_pairs(s, p, source="x"),
        lambda r: shape_of(r, shapes()) or trl,
        "SELECT prompt, chosen, rejected FROM pairs WHERE pair_id IN "
        "(SELECT pair_id FROM pair_origins WHERE origin_kind = 'import' AND origin_id LIKE ?)",
        lambda path, records, n: [sha256_file(path)[:16] + ":%"],
        new_store_file,
        tmp_path_factory,
        container,
    )


@st.composite
def valid_pair_with_one_more_text(draw) -> dict:
    """A valid pair in a common layout, and one more text field: a second answer, a system text, a prompt
    under another name, a copy of a conversation, metadata."""
    question, answer, other = draw(PHRASE), draw(PHRASE), draw(PHRASE)
    layout = draw(st.integers(0, 3))
    if layout == 0:
        rec: dict = {"prompt": question, "chosen": answer, "rejected": other}
    elif layout == 1:
        user = [{"role": "user", "content": question}]
        rec = {"prompt": user, "chosen": [{"role": "assistant", "content": answer}],
               "rejected": [{"role": "assistant", "content": other}]}  # fmt: skip
    elif layout == 2:
        turns = [{"role": "system", "content": draw(PHRASE)}, {"role": "user", "content": question}]
        rec = {"chosen": [*turns, {"role": "assistant", "content": answer}],
               "rejected": [*turns, {"role": "assistant", "content": other}]}  # fmt: skip
    else:
        rec = {"prompt": [{"role": "system", "content": draw(PHRASE)}, {"role": "user", "content": question}],
               "chosen": answer, "rejected": other}  # fmt: skip
    key = draw(st.sampled_from(["system", "system_prompt", "completion", "response", "output", "question",
                                "messages", "input", "context", "meta", "label"]))  # fmt: skip
    value = draw(
        st.one_of(PHRASE, st.just(answer), st.just(question), conversation(1, 2, ["user", "assistant"]))
    )
    rec[key] = value
    return rec


@settings(max_examples=120)
@given(record=valid_pair_with_one_more_text(), container=st.sampled_from(CONTAINERS))
def test_one_more_text_beside_a_pair_is_read_or_refused(record, container, new_store_file, tmp_path_factory):
    trl = get_format("pairs", "trl")
    ingest_and_check(
        "pairs",
        [record],
        lambda s, p, n: ingest_pairs(s, p, source="x"),
        lambda r: shape_of(r, shapes()) or trl,
        "SELECT prompt, chosen, rejected FROM pairs WHERE pair_id IN "
        "(SELECT pair_id FROM pair_origins WHERE origin_kind = 'import' AND origin_id LIKE ?)",
        lambda path, records, n: [sha256_file(path)[:16] + ":%"],
        new_store_file,
        tmp_path_factory,
        container,
    )


@st.composite
def battle_record(draw) -> dict:
    if draw(st.booleans()):
        rec = {"battle_id": draw(TOKEN), "vote": "win", "prompt": draw(st.one_of(PHRASE, conversation(1, 2))),
               "own_answer": draw(PHRASE), "opponent_answer": draw(PHRASE)}  # fmt: skip
    else:
        rec = {"battle_id": draw(TOKEN), "vote": "tie",
               "turns": [{"user": draw(PHRASE), "own": draw(PHRASE), "opponent": draw(PHRASE)}
                         for _ in range(draw(st.integers(1, 3)))]}  # fmt: skip
    return mutate(draw, rec)


@settings(max_examples=60)
@given(
    records=st.lists(battle_record(), min_size=1, max_size=3, unique_by=lambda r: r["battle_id"]),
    container=st.sampled_from(CONTAINERS),
)
def test_a_battle_file_is_stored_whole_or_refused(records, container, new_store_file, tmp_path_factory):
    native = get_format("battles", "native")
    ingest_and_check(
        "battles",
        records,
        lambda s, p, n: ingest_battles(s, p),
        lambda r: native,
        "SELECT prompt, own_answers, opponent_answers FROM battles WHERE list_contains(?, battle_id)",
        lambda path, records, n: [[r["battle_id"] for r in records]],
        new_store_file,
        tmp_path_factory,
        container,
    )


@st.composite
def generation_record(draw) -> dict:
    rec = {"output": draw(PHRASE), "prompt": draw(st.one_of(PHRASE, conversation(1, 3)))}
    if draw(st.booleans()):
        rec["item_kind"] = "prompt"
    return mutate(draw, rec)


@settings(max_examples=60)
@given(records=st.lists(generation_record(), min_size=1, max_size=3), container=st.sampled_from(CONTAINERS))
def test_a_generations_file_is_stored_whole_or_refused(records, container, new_store_file, tmp_path_factory):
    native = get_format("generations", "native")
    ingest_and_check(
        "generations",
        records,
        lambda s, p, n: ingest_generations(s, p, model=f"m{n}"),
        lambda r: native,
        "SELECT prompt, output FROM generations WHERE model = ?",
        lambda path, records, n: [f"m{n}"],
        new_store_file,
        tmp_path_factory,
        container,
    )


@st.composite
def problem_record(draw) -> dict:
    rec = {"question": draw(PHRASE), "answer": f"{draw(PHRASE)}\n#### 4"}
    return mutate(draw, rec)


@settings(max_examples=40)
@given(records=st.lists(problem_record(), min_size=1, max_size=3), container=st.sampled_from(CONTAINERS))
def test_a_problems_file_is_stored_whole_or_refused(records, container, new_store_file, tmp_path_factory):
    gsm8k = get_format("problems", "gsm8k")
    ingest_and_check(
        "problems",
        records,
        lambda s, p, n: ingest_problems(s, "gsm8k", path=p),
        lambda r: gsm8k,
        "SELECT question, solution FROM problems WHERE list_contains(?, problem_id)",
        lambda path, records, n: [["gsm8k:" + content_id(r["question"]) for r in records]],
        new_store_file,
        tmp_path_factory,
        container,
    )


def test_each_property_stored_files_not_only_refused_them():
    """Run last in this module (pytest keeps a module's order): each property that ran here saw files
    stored, not only refused (a property of refusals alone would hold of a reader that refuses all)."""
    assert all(STORED[name] > 0 for name, tried in TRIED.items() if tried), (STORED, TRIED)
