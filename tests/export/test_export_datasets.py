"""An export folder is a dataset `datasets.load_dataset(FOLDER)` reads as it is."""

from __future__ import annotations

import json

import datasets
import pyarrow.parquet as pq
import pytest

from pairstore.export.card import MARKER
from pairstore.export.run import export_round
from pairstore.keys import sha256_file
from pairstore.rounds.recipes import add_round


def test_load_dataset_reads_the_mixture_and_the_nll_rows_never_the_evidence(round_r1, tmp_path):
    out = tmp_path / "mix"
    result = export_round(round_r1, "r1", out)
    cache = tmp_path / "hf-cache"
    prefs = datasets.load_dataset(str(out), cache_dir=str(cache))
    assert list(prefs) == ["train"]
    expected = pq.read_table(out / "r1.parquet")
    assert prefs["train"].num_rows == expected.num_rows == result.files["dpo"].rows
    assert set(prefs["train"].column_names) == set(expected.column_names)
    assert prefs["train"]["pair_id"] == expected.column("pair_id").to_pylist()
    nll = datasets.load_dataset(str(out), "r1-nll", cache_dir=str(cache))
    assert nll["train"].num_rows == result.files["sft"].rows > 0
    assert set(nll["train"].column_names) >= {"prompt", "completion"}

    card = (out / "README.md").read_text(encoding="utf-8")
    evidence_sha = sha256_file(out / "r1.training_evidence.json")
    assert evidence_sha in card and result.files["dpo"].sha256 in card
    gate = json.loads((out / "r1.training_evidence.json").read_text())["gate"]
    assert (
        f"| r1 | r1.parquet | {expected.num_rows} | {gate['members_checked']} | {gate['pairs_checked']} |"
        in card
    )
    assert result.card_path == str(out.resolve() / "README.md")


def test_the_card_lists_every_round_in_the_folder_and_refuses_to_guess_among_several(
    round_r1, tmp_path, dpo_recipe
):
    (tmp_path / "r2.toml").write_text(dpo_recipe("r2", blocks=['source = "battle"'], seed=9))
    add_round(round_r1, tmp_path / "r2.toml")
    out = tmp_path / "mix"
    export_round(round_r1, "r1", out)
    first = (out / "README.md").read_bytes()
    export_round(round_r1, "r1", out)  # same bytes again: the same card
    assert (out / "README.md").read_bytes() == first
    cache = str(tmp_path / "hf-cache")
    only = datasets.load_dataset(str(out), cache_dir=cache)["train"]  # one round: it is the default
    assert only.num_rows == pq.read_table(out / "r1.parquet").num_rows
    export_round(round_r1, "r2", out)
    with pytest.raises(ValueError, match="Config name is missing"):
        datasets.load_dataset(str(out), cache_dir=cache)  # two rounds: datasets names them, never guesses
    for name in ("r1", "r2"):
        rows = datasets.load_dataset(str(out), name, cache_dir=cache)["train"]
        assert rows.num_rows == pq.read_table(out / f"{name}.parquet").num_rows


def test_the_card_keeps_a_round_another_store_exported_into_the_folder(
    round_r1, tmp_path, dpo_recipe, new_store
):
    """Two stores, one folder: the second export's card still lists the first store's round (read from
    its evidence file), so load_dataset(FOLDER, "r1") keeps working."""
    out = tmp_path / "mix"
    export_round(round_r1, "r1", out)
    other = new_store(tmp_path / "other.duckdb")
    try:
        from tests.conftest import _fill_pairs

        _fill_pairs(other)
        (tmp_path / "base.toml").write_text('name = "base"\nkind = "base"\n')
        add_round(other, tmp_path / "base.toml")
        (tmp_path / "m13a.toml").write_text(dpo_recipe("m13a", blocks=['source = "battle"'], seed=3))
        add_round(other, tmp_path / "m13a.toml")
        export_round(other, "m13a", out)
    finally:
        other.close()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert '- config_name: "r1"' in card and '- config_name: "m13a"' in card
    cache = str(tmp_path / "hf-cache")
    r1 = datasets.load_dataset(str(out), "r1", cache_dir=cache)["train"]
    assert r1.num_rows == pq.read_table(out / "r1.parquet").num_rows
    assert sha256_file(out / "r1.training_evidence.json") in card


def test_a_readme_pairstore_did_not_write_is_left_alone(round_r1, tmp_path):
    out = tmp_path / "mix"
    out.mkdir()
    (out / "README.md").write_text("# our notes\n")
    result = export_round(round_r1, "r1", out)
    assert (out / "README.md").read_text() == "# our notes\n"
    assert result.card_path is None
    assert any("README.md pairstore did not write" in n for n in result.notes)
    assert MARKER not in (out / "README.md").read_text()


def test_a_store_moved_with_its_export_folder_is_audited_where_the_files_now_are(round_r1, tmp_path, run_cli):
    import shutil

    from audits.mixtures import check_mixtures
    from pairstore.store.store import open_store

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    export_round(round_r1, "r1", run_dir / "mixtures")
    round_r1.close()
    shutil.copy(round_r1.path, run_dir / "pairstore.duckdb")
    moved = tmp_path / "moved"
    shutil.move(run_dir, moved)
    with open_store(moved / "pairstore.duckdb", read_only=True) as store:
        checks = [c for c in check_mixtures(store) if c.status != "leftover"]
    assert checks and all(c.status == "ok" for c in checks), [c.as_dict() for c in checks]
    assert all(c.path.startswith(str(moved)) and c.registered_path.startswith(str(run_dir)) for c in checks)
    # a changed byte in the moved copy still fails the audit, naming both paths
    (moved / "mixtures" / "r1.parquet").write_bytes(b"changed")
    res = run_cli("--db", moved / "pairstore.duckdb", "audit", "mixtures")
    assert res.exit_code == 3
    assert (
        f"warning: {run_dir / 'mixtures' / 'r1.parquet'} is not there; "
        f"checked {moved / 'mixtures' / 'r1.parquet'}" in res.stderr
    )
