"""The vectorized read of plain-layout pair files gives exactly the rows the record-by-record reader gives
(so `ingest pairs` stores the same pairs and origins), and a bad record the same one-line error."""

from __future__ import annotations

import json

import pytest

from pairstore.errors import BadInput
from pairstore.ingest import pair_files
from pairstore.ingest.pair_files import read_pair_file
from pairstore.ingest.pairs import ingest_pairs
from pairstore.store.store import open_store


def varied_pairs() -> list[dict]:
    """Plain-layout rows as tools write them: ids under several usual names or none, NLL-only rows
    (rejected missing or null), source and family sometimes given, NFC-sensitive and non-Latin text."""
    prompts = ["What is 17 times 23?", "Cafe\u0301 or café?", "Сколько будет 2 + 2?", " spaced \u200b "]
    out = []
    for i in range(30):
        rec: dict = {"prompt": prompts[i % 4], "chosen": f"Answer {i}: {i * 17} 😀"}
        if i % 5:
            rec["rejected"] = None if i % 7 == 0 else f"I think it is {i + 1}"
        if i % 2:
            rec["id"] = f"row-{i}"
        if i % 3 == 0:
            rec["battle_id"], rec["question_id"] = f"b{i}", ""
        if i % 4 == 1:
            rec["family"], rec["task_key"] = "arith", f"tk{i}"
        if i % 6 == 5:
            rec["pair_id"] = "" if i % 12 == 5 else f"pid{i}"
        if i % 8 == 0:
            rec["meta"] = {"kept": "out of the prompt", "n": [1, 2]}
        out.append(rec)
    return out


def write(path, records) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return str(path)


def spy(monkeypatch) -> list[bool]:
    taken: list[bool] = []
    real = pair_files._vectorized_rows
    monkeypatch.setattr(
        pair_files, "_vectorized_rows", lambda *a: taken.append(real(*a) is not None) or real(*a)
    )
    return taken


@pytest.mark.parametrize("require_chosen", [True, False])
def test_vectorized_and_per_record_reads_give_the_same_rows(tmp_path, monkeypatch, require_chosen):
    from pairstore.ingest import bulk

    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 1024)  # several batches
    taken = spy(monkeypatch)
    recs = varied_pairs()
    fast = read_pair_file(write(tmp_path / "p.jsonl", recs), require_chosen=require_chosen)
    slow = read_pair_file(write(tmp_path / "p.json", recs), require_chosen=require_chosen)
    assert taken == [True, False]
    assert fast == slow and len(fast) == 30


def test_ingest_pairs_stores_the_same_pairs_and_origins_either_way(tmp_path):
    recs = varied_pairs()
    got = []
    for name in ("p.jsonl", "p.json"):
        with open_store(tmp_path / f"{name}.duckdb") as store:
            result = ingest_pairs(store, write(tmp_path / name, recs), source="attached")
            pairs = store.con.execute(
                "SELECT pair_id, kind, prompt, chosen, rejected, source, family, match_key, task_key "
                "FROM pairs ORDER BY pair_id"
            ).fetchall()
            origins = store.con.execute(
                "SELECT pair_id, origin_kind, origin_id, rule FROM pair_origins ORDER BY ALL"
            ).fetchall()
        got.append((result.read, result.added, dict(result.skipped), pairs, origins))
    assert got[0] == got[1]
    assert got[0][1] > 0 and any(o[2] == "b0" for o in got[0][4])


BAD = [
    ({"prompt": None}, "field 'prompt': no prompt"),
    ({"chosen": None}, "field 'chosen': missing field (chosen, or completion for an NLL row)"),
    ({"source": " "}, "field 'source': empty value"),
    ({"family": "\x1f"}, "field 'family': empty value"),
    ({"chosen": 7}, "field 'chosen'"),
    ({"prompt": [{"role": "robot", "content": "x"}]}, "prompt[0].role: unknown role 'robot'"),
    ({"input": "more text"}, "field 'input': 'input' beside 'prompt' would be lost"),
]


@pytest.mark.parametrize("bad, message", BAD, ids=[m for _, m in BAD])
def test_a_bad_pair_row_gets_the_same_error_either_way(tmp_path, bad, message):
    recs = varied_pairs()[:9]
    recs[4] = {**recs[4], **bad}
    errors = []
    for name in ("bad.jsonl", "bad.json"):
        with pytest.raises(BadInput) as err:
            read_pair_file(write(tmp_path / name, recs), require_chosen=True)
        errors.append(str(err.value).replace("bad.json,", "bad.jsonl,", 1))
    assert errors[0] == errors[1]
    assert "line 5" in errors[0] and message in errors[0], errors[0]


