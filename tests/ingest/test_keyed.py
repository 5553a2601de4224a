"""The keys and hashes computed a batch at a time are the one-value definitions', on generated rows:
match keys (pairstore.keys.match_key), record JSON (json.dumps), pair ids (pair_id_of) and generation ids
(generation_id)."""

from __future__ import annotations

import json
from datetime import datetime

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pairstore.ingest.generations import _ids
from pairstore.ingest.keyed import prompt_match_keys, record_jsons
from pairstore.ingest.kinds import MSG_TYPE
from pairstore.ingest.pairs import pair_ids
from pairstore.keys import match_key
from pairstore.tables.generations import generation_id
from pairstore.tables.pairs import pair_id_of

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["Cafe\u0301", "café", "Hello,  World!", "ＡＢＣ", "x\u200by", '"quoted" \\ back', "😀", "\x1f"]
)
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]), "content": TEXT})
PROMPTS = st.lists(MESSAGE, min_size=1, max_size=4)


@settings(max_examples=80)
@given(prompts=st.lists(st.one_of(st.none(), PROMPTS), min_size=1, max_size=8))
def test_prompt_match_keys_are_match_key(prompts):
    got = prompt_match_keys(pa.array(prompts, MSG_TYPE))
    assert got == [None if p is None else match_key(p) for p in prompts]


ROW_TYPES = {
    "battle_id": pa.string(),
    "n_turns": pa.int32(),
    "flagged": pa.bool_(),
    "voted_at": pa.timestamp("us"),
    "own_answers": pa.list_(pa.string()),
    "score": pa.float64(),
    "prompt": MSG_TYPE,
    "nothing": pa.null(),
}
# A message whose content is null: the struct's child is null where the struct is not.
MESSAGE_OR_EMPTY = MESSAGE | st.fixed_dictionaries({"role": st.just("user"), "content": st.none()})
ROWS = st.fixed_dictionaries(
    {
        "battle_id": st.one_of(st.none(), TEXT),
        "n_turns": st.one_of(st.none(), st.integers(-5, 2**31 - 1)),
        "flagged": st.one_of(st.none(), st.booleans()),
        "voted_at": st.one_of(
            st.none(), st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2199, 1, 1))
        ),
        "own_answers": st.one_of(st.none(), st.lists(st.one_of(st.none(), TEXT), max_size=3)),
        "score": st.one_of(st.none(), st.floats()),
        "nothing": st.none(),
        "prompt": st.one_of(st.none(), st.lists(MESSAGE_OR_EMPTY, min_size=1, max_size=4)),
    }
)


@settings(max_examples=80)
@given(rows=st.lists(ROWS, min_size=1, max_size=6), optional=st.sets(st.sampled_from(sorted(ROW_TYPES))))
def test_record_jsons_are_json_dumps(rows, optional):
    table = pa.table({k: pa.array([r[k] for r in rows], t) for k, t in ROW_TYPES.items()})
    always = [k for k in ROW_TYPES if k not in optional]
    got = record_jsons(table, always=always, optional=sorted(optional))
    for row, text in zip(rows, got):
        kept = {k: v for k, v in row.items() if k in always or v is not None}
        assert text == json.dumps(kept, sort_keys=True, default=str, ensure_ascii=False)


def test_record_jsons_of_rows_with_nothing_to_write_are_empty_objects():
    # every column optional and null: no template field at all, yet each row is still one JSON object
    table = pa.table({k: pa.array([None, None], t) for k, t in ROW_TYPES.items()})
    assert record_jsons(table, always=[], optional=sorted(ROW_TYPES)) == ["{}", "{}"]


@settings(max_examples=80)
@given(rows=st.lists(st.tuples(PROMPTS, TEXT, st.one_of(st.none(), TEXT)), min_size=1, max_size=6))
def test_pair_ids_are_pair_id_of(rows):
    prompts, chosen, rejected = (list(x) for x in zip(*rows))
    assert pair_ids(prompts, chosen, rejected) == [pair_id_of(p, c, r) for p, c, r in rows]


@settings(max_examples=80)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["problem", "task", "eval_item", "prompt"]),
            TEXT,
            st.integers(0, 2**31 - 1),
            st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
            TEXT,
        ),
        min_size=1,
        max_size=6,
    ),
    model=TEXT,
)
def test_generation_ids_are_generation_id(rows, model):
    kinds, refs, samples, temps, outputs = (list(x) for x in zip(*rows))
    got = _ids(model, kinds, refs, samples, temps, outputs)
    assert got == [generation_id(model, k, r, s, t, o) for k, r, s, t, o in rows]
