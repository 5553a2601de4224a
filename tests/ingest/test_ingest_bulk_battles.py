"""The vectorized ingest of native battles stores exactly what the record-by-record ingest stores (same
keys, same rows, same counts), and a bad record gets the same one-line error from both."""

from __future__ import annotations

import json

import pytest

from pairstore.errors import BadInput
from pairstore.ingest import battles as battle_ingest
from pairstore.ingest.battles import ingest_battles
from pairstore.store.store import open_store
from tests.tiers import fast_share

COLUMNS = (
    "battle_id, prompt, own_answers, opponent_answers, n_turns, vote, category, own_model, opponent_model, "
    "voted_at, match_key, record_hash, annotator, own_position, decoding, origin, shown_at"
)


def stored(db) -> list[tuple]:
    with open_store(db, read_only=True) as store:
        return store.con.execute(f"SELECT {COLUMNS}, source_file FROM battles ORDER BY battle_id").fetchall()


def varied_battles() -> list[dict]:
    """Forms a real file holds: optional fields missing or null, empty answers, times with Z, offsets and
    none, NFC-sensitive and non-Latin text, invisible characters, a battle repeated in the file."""
    times = ["2026-01-10T10:00:00Z", "2026-01-10T12:00:00+02:00", "2026-01-10 09:30:00", None]
    prompts = [
        "What is 17 times 23?",
        "Cafe\u0301 or café: which is spelled right?",
        "Сколько будет 2 + 2?",
        "  Leading and trailing spaces \u200b ",
        "**What is 17 times 23?** Thanks!",
        'A "quote", a back\\slash, a tab\t, a bell \x07 and a / in JSON',
        "Line\u2028separator and <b>markup</b> &amp; escapes \\n",
    ]
    out = []
    for i in range(40):
        rec = {
            "battle_id": f"b{i:03d}",
            "prompt": prompts[i % len(prompts)],
            "own_answer": "" if i % 11 == 0 else f"Answer {i}: {i * 17}.\n\nFinal answer: {i}",
            "opponent_answer": f"I think it is {i + 1} 😀",
            "vote": ["win", "loss", "tie", "both_bad"][i % 4],
            "voted_at": times[i % len(times)],
        }
        if i % 3:
            rec["category"] = ["math", "chat"][i % 2]
        if i % 5:
            rec["own_model"], rec["opponent_model"] = "brook-s2", None if i % 7 == 0 else "rival-7b"
        if i % 6 == 0:
            rec["extra"] = {"ignored": [1, 2]}
        out.append(rec)
    out.append(dict(out[3]))  # the same battle twice in one file
    return out


def write(path, records) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return str(path)


def paths_taken(monkeypatch) -> list[bool]:
    taken: list[bool] = []
    real = battle_ingest._ingest_vectorized

    def spy(*args):
        took = real(*args)
        taken.append(took)
        return took

    monkeypatch.setattr(battle_ingest, "_ingest_vectorized", spy)
    return taken


def test_vectorized_and_per_record_paths_store_the_same_battles(tmp_path, monkeypatch):
    from pairstore.ingest import bulk

    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 1024)  # several batches; the repeat in a later one
    taken = paths_taken(monkeypatch)
    results = {}
    for name in ("battles.jsonl", "battles.json"):  # .json: the per-record path only
        folder = tmp_path / name.replace(".", "_")
        folder.mkdir()
        db = folder / "s.duckdb"
        path = write(folder / "battles.jsonl", varied_battles())
        if name.endswith(".json"):
            path = write(folder / name, varied_battles())
        with open_store(db) as store:
            results[name] = ingest_battles(store, path)
            again = ingest_battles(store, path)
        assert again.added == 0 and again.skipped["already present"] == again.read
        results[name + " rows"] = stored(db)
    assert taken == [True, True, False, False]
    fast, slow = results["battles.jsonl"], results["battles.json"]
    assert (fast.read, fast.added, dict(fast.skipped)) == (slow.read, slow.added, dict(slow.skipped))
    assert (fast.read, fast.added, dict(fast.skipped)) == (41, 40, {"already present": 1})
    fast_rows, slow_rows = results["battles.jsonl rows"], results["battles.json rows"]
    assert [r[:-1] for r in fast_rows] == [r[:-1] for r in slow_rows]  # keys, hashes, every column
    assert {r[-1] for r in fast_rows} == {"battles.jsonl"} and {r[-1] for r in slow_rows} == {"battles.json"}


def test_a_file_with_per_record_fields_takes_the_per_record_path(tmp_path, monkeypatch):
    taken = paths_taken(monkeypatch)
    recs = varied_battles()[:5]
    recs[4]["system"] = "You are Brook."
    with open_store(tmp_path / "s.duckdb") as store:
        result = ingest_battles(store, write(tmp_path / "b.jsonl", recs))
        prompt = store.scalar("SELECT prompt FROM battles WHERE battle_id = 'b004'")
    assert taken == [False] and result.added == 5
    assert prompt[0] == {"role": "system", "content": "You are Brook."}


BAD = [
    ({"vote": "won"}, "field 'vote': unknown value 'won'"),
    ({"vote": None}, "field 'vote': missing field"),
    ({"battle_id": "  "}, "field 'battle_id': empty value"),
    ({"battle_id": "\x1c"}, "field 'battle_id': empty value"),  # blank to str.strip, not to Arrow
    ({"category": ""}, "field 'category': empty value"),
    ({"own_answer": None}, "field 'own_answer': missing field"),
    ({"prompt": None}, "field 'prompt': missing field"),
    ({"voted_at": "yesterday"}, "field 'voted_at': not an ISO 8601 time"),
    ({"voted_at": "1900-01-01T00:00:00"}, "field 'voted_at': time '1900-01-01T00:00:00' is out of range"),
    ({"voted_at": 5}, "field 'voted_at': expected an ISO 8601 time, got int"),
    ({"prompt": ["not", "messages"]}, "field 'prompt': prompt[0]: expected a message object"),
    ({"battle_id": "b000"}, "appears twice with different content"),
]


@pytest.mark.parametrize("bad, message", fast_share(BAD), ids=[m for _, m in BAD])
def test_a_bad_battle_gets_the_same_error_from_both_paths(tmp_path, bad, message):
    recs = varied_battles()[:8]
    recs[5] = {**recs[5], **bad}
    errors = []
    for name in ("bad.jsonl", "bad.json"):
        db = tmp_path / f"{name}.duckdb"
        with open_store(db) as store:
            with pytest.raises(BadInput) as err:
                ingest_battles(store, write(tmp_path / name, recs))
            assert store.scalar("SELECT count(*) FROM battles") == 0
            assert store.scalar("SELECT count(*) FROM ingests") == 0
        errors.append(str(err.value).replace("bad.json,", "bad.jsonl,", 1))
    assert errors[0] == errors[1]
    assert "line 6" in errors[0] and message in errors[0], errors[0]


def test_the_vectorized_checks_find_the_bad_record_and_only_records_up_to_it_are_parsed(
    tmp_path, monkeypatch
):
    parsed = []
    real = battle_ingest.parse_battle
    monkeypatch.setattr(
        battle_ingest, "parse_battle", lambda rec, path, line: parsed.append(line) or real(rec, path, line)
    )
    recs = varied_battles()
    recs[5]["vote"] = "won"
    with open_store(tmp_path / "s.duckdb") as store:
        with pytest.raises(BadInput, match="line 6, field 'vote'"):
            ingest_battles(store, write(tmp_path / "b.jsonl", recs))
    assert parsed == [1, 2, 3, 4, 5, 6]  # found by the Arrow checks; the parser names it
