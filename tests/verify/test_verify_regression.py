"""Every labelled row the project holds (bench/data, all corpora) keeps its recorded verdict.

bench/data/verify_expected.jsonl records (label, reason) per (corpus, row id). A rule change that
flips a row fails here, naming the rows, until the file is rewritten (bench/verify_rows.py --write)
and the flip shows in the commit's diff.
"""

from __future__ import annotations

import sys

import pytest

from tests.paths import ROOT

BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import verify_rows  # noqa: E402 (bench/verify_rows.py)


@pytest.fixture(scope="module")
def tables():
    from miners.verify import symbolic

    saved = symbolic.SYMBOLIC_TIMEOUT_S, symbolic.OUTPUT_TIMEOUT_S
    try:
        return verify_rows.read_expected(), verify_rows.verdict_table()
    finally:
        symbolic.SYMBOLIC_TIMEOUT_S, symbolic.OUTPUT_TIMEOUT_S = saved


@pytest.mark.slow
def test_no_unrecorded_flip(tables):
    expected, now = tables
    missing = sorted(k for k in now if k not in expected)
    assert not missing, f"rows without a recorded verdict: {missing[:10]}"
    flips = [
        f"{c} {i}: recorded {expected[(c, i)]}, now {v}"
        for (c, i), v in sorted(now.items())
        if expected[(c, i)] != v
    ]
    assert not flips, f"{len(flips)} verdicts flipped:\n" + "\n".join(flips[:40])


@pytest.mark.slow
def test_every_corpus_row_is_recorded(tables):
    expected, _ = tables
    for name in verify_rows.corpora():
        ids = {r["id"] for r in verify_rows.load(verify_rows.DATA / name)}
        assert ids <= {i for c, i in expected if c == name}, name


@pytest.mark.slow
def test_no_recorded_verdict_contradicts_its_label(tables):
    """The record itself holds the goal: a right answer is never recorded wrong, nor a wrong one right,
    on the corpora the verifier was fixed against (the held-out corpus is measured, not fixed)."""
    expected, _ = tables
    bad = []
    for name in verify_rows.corpora():
        if verify_rows.is_heldout(name):
            continue
        for r in verify_rows.load(verify_rows.DATA / name):
            label, _reason = expected[(name, r["id"])]
            if label == ("wrong" if r["equal"] else "correct"):
                bad.append(f"{name} {r['id']}: labelled {r['equal']}, recorded {label}")
    assert not bad, "\n".join(bad)


def test_a_new_held_out_folder_is_a_corpus_by_being_there(tmp_path, monkeypatch):
    """Every *.jsonl under bench/data/verify_heldout*/ is measured, regressed and reported as held-out
    (unless it was fixed on after its measurement); no list to edit."""
    (tmp_path / "verify_corpus.jsonl").write_text("")
    for folder, name in (("verify_heldout", "heldout.jsonl"), ("verify_heldout7", "rows.jsonl")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text("")
    (tmp_path / "verify_heldout7" / "labels.tsv").write_text("")  # not a corpus
    monkeypatch.setattr(verify_rows, "DATA", tmp_path)
    assert verify_rows.corpora() == [
        "verify_corpus.jsonl",
        "verify_heldout/heldout.jsonl",
        "verify_heldout7/rows.jsonl",
    ]
    assert verify_rows.is_heldout("verify_heldout7/rows.jsonl")
    assert not verify_rows.is_heldout("verify_heldout/heldout.jsonl")  # fixed on since
    assert not verify_rows.is_heldout("verify_corpus.jsonl")


def test_every_recorded_flip_says_what_it_was_and_why():
    records = verify_rows.read_records()
    flipped = [r for r in records.values() if "was" in r]
    assert all(r["why"].strip() for r in flipped), [r["id"] for r in flipped if not r["why"].strip()]
    assert all(r["was"] != f"{r['label']}: {r['reason']}" for r in flipped)


def test_a_flip_without_a_reason_is_refused_and_one_with_a_reason_is_recorded():
    previous = {
        ("c.jsonl", "r1"): {"corpus": "c.jsonl", "id": "r1", "label": "wrong", "reason": "empty answer"},
        ("c.jsonl", "r2"): {"corpus": "c.jsonl", "id": "r2", "label": "correct", "reason": "compared equal"},
    }
    table = {
        ("c.jsonl", "r1"): ("correct", "compared equal"),  # flipped
        ("c.jsonl", "r2"): ("correct", "compared equal"),  # unchanged
        ("c.jsonl", "r3"): ("unknown", "no answer found"),  # a new row: recorded as measured
    }
    with pytest.raises(SystemExit, match="1 flips without a reason"):
        verify_rows.expected_records(table, previous, {})
    records = verify_rows.expected_records(table, previous, {"c.jsonl r1": "a cut statement"})
    assert records[0] == {
        "corpus": "c.jsonl",
        "id": "r1",
        "label": "correct",
        "reason": "compared equal",
        "was": "wrong: empty answer",
        "why": "a cut statement",
    }
    assert "was" not in records[1] and "was" not in records[2]
    # a later rewrite keeps the record of an earlier flip on a row that did not flip again
    again = verify_rows.expected_records(table, {(r["corpus"], r["id"]): r for r in records}, {})
    assert again == records


def test_a_timed_pass_starts_with_the_caches_both_verifiers_share_empty():
    """bench_verify's passes of either verifier start with sympy's cache and math-verify's parse caches
    empty (verify_rows.fresh_shared_caches): a pass after another over the same rows finds none of
    their parses cached."""
    import math_verify.parser
    from math_verify import parse
    from sympy.core import cache

    parse("$\\frac{3}{7} + x$")
    parse("the answer is 12 + 5")
    cached = [getattr(math_verify.parser, name) for name in verify_rows.MATH_VERIFY_INPUT_CACHES]
    assert math_verify.parser.parse_latex_cached.cache_info().currsize > 0
    assert math_verify.parser.parse_expr_cached.cache_info().currsize > 0
    sympy_cached = [f for f in cache.CACHE if hasattr(f, "cache_info")]
    assert any(f.cache_info().currsize for f in sympy_cached)
    verify_rows.fresh_shared_caches()
    assert [f.cache_info().currsize for f in cached] == [0] * len(cached)
    assert not any(f.cache_info().currsize for f in sympy_cached)
