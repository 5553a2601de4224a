"""`pairs` and `pair_origins` keep their keys unique without a DuckDB index (migration m010): every way
pairs are written adds only what is not stored yet, whatever repeats within and across writes."""

from __future__ import annotations

from unittest import mock

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pairstore.store.store import open_store
from pairstore.tables import pairs as pairs_table
from pairstore.tables.pairs import (
    ORIGIN_TABLE_SCHEMA,
    PAIR_TABLE_SCHEMA,
    Origin,
    Pair,
    PairStage,
    add_pair_tables,
    add_pairs,
    pair_rows,
)

# A pair is (prompt number, chosen number) with a few origins; small ranges make repeats common.
pair_specs = st.tuples(
    st.integers(0, 5), st.integers(0, 3), st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True)
)
writes = st.lists(
    st.tuples(st.sampled_from(["add_pairs", "add_pair_tables", "stage"]), st.lists(pair_specs, max_size=8)),
    min_size=1,
    max_size=6,
)


def _pair(prompt: int, chosen: int, origins: list[int]) -> Pair:
    return Pair(
        prompt=f"question {prompt}",
        chosen=f"answer {chosen}",
        rejected="a wrong answer",
        source="self_repair",
        origins=[Origin("generation", f"g{prompt}-{o}", f"rule {o}") for o in origins],
    )


def _tables(pairs: list[Pair]) -> tuple[pa.Table, pa.Table]:
    """The Arrow input of add_pair_tables (repeats kept, each row's position as `_order`)."""
    pair_rows_: list[dict] = []
    origin_rows: list[dict] = []
    for i, p in enumerate(pairs):
        _, one_pair, one_origins = pair_rows([p], miner="ingest-pairs", miner_version="1")
        pair_rows_ += [{**r, "_order": i} for r in one_pair.to_pylist()]
        origin_rows += [{**r, "_order": i} for r in one_origins.to_pylist()]
    return (
        pa.Table.from_pylist(pair_rows_, schema=PAIR_TABLE_SCHEMA),
        pa.Table.from_pylist(origin_rows, schema=ORIGIN_TABLE_SCHEMA),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=writes)
def test_every_writer_keeps_pair_and_origin_keys_unique(tmp_path_factory, writes):
    with open_store(tmp_path_factory.mktemp("keys") / "s.duckdb") as store:
        expected_pairs: set[str] = set()
        expected_origins: set[tuple] = set()
        for how, specs in writes:
            pairs = [_pair(*spec) for spec in specs]
            if how == "add_pairs":
                add_pairs(store, pairs, miner="m", miner_version="1")
            elif how == "add_pair_tables":
                add_pair_tables(store, *_tables(pairs))
            else:
                with PairStage(store, miner="m", miner_version="1") as stage:
                    half = len(pairs) // 2
                    with store.transaction():
                        stage.add(pairs[:half])
                    with store.transaction():
                        stage.add(pairs[half:])
                    stage.commit()
            expected_pairs |= {p.pair_id for p in pairs}
            expected_origins |= {(p.pair_id, o.kind, o.id) for p in pairs for o in p.origins}
        stored = store.rows("SELECT pair_id FROM pairs")
        origins = store.rows("SELECT pair_id, origin_kind, origin_id FROM pair_origins")
        assert sorted(r["pair_id"] for r in stored) == sorted(expected_pairs)
        assert sorted(tuple(r.values()) for r in origins) == sorted(expected_origins)
        assert store.scalar("SELECT count(*) FROM duckdb_tables() WHERE temporary") == 0


# A row is (prompt number, chosen number, source number, origin numbers, rule number): rows that share a
# pair_id or an origin key differ in what the first of them decides (source, rule).
row_specs = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.integers(0, 2),
        st.integers(0, 2),
        st.lists(st.integers(0, 2), min_size=1, max_size=2, unique=True),
        st.integers(0, 2),
    ),
    max_size=12,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=row_specs, second=row_specs, chunk=st.integers(1, 5))
def test_a_commit_in_chunks_stores_what_one_insert_stores(tmp_path_factory, first, second, chunk):
    """add_pair_tables inserts COMMIT_CHUNK_ROWS positions at a time: whatever the chunk, the same rows
    (the first of each key by position, across chunks too) in the same order, the same counts, as one
    insert of all."""

    def pairs_of(specs):
        return [
            Pair(
                prompt=f"question {q}",
                chosen=f"answer {c}",
                rejected="a wrong answer",
                source=f"source {s}",
                origins=[Origin("generation", f"g{q}-{o}", f"rule {r}") for o in origins],
            )
            for q, c, s, origins, r in specs
        ]

    def stored(chunk_rows):
        with (
            mock.patch.object(pairs_table, "COMMIT_CHUNK_ROWS", chunk_rows),
            open_store(tmp_path_factory.mktemp("chunks") / "s.duckdb") as store,
        ):
            counts = [
                add_pair_tables(store, *_tables(pairs_of(specs))).as_dict() for specs in (first, second)
            ]
            return (
                counts,
                store.rows("SELECT pair_id, source FROM pairs ORDER BY rowid"),  # the order an export keeps
                store.rows("SELECT * EXCLUDE (created_at) FROM pair_origins ORDER BY ALL"),
            )

    got = stored(chunk)
    assert got == stored(10_000)
    # the pairs stored in the order of their first row, each with that row's source
    firsts: dict[str, str] = {}
    for p in pairs_of(first) + pairs_of(second):
        firsts.setdefault(p.pair_id, p.source)
    assert [(r["pair_id"], r["source"]) for r in got[1]] == list(firsts.items())
