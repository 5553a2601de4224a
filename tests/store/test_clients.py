"""A store pairstore wrote opens in the DuckDB 1.x command-line client, read-only."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairstore.store.store import STORAGE_COMPATIBILITY_VERSION, open_store, storage_version


def duckdb_cli() -> str:
    """The `duckdb` binary of the duckdb-cli package (the dev extra), beside this Python first."""
    beside = Path(sys.executable).parent / "duckdb"
    found = str(beside) if beside.exists() else shutil.which("duckdb")
    if not found:
        pytest.skip("the duckdb-cli package is not installed (pip install -e '.[dev]')")
    return found


def test_a_new_store_is_written_in_the_1x_storage_format(store):
    assert storage_version(store.con) == STORAGE_COMPATIBILITY_VERSION + "+"


def test_duckdb_cli_reads_the_store_read_only(run_cli, db_path, tmp_path):
    battles = tmp_path / "b.jsonl"
    battles.write_text(
        '{"battle_id": "b1", "prompt": "What is 2+2?", "own_answer": "4", "opponent_answer": "5", '
        '"vote": "win", "category": "math"}\n',
        encoding="utf-8",
    )
    assert run_cli("ingest", "battles", battles).exit_code == 0
    cli = duckdb_cli()
    version = subprocess.run([cli, "-version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("v1."), version
    query = (
        "SELECT battle_id, vote FROM battles; "
        "SELECT comment FROM duckdb_columns() WHERE table_name = 'battles' AND column_name = 'vote'; "
        "SELECT count(*) FROM holdout_status"
    )
    done = subprocess.run(
        [cli, "-readonly", "-csv", str(db_path), "-c", query], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "b1,win" in lines
    assert "from the own model's side: win, loss, tie, both_bad" in done.stdout
    # still a store this pairstore opens and writes after the 1.x client read it
    with open_store(db_path) as s:
        assert s.scalar("SELECT count(*) FROM battles") == 1
