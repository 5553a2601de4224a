"""What the migrations make, saved once, so that opening a store need not run them all again.

    .venv/bin/python -m pairstore.store.schema_snapshot     # write it anew after changing a migration

pairstore.store.recognize compares a store with what migrations 1..N make: each table's columns and
DuckDB's rendering of each CREATE statement. Reading those means running every migration on a scratch
in-memory store first: about 40 ms and 150 M instructions, a tenth of a short command's whole process.
schema_snapshot.json holds the result for the newest version.

It is used only where it can be nothing but that result: made by this DuckDB version (which renders
the statements) from this migrations.py (its SHA-256 is saved with it). Anything else (another DuckDB,
an edited migration, an older store's version) runs the migrations, as before. A test holds the file
equal to a scratch run (tests/store/test_schema_snapshot.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb

from pairstore.store.catalog import definitions_of, schema_of

SNAPSHOT = Path(__file__).with_name("schema_snapshot.json")
_MIGRATIONS_SOURCE = Path(__file__).with_name("migrations.py")

Made = tuple[dict[str, frozenset], dict[str, str]]


def _migrations_sha256() -> str:
    return hashlib.sha256(_MIGRATIONS_SOURCE.read_bytes()).hexdigest()


def from_scratch(version: int) -> Made:
    """(columns, definitions) of what migrations 1..version make, read from an in-memory store they ran on."""
    from pairstore.store.migrations import MIGRATIONS

    con = duckdb.connect()
    try:
        for fn in MIGRATIONS[:version]:
            fn(con)
        return schema_of(con, "memory"), definitions_of(con, "memory")
    finally:
        con.close()


def _as_json(version: int, made: Made) -> dict[str, Any]:
    columns, definitions = made
    return {
        "duckdb": duckdb.__version__,
        "migrations_sha256": _migrations_sha256(),
        "schema_version": version,
        "columns": {t: dict(sorted(cols)) for t, cols in sorted(columns.items())},
        "definitions": dict(sorted(definitions.items())),
    }


def saved(version: int) -> Made | None:
    """The saved result for `version`, where it is this DuckDB's and this migrations.py's; else None."""
    try:
        data = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
        if (
            data["schema_version"] != version
            or data["duckdb"] != duckdb.__version__
            or data["migrations_sha256"] != _migrations_sha256()
        ):
            return None
        columns = {t: frozenset(cols.items()) for t, cols in data["columns"].items()}
        return columns, dict(data["definitions"])
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return None  # missing or not the shape main writes: the migrations answer instead


def snapshot_text(version: int) -> str:
    """schema_snapshot.json's text for `version`, made by running the migrations."""
    return json.dumps(_as_json(version, from_scratch(version)), indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    from pairstore.files import atomic_write_text
    from pairstore.store.migrations import SCHEMA_VERSION

    atomic_write_text(SNAPSHOT, snapshot_text(SCHEMA_VERSION))
    print(f"wrote {SNAPSHOT} (schema version {SCHEMA_VERSION}, duckdb {duckdb.__version__})")


if __name__ == "__main__":
    main()
