"""The Python API: pairstore.open, Store.sql relations, and docs/python.md run block by block."""

from __future__ import annotations

import re

import pytest

import pairstore
from pairstore.store.store import open_store
from tests.paths import ROOT

DOC = ROOT / "docs" / "python.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
def test_every_block_of_docs_python_md_runs_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    namespace: dict = {"__name__": "docs_python_md"}
    for i, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"docs/python.md block {i}", "exec"), namespace)
        except Exception as e:  # name the block: the traceback's file is the block
            raise AssertionError(f"docs/python.md block {i} failed: {e!r}") from e
    assert (tmp_path / "mixtures" / "README.md").exists()


def test_open_is_read_only_by_default_and_relations_convert(store, db_path):
    store.con.execute("INSERT INTO holdout_sets (set_name, description, method) VALUES ('s', 'd', 'm')")
    store.close()
    with pairstore.open(db_path) as ro:
        assert ro.read_only
        rel = ro.sql("SELECT set_name FROM holdout_sets")
        assert rel.df()["set_name"].tolist() == ["s"]
        assert rel.to_arrow_table().column("set_name").to_pylist() == ["s"]
        assert rel.arrow().read_all().column("set_name").to_pylist() == ["s"]
        pl = pytest.importorskip("polars")
        assert isinstance(ro.sql("SELECT 1 AS a").pl(), pl.DataFrame)
        with pytest.raises(Exception, match="read-only"):
            ro.con.execute("DELETE FROM holdout_sets")


def test_a_missing_store_is_not_created_by_a_read_only_open(tmp_path):
    with pytest.raises(pairstore.NotFound):
        pairstore.open(tmp_path / "nope.duckdb")
    assert not (tmp_path / "nope.duckdb").exists()


def test_no_unfinished_result_after_open_or_a_half_read_execute(store, db_path):
    store.close()
    ro = open_store(db_path, read_only=True)
    try:
        # the reported bug: the open itself left a result half-read
        assert ro.con.sql("SELECT count(*) AS n FROM schema_version").df()["n"][0] >= 1
        ro.con.execute("SELECT * FROM range(10)")  # a caller's own half-read result
        assert ro.sql("SELECT 42 AS x").fetchall() == [(42,)]
    finally:
        ro.close()
    rw = open_store(db_path)
    try:
        assert rw.con.sql("SELECT 1 AS one").df()["one"][0] == 1
    finally:
        rw.close()


@pytest.mark.parametrize("duckdb_first", [False, True])
def test_duckdb_and_pairstore_open_one_store_in_one_process(store, db_path, duckdb_first):
    """A notebook's duckdb.connect(path, read_only=True) beside pairstore.open(path): one configuration."""
    import duckdb

    store.close()
    first = duckdb.connect(str(db_path), read_only=True) if duckdb_first else pairstore.open(db_path)
    second = pairstore.open(db_path) if duckdb_first else duckdb.connect(str(db_path), read_only=True)
    try:
        for con in (first, second):
            rel = con.sql("SELECT count(*) FROM pairs")
            assert rel.fetchall() == [(0,)]
    finally:
        second.close()
        first.close()
