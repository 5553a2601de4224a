"""Shared fixtures: stores in tmp_path and a CLI runner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pairstore.cli import cli
from pairstore.store import open_store


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "store.duckdb"


@pytest.fixture
def store(db_path):
    s = open_store(db_path)
    yield s
    s.close()


@pytest.fixture
def run_cli(db_path):
    """run_cli(*args) -> click Result, against the test store."""
    runner = CliRunner()

    def run(*args, db=None):
        return runner.invoke(cli, ["--db", str(db or db_path), *map(str, args)], catch_exceptions=False)

    return run


def write_jsonl(path, records) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return str(path)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """The full demo (`pairstore demo`), run once per test session; tests read its store and files."""
    from pairstore.demo import run_demo

    out = tmp_path_factory.mktemp("demo") / "demo-run"
    lines: list[str] = []
    result = run_demo(out, echo=lines.append, progress=False)
    result.lines = lines
    return result
