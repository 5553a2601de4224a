"""The saved copy of what the migrations make (pairstore.store.schema_snapshot): equal to a scratch run,
and used only where it is this DuckDB's and this migrations.py's."""

from __future__ import annotations

import json

import duckdb
import pytest

from pairstore.store import schema_snapshot
from pairstore.store.migrations import SCHEMA_VERSION
from pairstore.store.recognize import expected_definitions, expected_schema


def test_saved_copy_is_what_the_migrations_make():
    data = json.loads(schema_snapshot.SNAPSHOT.read_text(encoding="utf-8"))
    if data["duckdb"] != duckdb.__version__:
        pytest.skip(f"made by DuckDB {data['duckdb']}, this is {duckdb.__version__}: the copy is not used")
    assert schema_snapshot.snapshot_text(SCHEMA_VERSION) == schema_snapshot.SNAPSHOT.read_text(
        encoding="utf-8"
    ), "run: python -m pairstore.store.schema_snapshot"
    assert schema_snapshot.saved(SCHEMA_VERSION) == schema_snapshot.from_scratch(SCHEMA_VERSION)


def _write_copy(tmp_path, monkeypatch, **changes):
    data = json.loads(schema_snapshot.snapshot_text(SCHEMA_VERSION))
    data.update(changes)
    path = tmp_path / "schema_snapshot.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(schema_snapshot, "SNAPSHOT", path)
    return data


def test_a_copy_of_this_duckdb_and_these_migrations_is_used(tmp_path, monkeypatch):
    data = _write_copy(tmp_path, monkeypatch, definitions={"table x": "CREATE TABLE x(a INTEGER);"})
    assert schema_snapshot.saved(SCHEMA_VERSION)[1] == data["definitions"]


@pytest.mark.parametrize(
    "changes",
    [
        {"duckdb": "0.0.1"},
        {"migrations_sha256": "0" * 64},
        {"schema_version": SCHEMA_VERSION - 1},
    ],
    ids=["another DuckDB", "edited migrations", "another version"],
)
def test_a_copy_made_otherwise_is_not_used(tmp_path, monkeypatch, changes):
    _write_copy(tmp_path, monkeypatch, **changes)
    assert schema_snapshot.saved(SCHEMA_VERSION) is None


def test_a_missing_or_damaged_copy_falls_back_to_the_migrations(tmp_path, monkeypatch):
    monkeypatch.setattr(schema_snapshot, "SNAPSHOT", tmp_path / "absent.json")
    assert schema_snapshot.saved(SCHEMA_VERSION) is None
    damaged = tmp_path / "damaged.json"
    for text in ('{"duckdb": ', "[]", json.dumps({"duckdb": duckdb.__version__})):
        damaged.write_text(text, encoding="utf-8")
        monkeypatch.setattr(schema_snapshot, "SNAPSHOT", damaged)
        assert schema_snapshot.saved(SCHEMA_VERSION) is None
    # recognize then reads a scratch run, which gives the same answer
    assert expected_schema(SCHEMA_VERSION) == schema_snapshot.from_scratch(SCHEMA_VERSION)[0]
    assert expected_definitions(SCHEMA_VERSION) == schema_snapshot.from_scratch(SCHEMA_VERSION)[1]
