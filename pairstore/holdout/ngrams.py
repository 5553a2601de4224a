"""Benchmark references for the gate: registration and lookup of their word n-grams.

    from pairstore.holdout.ngrams import register_benchmark, benchmark_hits
    register_benchmark(store, "gsm8k-test", [("0", "Janet's ducks lay 16 eggs ..."), ...], n=13)
    benchmark_hits(store, pa.table({"row_index": [...], "text": [...]}), n=13)
        # -> [(row_index, "gsm8k-test", "0"), ...]

CLI: `pairstore audit decontam --benchmark gsm8k-test --path test.jsonl --register`.

The hashing itself (the janitor reading, the vocabulary, the window hashes) is pairstore.ngram_hash, in
the base room, so re-keying a store needs nothing from here; its names are re-exported for the callers
that read them from this module. Registered items are read through pairstore.normalize.word_text first,
so the gate, which reads disguised rows the same way, finds an item written with look-alike letters or
invisible characters. The join with the registered n-grams runs in DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ngram_hash import (
    DEFAULT_N,
    Q,
    Vocabulary,
    arrow_query,
    benchmark_tables,
    check_n,
    text_ngram_table,
    utf8_buffers,
    words,
)
from pairstore.normalize import word_text
from pairstore.tables.benchmarks import replace_benchmark

if TYPE_CHECKING:
    from pairstore.store.store import Store

# Read from here by the gate, the audits and the export (the hashing lives in pairstore.ngram_hash).
__all__ = [
    "DEFAULT_N",
    "Q",
    "Vocabulary",
    "arrow_query",
    "benchmark_hits",
    "benchmark_tables",
    "lookup_ngrams",
    "register_benchmark",
    "registered_vocabulary",
    "text_ngram_table",
    "utf8_buffers",
    "words",
]


def register_benchmark(store: Store, name: str, items: list[tuple[str, str]], n: int = DEFAULT_N) -> int:
    """Store a benchmark's test items and their n-grams so the export gate checks them.

    Replaces an earlier registration of the same name. Returns the number of items stored.
    """
    check_n(n)
    if not name:
        raise BadInput("benchmark name is empty", field="benchmark")
    ids = [str(i) for i, _ in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise BadInput(f"benchmark {name}: item id {dup!r} appears more than once", field="item_id")
    texts = [t if isinstance(t, str) else "" for _, t in items]
    refs, ngrams = benchmark_tables(ids, texts, n)
    replace_benchmark(store, name, refs, ngrams, n=n)
    return len(ids)


def registered_vocabulary(store: Store, n: int = DEFAULT_N) -> Vocabulary | None:
    """The vocabulary of every benchmark registered with this n (None when there is none)."""
    tbl = arrow_query(store.con, "SELECT text FROM benchmark_refs WHERE n = ?", [n])
    if tbl.num_rows == 0:
        return None
    return Vocabulary.of_texts([word_text(t) for t in tbl["text"].to_pylist()])


def lookup_ngrams(
    store: Store, row_index: np.ndarray, ngrams: np.ndarray, n: int = DEFAULT_N
) -> list[tuple[int, str, str]]:
    """Distinct (row_index, benchmark, item_id) whose registered n-grams include one of (row_index, ngram)."""
    cand = pa.table({"row_index": pa.array(row_index, pa.int64()), "ngram": pa.array(ngrams, pa.uint64())})
    with store.registered("_cand_ngrams", cand):
        rows = store.con.execute(
            """
            SELECT DISTINCT c.row_index, g.benchmark, g.item_id
            FROM _cand_ngrams c
            JOIN benchmark_ngrams g ON g.ngram = c.ngram
            JOIN benchmark_refs r ON r.benchmark = g.benchmark AND r.item_id = g.item_id AND r.n = ?
            ORDER BY 1, 2, 3""",
            [n],
        ).fetchall()
    return [(int(r), b, i) for r, b, i in rows]


def benchmark_hits(store: Store, texts: pa.Table, n: int = DEFAULT_N) -> list[tuple[int, str, str]]:
    """Rows of `texts` (row_index int64, text string) sharing an n-gram with a registered benchmark item.

    Returns sorted, distinct (row_index, benchmark, item_id).
    """
    check_n(n)
    if texts.num_rows == 0:
        return []
    vocab = registered_vocabulary(store, n)
    if vocab is None:
        return []
    table = text_ngram_table(vocab, texts["text"], n)
    if table.num_rows == 0:
        return []
    row_index = texts["row_index"].combine_chunks().cast(pa.int64()).take(table["doc"])
    return lookup_ngrams(store, row_index.to_numpy(), table["ngram"].combine_chunks().to_numpy(), n)
