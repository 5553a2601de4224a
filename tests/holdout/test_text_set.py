"""The fingerprint set behind the leak audit's once-per-distinct-string matching, and that matching itself."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairstore.holdout import file_members
from pairstore.holdout.file_members import members_in_file
from pairstore.holdout.text_set import TextSet, combined, fingerprints
from tests.audits.test_audit_leaks import HELD, battle_prompt, make_battles


@pytest.mark.slow
@pytest.mark.timeout(900)
@given(st.lists(st.text(max_size=40), max_size=60))
@settings(max_examples=100)
def test_equal_texts_and_only_equal_texts_share_a_fingerprint(texts):
    lo, hi = fingerprints(pa.array(texts, pa.large_string()))
    by_fp: dict = {}
    for t, a, b in zip(texts, lo.tolist(), hi.tolist()):
        by_fp.setdefault((a, b), set()).add(t)
    assert all(len(v) == 1 for v in by_fp.values())
    assert len(by_fp) == len(set(texts))
    again = fingerprints(pa.array(list(reversed(texts)), pa.string()))
    assert list(zip(again[0].tolist()[::-1], again[1].tolist()[::-1])) == list(zip(lo.tolist(), hi.tolist()))


@pytest.mark.slow
def test_no_collision_among_near_identical_texts():
    texts = pa.array([f"question {i:07d} about the same thing" for i in range(300_000)], pa.large_string())
    lo, hi = fingerprints(texts)
    pairs = np.stack([lo, hi], axis=1)
    assert len(np.unique(pairs, axis=0)) == len(texts)
    seeded = fingerprints(texts, seed=1)
    assert not np.any((seeded[0] == lo) & (seeded[1] == hi))


def test_the_set_says_new_once_and_stops_adding_when_full():
    s = TextSet(max_entries=5)
    first = s.add(pa.array(["a", "b", "a", "c"]))
    assert first.tolist() == [True, True, False, True]
    assert s.add(pa.array(["a", "d", "e", "f", "g"])).tolist() == [False, True, True, True, True]
    assert s.full and s.count == 5
    # past its size a text it did not keep is new again, every time: matched twice, never lost
    assert s.add(pa.array(["f", "f"])).tolist() == [True, True]
    assert s.add(pa.array(["a", "b", "c", "d", "e"])).tolist() == [False] * 5


def test_combined_fingerprints_follow_order_and_boundaries():
    lo, hi = fingerprints(pa.array(["x", "y", "x", "y", "xy"]))
    a = combined(np.array([0, 2, 4, 5]), lo, hi)
    assert (a[0][0], a[1][0]) == (a[0][1], a[1][1])  # ["x", "y"] twice
    swapped = combined(np.array([0, 2]), lo[[1, 0]], hi[[1, 0]])
    assert (swapped[0][0], swapped[1][0]) != (a[0][0], a[1][0])  # order counts
    assert (a[0][2], a[1][2]) != (a[0][0], a[1][0])  # ["xy"] is not ["x", "y"]
    empty = combined(np.array([0, 0]), lo[:0], hi[:0])
    assert len(empty[0]) == 1


@pytest.mark.slow
def test_each_distinct_string_is_matched_once_and_every_copy_is_found(store, tmp_path, monkeypatch):
    make_battles(store, 6)
    rows = []
    for i in range(300):
        rows.append(
            {
                "prompt": [
                    {"role": "system", "content": "You are Brook."},
                    {"role": "user", "content": f"q {i % 50}"},
                ],
                "chosen": [{"role": "assistant", "content": HELD if i % 100 == 7 else f"answer {i % 60}"}],
                "pair_id": f"p{i % 50}",
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "m.parquet", row_group_size=64)
    monkeypatch.setattr(file_members, "MATCH_ROWS", 40)  # several chunks
    found = members_in_file(store, tmp_path / "m.parquet", set_name="judge34", batch_rows=32)
    assert found.rows == 300 and found.calls > 1
    assert sorted(h.row_index for h in found.hits) == [7, 107, 207]
    assert {(h.item_id, h.how) for h in found.hits} == {("b003", "whole_text")}  # the whole answer is it
    # 50 prompts; 60 answers and the held-out one, 50 pair ids, the system prompt, the roles "system",
    # "user" and "assistant", the keys prompt, chosen, pair_id, role and content
    assert found.distinct == 50 + (61 + 50 + 1 + 3 + 5)
    # with room for three fingerprints only, copies are matched again and still every one is found
    small = members_in_file(store, tmp_path / "m.parquet", set_name="judge34", batch_rows=32, max_distinct=3)
    assert [h.row_index for h in small.hits] == [7, 107, 207] and small.distinct > found.distinct


def test_a_prompt_split_over_user_turns_is_an_exact_hit(store, tmp_path):
    make_battles(store, 6)
    first, second = battle_prompt(4).split("\n")
    recs = [
        {"messages": [{"role": "user", "content": first}, {"role": "assistant", "content": "ok"},
                      {"role": "user", "content": second}, {"role": "assistant", "content": "done"}]}
    ]  # fmt: skip
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    found = members_in_file(store, tmp_path / "s.jsonl", set_name="judge34")
    assert [(h.item_id, h.how, h.row_index) for h in found.hits] == [("b004", "match_key", 0)]
