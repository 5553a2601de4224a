"""The benchmark tables: `benchmark_refs` (registered benchmark test items) and `benchmark_ngrams` (their
word n-gram hashes). This module is the one that writes both; pairstore.holdout.ngrams checks a
registration and hashes its items (pairstore.ngram_hash.benchmark_tables) before calling it.

    replace_benchmark(store, "gsm8k-test", refs, ngrams, n=13)

(Re-keying a store remakes both for a new normalization, pairstore.store.rekey: it is the schema's own
upkeep, in the store room below this one.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pairstore.tables.audit_log import log_action

if TYPE_CHECKING:
    import pyarrow as pa

    from pairstore.store.store import Store


def replace_benchmark(store: Store, name: str, refs: pa.Table, ngrams: pa.Table, *, n: int) -> None:
    """Store benchmark `name`'s items (`refs`: item_id, text, match_key, one row per item) and their
    n-grams (`ngrams`: item_id, ngram), replacing an earlier registration of the name, in one
    transaction, logged as `benchmark_register` with the counts stored."""
    con = store.con
    with store.transaction():
        con.execute("DELETE FROM benchmark_ngrams WHERE benchmark = ?", [name])
        con.execute("DELETE FROM benchmark_refs WHERE benchmark = ?", [name])
        with store.registered("_bench_refs", refs), store.registered("_bench_ngrams", ngrams):
            con.execute(
                "INSERT INTO benchmark_refs (benchmark, item_id, text, match_key, n) "
                "SELECT ?, item_id, text, match_key, ? FROM _bench_refs",
                [name, n],
            )
            con.execute(
                "INSERT INTO benchmark_ngrams (benchmark, item_id, ngram) "
                "SELECT DISTINCT ?, item_id, ngram FROM _bench_ngrams",
                [name],
            )
        n_ngrams = store.scalar("SELECT count(*) FROM benchmark_ngrams WHERE benchmark = ?", [name])
        short = refs.num_rows - store.scalar(
            "SELECT count(DISTINCT item_id) FROM benchmark_ngrams WHERE benchmark = ?", [name]
        )
        log_action(
            store,
            "benchmark_register",
            name,
            {"items": refs.num_rows, "n": n, "ngrams": n_ngrams, "items_without_ngrams": short},
        )
