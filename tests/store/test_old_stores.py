"""Stores that earlier pairstore commits made open with this one (old_stores/README.md says which):
recognised, migrated to the latest schema, and then what this pairstore's migrations make, definition
by definition, so the check that refuses a store another client changed never refuses an old one."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from pairstore.errors import PairstoreError
from pairstore.store.migrations import MIGRATIONS
from pairstore.store.recognize import changed_definition
from pairstore.store.store import open_store

OLD_STORES = sorted((Path(__file__).parent / "old_stores").glob("*.duckdb.gz"))


def test_every_earlier_schema_version_has_a_store():
    versions = {int(p.name.split("-")[0].removeprefix("schema")) for p in OLD_STORES}
    # version 3's one store is refused (old_stores/README.md says why)
    assert versions >= set(range(2, len(MIGRATIONS))) - {3}


@pytest.mark.parametrize("made", OLD_STORES, ids=lambda p: p.name.removesuffix(".duckdb.gz"))
def test_a_store_an_earlier_pairstore_made_opens_migrated_and_as_the_migrations_make_it(made, tmp_path):
    path = tmp_path / "store.duckdb"
    with gzip.open(made) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    version = int(made.name.split("-")[0].removeprefix("schema"))
    if version < len(MIGRATIONS):  # a reading command leaves it as it is and says how to migrate it
        before = path.read_bytes()
        with pytest.raises(PairstoreError, match=f"at schema version {version}, .* once to migrate it"):
            open_store(path, read_only=True)
        assert path.read_bytes() == before
    with open_store(path) as store:
        assert store.schema_version() == len(MIGRATIONS)
    with open_store(path, read_only=True) as store:  # recognised again, now at the latest version
        assert changed_definition(store.con, len(MIGRATIONS)) is None