UNUSABLE = [
    ({"chosen": " \u3000"}, "field 'chosen': empty or whitespace-only answer"),
    ({"rejected": "\t"}, "field 'rejected': empty or whitespace-only answer"),
    ({"chosen": "Same", "rejected": " Same\n"}, "field 'rejected': the same answer as chosen"),
    ({"prompt": "\u2003"}, "field 'prompt': no user message with text"),
]


@pytest.mark.parametrize("bad, message", UNUSABLE, ids=[m for _, m in UNUSABLE])
def test_an_unusable_pair_is_refused_by_ingest_with_its_line_either_way(tmp_path, bad, message):
    recs = varied_pairs()[:9]
    recs[4] = {**recs[4], **bad}
    errors = []
    for name in ("bad.jsonl", "bad.json"):
        with open_store(tmp_path / f"{name}.duckdb") as store:
            with pytest.raises(BadInput) as err:
                ingest_pairs(store, write(tmp_path / name, recs), source="attached")
            assert store.scalar("SELECT count(*) FROM pairs") == 0
        errors.append(str(err.value).replace("bad.json,", "bad.jsonl,", 1))
    assert errors[0] == errors[1]
    assert "line 5" in errors[0] and message in errors[0], errors[0]


def test_the_column_path_stores_what_the_row_path_stores_across_ingests(tmp_path, monkeypatch):
    """A plain JSONL file goes in as Arrow columns (pairs.add_pair_tables); forced down the row path
    (add_pairs) the same files give the same counts, pairs and origins: repeats inside a file, a second
    file that repeats pairs of the first under other ids, an id given under two names, a re-ingest."""
    from pairstore.ingest import bulk
    from pairstore.ingest import pairs as pairs_ingest

    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 1024)  # several batches, a repeat in a later one
    first = varied_pairs()
    first.append(dict(first[3]))  # the same row twice
    first.append({"prompt": "Twice named", "chosen": "a", "rejected": "b", "id": "x1", "uid": "x1"})
    second = [{**r, "id": f"again-{i}"} for i, r in enumerate(first[:10])] + [
        {"prompt": "New in the second file", "chosen": "yes", "rejected": "no"}
    ]
    real = pairs_ingest._ingest_plain
    got = {}
    for way in ("columns", "rows"):
        taken: list[bool] = []

        def plain(*args, way=way, taken=taken):
            took = way == "columns" and real(*args)
            taken.append(took)
            return took

        monkeypatch.setattr(pairs_ingest, "_ingest_plain", plain)
        folder = tmp_path / way
        folder.mkdir()
        results = []
        with open_store(folder / "s.duckdb") as store:
            for name, recs in (("first.jsonl", first), ("second.jsonl", second), ("first.jsonl", first)):
                r = ingest_pairs(store, write(folder / name, recs), source="attached")
                results.append((r.read, r.added, dict(r.skipped)))
            pairs = store.con.execute(
                "SELECT pair_id, kind, prompt, chosen, rejected, source, family, miner, miner_version, "
                "match_key, task_key FROM pairs ORDER BY pair_id"
            ).fetchall()
            origins = store.con.execute(
                "SELECT pair_id, origin_kind, origin_id, rule, miner FROM pair_origins ORDER BY ALL"
            ).fetchall()
        assert taken == [way == "columns"] * 3
        got[way] = (results, pairs, origins)
    assert got["columns"] == got["rows"]
    results = got["columns"][0]
    assert results[0][2] == {"duplicate": 1} and results[2][1] == 0
    assert any(o[2] == "x1" for o in got["columns"][2])


def test_a_late_fallback_or_a_callers_transaction_stores_what_the_row_path_stores(tmp_path, monkeypatch):
    """Batches inserted while the file is still read must go again when a blank line at the end sends
    the file down the row path; inside a caller's transaction the batches wait for the whole file."""
    from pairstore.ingest import bulk

    monkeypatch.setattr(bulk, "STREAM_BLOCK_SIZE", 1024)
    recs = varied_pairs()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    (tmp_path / "blank.jsonl").write_text(text + "\n", encoding="utf-8")  # a blank last line
    write(tmp_path / "rows.json", recs)
    write(tmp_path / "plain.jsonl", recs)
    got = []
    for name, outer in (("rows.json", False), ("blank.jsonl", False), ("plain.jsonl", True)):
        with open_store(tmp_path / f"{name}.duckdb") as store:
            if outer:
                with store.transaction():
                    r = ingest_pairs(store, str(tmp_path / name), source="attached")
            else:
                r = ingest_pairs(store, str(tmp_path / name), source="attached")
            pairs = store.con.execute("SELECT pair_id, match_key FROM pairs ORDER BY ALL").fetchall()
            origins = store.con.execute(
                "SELECT pair_id, origin_kind, origin_id FROM pair_origins WHERE origin_kind <> 'import' "
                "ORDER BY ALL"
            ).fetchall()
        got.append(((r.read, r.added, dict(r.skipped)), pairs, origins))
    assert got[0] == got[1] == got[2]
