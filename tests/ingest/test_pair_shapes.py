"""The pair layouts users export from, in the files they come in, read whole or refused: the five shapes
that used to lose a field without a word, and TRL, HH-RLHF, ShareGPT (its preference variant too),
LLaMA-Factory, UltraFeedback and OpenAI rows as JSONL, JSON arrays and compressed files."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairstore.errors import BadInput
from pairstore.ingest.pair_files import pair_batches, read_pair_file
from pairstore.ingest.pairs import ingest_pairs
from tests.ingest.containers import CONTAINERS, write_records
from tests.ingest.test_read_whole import pair_record


def stored(store) -> list[tuple]:
    return [
        (tuple((m["role"], m["content"]) for m in p), c, r)
        for p, c, r in store.con.execute(
            "SELECT prompt, chosen, rejected FROM pairs ORDER BY chosen"
        ).fetchall()
    ]


def refused(store, path, *, line, field, says) -> None:
    with pytest.raises(BadInput) as e:
        ingest_pairs(store, path, source="x")
    assert (e.value.line, e.value.field) == (line, field), str(e.value)
    assert says in str(e.value)
    assert store.scalar("SELECT count(*) FROM pairs") == 0


U, A = "user", "assistant"


# -- the five shapes ---------------------------------------------------------------------------------------


def test_a_conversation_longer_than_the_last_exchange_is_read_whole(store, tmp_path):
    turns = [{"role": U, "content": "first question"}, {"role": A, "content": "first answer"},
             {"role": U, "content": "second question"}]  # fmt: skip
    rec = {
        "chosen": [*turns, {"role": A, "content": "good"}],
        "rejected": [*turns, {"role": A, "content": "bad"}],
    }
    ingest_pairs(store, write_records(tmp_path / "p.jsonl", [rec]), source="x")
    assert stored(store) == [
        (((U, "first question"), (A, "first answer"), (U, "second question")), "good", "bad")
    ]
    other = {**rec, "rejected": [turns[0], {"role": A, "content": "another first answer"}, turns[2],
                                 {"role": A, "content": "bad"}]}  # fmt: skip
    store.con.execute("DELETE FROM pair_origins")
    store.con.execute("DELETE FROM pairs")
    refused(
        store,
        write_records(tmp_path / "q.jsonl", [rec, other]),
        line=2,
        field="rejected",
        says="differ from chosen's",
    )


def test_a_prompt_column_beside_message_lists_must_agree_with_them(store, tmp_path):
    full = "Summarize the following long article about rivers and their deltas."
    rec = {"prompt": full[:20], "chosen": [{"role": U, "content": full}, {"role": A, "content": "ok"}],
           "rejected": [{"role": U, "content": full}, {"role": A, "content": "no"}]}  # fmt: skip
    refused(
        store,
        write_records(tmp_path / "p.jsonl", [rec]),
        line=1,
        field="chosen",
        says="differ from the prompt field",
    )
    ingest_pairs(store, write_records(tmp_path / "q.jsonl", [{**rec, "prompt": full}]), source="x")
    assert stored(store)[0][0] == ((U, full),)


def test_tool_call_arguments_are_text_and_such_a_row_stays_a_pair(store, tmp_path):
    call = {
        "role": A,
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    legacy = {"role": A, "content": None, "function_call": {"name": "lookup", "arguments": '{"id": 7}'}}
    rec = {"prompt": "Weather in Oslo?", "chosen": [call], "rejected": [legacy]}
    ingest_pairs(store, write_records(tmp_path / "p.jsonl", [rec]), source="x")
    (prompt, chosen, rejected), = stored(store)  # fmt: skip
    assert '"arguments": {"city": "Oslo"}' in chosen and "get_weather" in chosen
    assert '"arguments": {"id": 7}' in rejected and rejected is not None
    assert store.scalar("SELECT kind FROM pairs") == "dpo"


def test_a_system_column_beside_a_prompt_with_its_own_system_message(store, tmp_path):
    prompt = [{"role": "system", "content": "Be brief."}, {"role": U, "content": "2+2?"}]
    rec = {"system": "Answer in French.", "prompt": prompt, "chosen": "4", "rejected": "5"}
    refused(
        store,
        write_records(tmp_path / "p.jsonl", [rec]),
        line=1,
        field="system",
        says="differs from the prompt's",
    )
    ingest_pairs(store, write_records(tmp_path / "q.jsonl", [{**rec, "system": "Be brief."}]), source="x")
    assert stored(store)[0][0] == (("system", "Be brief."), (U, "2+2?"))


@pytest.mark.parametrize("name", ["completion", "response", "output"])
def test_a_second_answer_beside_chosen(store, tmp_path, name):
    rec = {"prompt": "2+2?", "chosen": "4", "rejected": "5", name: "four, I think"}
    refused(store, write_records(tmp_path / "p.jsonl", [rec]), line=1, field=name, says="would be lost")
    ingest_pairs(store, write_records(tmp_path / "q.jsonl", [{**rec, name: "4"}]), source="x")
    assert stored(store) == [(((U, "2+2?"),), "4", "5")]


def test_text_in_a_field_no_shape_reads_is_refused_naming_it(store, tmp_path):
    rec = {"prompt": "2+2?", "chosen": "4", "rejected": "5", "meta": {"note": "held-out text hides here"}}
    refused(
        store,
        write_records(tmp_path / "p.jsonl", [rec]),
        line=1,
        field="meta.note",
        says="trl format does not read",
    )
    ingest_pairs(
        store, write_records(tmp_path / "q.jsonl", [{**rec, "meta": {"score": 0.5}}]), source="x"
    )  # numbers: fine


# -- every layout, in every file ---------------------------------------------------------------------------

LAYOUTS = {
    "trl": {"prompt": "Q1?", "chosen": "good", "rejected": "bad"},
    "trl conversational": {"prompt": [{"role": U, "content": "Q1?"}],
                           "chosen": [{"role": A, "content": "good"}],
                           "rejected": [{"role": A, "content": "bad"}]},
    "hh-rlhf": {"chosen": "\n\nHuman: Q1?\n\nAssistant: good",
                "rejected": "\n\nHuman: Q1?\n\nAssistant: bad"},
    "sharegpt preference": {"conversations": [{"from": "human", "value": "Q1?"}],
                            "chosen": {"from": "gpt", "value": "good"},
                            "rejected": {"from": "gpt", "value": "bad"}},
    "llama-factory alpaca": {"instruction": "Q1?", "input": "", "chosen": "good", "rejected": "bad"},
    "ultrafeedback": {"prompt": "Q1?", "prompt_id": "abc",
                      "chosen": [{"role": U, "content": "Q1?"}, {"role": A, "content": "good"}],
                      "rejected": [{"role": U, "content": "Q1?"}, {"role": A, "content": "bad"}],
                      "messages": [{"role": U, "content": "Q1?"}, {"role": A, "content": "good"}],
                      "score_chosen": 8.0, "score_rejected": 2.0},
    "openai preference": {"input": {"messages": [{"role": U, "content": "Q1?"}]},
                          "preferred_output": [{"role": A, "content": "good"}],
                          "non_preferred_output": [{"role": A, "content": "bad"}]},
    "trl implicit prompt": {"chosen": [{"role": U, "content": "Q1?"}, {"role": A, "content": "good"}],
                            "rejected": [{"role": U, "content": "Q1?"}, {"role": A, "content": "bad"}]},
    "llama-factory openai-style preference": {"messages": [{"role": U, "content": "Q1?"}],
                                              "chosen": {"role": A, "content": "good"},
                                              "rejected": {"role": A, "content": "bad"}},
    "argilla ultrafeedback": {"source": "evol", "prompt": "Q1?",
                              "chosen": [{"role": U, "content": "Q1?"}, {"role": A, "content": "good"}],
                              "chosen-rating": 5.0, "chosen-model": "m-1",
                              "rejected": [{"role": U, "content": "Q1?"}, {"role": A, "content": "bad"}],
                              "rejected-rating": 2.0, "rejected-model": "m-2"},
}  # fmt: skip
FILES = [f"p.{c}" for c in CONTAINERS]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", FILES)
def test_every_layout_in_every_file_gives_the_same_pair(store, tmp_path, layout, name):
    path = write_records(tmp_path / name, [LAYOUTS[layout]])
    ingest_pairs(store, path, source="x")
    assert stored(store) == [(((U, "Q1?"),), "good", "bad")]


# Layouts whose prompt is more than one user turn: (record, the prompt read, chosen, rejected).
WHOLE = {
    "hh-rlhf, several turns": (
        {"chosen": "\n\nHuman: Q0?\n\nAssistant: A0\n\nHuman: Q1?\n\nAssistant: good",
         "rejected": "\n\nHuman: Q0?\n\nAssistant: A0\n\nHuman: Q1?\n\nAssistant: bad"},
        [(U, "Q0?"), (A, "A0"), (U, "Q1?")], "good", "bad"),
    "llama-factory alpaca preference, system and history": (
        {"instruction": "Q1?", "input": "more", "system": "Be brief.", "history": [["Q0?", "A0"]],
         "chosen": "good", "rejected": "bad"},
        [("system", "Be brief."), (U, "Q0?"), (A, "A0"), (U, "Q1?\n\nmore")], "good", "bad"),
    "llama-factory sharegpt preference, tool turns": (
        {"conversations": [{"from": "human", "value": "Q1?"},
                           {"from": "function_call", "value": '{"name": "f", "arguments": {"x": 1}}'},
                           {"from": "observation", "value": "42"}],
         "tools": '[{"name": "f"}]', "system": "S",
         "chosen": {"from": "gpt", "value": "good"}, "rejected": {"from": "gpt", "value": "bad"}},
        [("system", 'S\n\n<tools>\n[{"name": "f"}]\n</tools>'), (U, "Q1?"),
         (A, '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'),
         (U, "<tool_response>\n42\n</tool_response>")], "good", "bad"),
    "sharegpt conversation (an NLL row)": (
        {"conversations": [{"from": "system", "value": "S"}, {"from": "human", "value": "Q0?"},
                           {"from": "gpt", "value": "A0"}, {"from": "human", "value": "Q1?"},
                           {"from": "gpt", "value": "good"}]},
        [("system", "S"), (U, "Q0?"), (A, "A0"), (U, "Q1?")], "good", None),
    "trl conversational, system and earlier turns": (
        {"prompt": [{"role": "system", "content": "S"}, {"role": U, "content": "Q0?"},
                    {"role": A, "content": "A0"}, {"role": U, "content": "Q1?"}],
         "chosen": [{"role": A, "content": "good"}], "rejected": [{"role": A, "content": "bad"}]},
        [("system", "S"), (U, "Q0?"), (A, "A0"), (U, "Q1?")], "good", "bad"),
}  # fmt: skip


@pytest.mark.parametrize("layout", WHOLE)
def test_every_turn_of_a_longer_layout_is_read(tmp_path, layout):
    record, prompt, chosen, rejected = WHOLE[layout]
    (row,) = read_pair_file(write_records(tmp_path / "p.jsonl.gz", [record]))
    assert [(m["role"], m["content"]) for m in row.prompt] == prompt
    assert (row.chosen, row.rejected) == (chosen, rejected)


def test_openai_style_preference_messages_must_stop_before_the_answers(store, tmp_path):
    rec = {**LAYOUTS["llama-factory openai-style preference"]}
    rec["messages"] = [*rec["messages"], {"role": A, "content": "good"}]
    refused(store, write_records(tmp_path / "p.jsonl", [rec]), line=1, field="messages", says="ends with")


def read_or_refusal(path: str) -> object:
    """What the one reader makes of a file: its rows (without the place they came from), or where and
    why it refused."""
    try:
        return [
            (r.line, r.prompt, r.chosen, r.rejected, r.pair_id, r.origin_ids, r.source, r.family, r.task_key)
            for r in read_pair_file(path)
        ]
    except BadInput as e:
        return ("refused", e.line, e.field, str(e).split(": ", 1)[-1].split(", field ", 1)[-1])


@settings(max_examples=60)
@given(
    records=st.lists(
        st.one_of(st.sampled_from(list(LAYOUTS.values())), pair_record()), min_size=1, max_size=4
    ),
    container=st.sampled_from(CONTAINERS[1:]),
)
def test_every_container_reads_as_jsonl_does(records, container, tmp_path_factory):
    """A file's records (every layout above, and random ones) give the same rows, or the same refusal at
    the same record and field, whatever holds them: one reader behind JSONL, JSON arrays and compressed
    files."""
    folder = tmp_path_factory.mktemp("containers")
    expected = read_or_refusal(write_records(folder / "p.jsonl", records))
    assert read_or_refusal(write_records(folder / f"p.{container}", records)) == expected


def test_openai_chat_rows_are_nll_rows_with_their_tool_turns(tmp_path):
    rec = {"messages": [
        {"role": "system", "content": "You can call tools."},
        {"role": U, "content": "Weather in Oslo?"},
        {"role": A, "tool_calls": [{"id": "c1", "type": "function",
                                    "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "4 degrees"},
        {"role": A, "content": "It is 4 degrees."}]}  # fmt: skip
    (row,) = read_pair_file(write_records(tmp_path / "chat.json", [rec]))
    assert row.chosen == "It is 4 degrees." and row.rejected is None
    assert [m["role"] for m in row.prompt] == ["system", "user", "assistant", "user"]
    assert "<tool_response>\n4 degrees\n</tool_response>" == row.prompt[3]["content"]


def test_a_json_array_names_the_bad_record_by_its_place(tmp_path):
    path = write_records(tmp_path / "p.json", [LAYOUTS["trl"], {"prompt": "Q2?", "chosen": 7}])
    with pytest.raises(
        BadInput, match=r"p\.json, record 2, field 'chosen': expected a string or messages, got int"
    ):
        read_pair_file(path)


def test_round_attach_reads_through_the_same_reader(round_r1, tmp_path):
    """`round attach` reads whole or refuses, as ingest does, and reads the same files (a JSON array,
    compressed), a batch at a time."""
    from pairstore.export.attach import attach_round

    store = round_r1
    lost = {"prompt": "Q?", "chosen": [{"role": U, "content": "Q? and more"}, {"role": A, "content": "a"}]}
    with pytest.raises(BadInput, match="line 1, field 'chosen'"):
        attach_round(store, "r1", write_records(tmp_path / "lost.jsonl", [lost]))
    assert store.scalar("SELECT count(*) FROM exports WHERE kind = 'attached'") == 0
    rows = [LAYOUTS[name] for name in ("trl", "hh-rlhf", "sharegpt preference")] + [
        {"prompt": "Q2?", "chosen": "yes", "rejected": "no"}
    ]
    got = attach_round(store, "r1", write_records(tmp_path / "old.json.gz", rows))
    assert got.rows == 4 and got.added == 2 and got.matched == 0  # three layouts, one pair
    assert store.scalar("SELECT count(*) FROM export_rows") == 4


def test_a_file_of_many_batches_is_staged_and_a_late_refusal_writes_nothing(store, tmp_path, monkeypatch):
    """ingest pairs inserts each batch as it reads it, in one transaction (memory flat in the file): a row
    refused in a late batch leaves the store as it was, earlier batches and all; read whole, every batch
    lands, a pair the file repeats in a later batch counted once."""
    import json

    from pairstore.ingest import batches

    monkeypatch.setattr(batches, "STREAM_BLOCK_SIZE", 1 << 12)  # a few dozen rows a batch
    rows = [
        {"prompt": f"question {i % 700}", "chosen": "yes", "rejected": f"no {i % 700}"} for i in range(900)
    ]
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "".join(json.dumps(r) + "\n" for r in rows[:-1]) + json.dumps({**rows[-1], "chosen": " "}) + "\n"
    )
    assert len(list(pair_batches(good))) > 5
    refused(store, bad, line=900, field="chosen", says="empty")
    assert store.scalar("SELECT count(*) FROM pair_origins") == 0
    assert store.scalar("SELECT count(*) FROM duckdb_tables() WHERE temporary") == 0
    got = ingest_pairs(store, good, source="x")
    assert (got.read, got.added, dict(got.skipped)) == (900, 700, {"duplicate": 200})
    assert store.scalar("SELECT count(*) FROM pairs") == 700
