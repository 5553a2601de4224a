"""The held-out verifier corpora (bench/data/verify_heldout*/) are what their READMEs say: every row
labelled in labels.tsv and joined as written, no committed answer never "equal", and drawn from
repositories that no other corpus under bench/data uses (a held-out corpus measures forms the
verifier was not fixed on). Reads the files only; no verifier runs here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.paths import ROOT

DATA = ROOT / "bench" / "data"
HELDOUT = sorted(p for p in DATA.glob("verify_heldout*") if p.is_dir())
FILES = ("README.md", "LABELLING.md", "labels.tsv", "draw.py", "heldout.jsonl")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def repository(row: dict) -> str:
    return row["source"].split()[0]


def corpus_files() -> list[Path]:
    return sorted(DATA.glob("**/*.jsonl"))


def test_there_are_held_out_corpora():
    assert len(HELDOUT) >= 2, HELDOUT


@pytest.mark.parametrize("corpus", HELDOUT, ids=lambda p: p.name)
def test_corpus_has_its_files(corpus):
    missing = [name for name in FILES if not (corpus / name).is_file()]
    assert not missing, f"{corpus.name}: {missing}"


@pytest.mark.parametrize("corpus", HELDOUT, ids=lambda p: p.name)
def test_rows_are_the_labels_as_written(corpus):
    data = rows(corpus / "heldout.jsonl")
    labels = [line.split("\t") for line in (corpus / "labels.tsv").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in data] == [fields[0] for fields in labels]
    assert len({r["id"] for r in data}) == len(data)
    for r, fields in zip(data, labels):
        row_id, equal, tag, no_answer, note = (fields + ["", "", ""])[:5]
        assert equal in ("T", "F"), row_id
        assert r["equal"] is (equal == "T"), row_id
        assert r["tag"] == tag and tag, row_id
        assert bool(r.get("no_answer")) is (no_answer == "NA"), row_id
        assert r.get("note", "") == note, row_id
        assert r["heldout"] is True, row_id
        assert r["kind"] in ("gsm8k", "math"), row_id
        assert isinstance(r["pred"], str) and isinstance(r["gold"], str) and r["gold"].strip(), row_id


@pytest.mark.parametrize("corpus", HELDOUT, ids=lambda p: p.name)
def test_no_committed_answer_is_never_equal(corpus):
    bad = [r["id"] for r in rows(corpus / "heldout.jsonl") if r.get("no_answer") and r["equal"]]
    assert not bad


@pytest.mark.parametrize("corpus", HELDOUT, ids=lambda p: p.name)
def test_multiple_choice_gold_is_one_of_the_options(corpus):
    # options are listed in letter order, with or without their letter ("A) 12" or "12"); a
    # multiple-select gold names several of them, each once, in letter order ("ACD")
    def names_options(gold: str, n: int) -> bool:
        letters = "ABCDEFGHIJ"[:n]
        return bool(gold) and all(c in letters for c in gold) and list(gold) == sorted(set(gold))

    bad = [
        r["id"]
        for r in rows(corpus / "heldout.jsonl")
        if r.get("options") and not names_options(r["gold"], len(r["options"]))
    ]
    assert not bad


@pytest.mark.parametrize("corpus", HELDOUT, ids=lambda p: p.name)
def test_sources_are_used_by_no_other_corpus(corpus):
    mine = {repository(r) for r in rows(corpus / "heldout.jsonl")}
    elsewhere = {}
    for path in corpus_files():
        if path.parent == corpus:
            continue
        for r in rows(path):
            if r.get("source"):
                elsewhere.setdefault(repository(r), path.relative_to(DATA))
    shared = {repo: str(elsewhere[repo]) for repo in mine if repo in elsewhere}
    assert not shared, f"{corpus.name} shares sources with other corpora: {shared}"


@pytest.mark.parametrize("corpus", HELDOUT, ids=lambda p: p.name)
def test_readme_lists_every_source(corpus):
    readme = (corpus / "README.md").read_text(encoding="utf-8")
    words = set(readme.replace("|", " ").split())
    unlisted = sorted({repository(r) for r in rows(corpus / "heldout.jsonl")} - words)
    assert not unlisted, unlisted
