"""Decontamination: word n-gram overlap between training text and a benchmark's test items.

    pairstore audit decontam --benchmark gsm8k-test --path gsm8k/test.jsonl     # registered mixtures
    pairstore audit decontam --benchmark math500 --path math500.jsonl --all-pairs --n 8
    pairstore audit decontam --benchmark ifeval --path ifeval.jsonl --register  # + export gate checks it

As in lm-evaluation-harness (punctuation a word break instead of deleted, and every text read through the
holdout gate's normalization first, so this audit and the gate's benchmark stage agree): texts are
normalized (ASCII lower-case, punctuation deleted), split on whitespace, and a training row is contaminated
when it shares any n-gram (13 words by default) with a test item. The test item's text is what lm-eval uses
as its decontamination query: the question (GSM8K, MMLU), the problem (MATH), the prompt (IFEval); from an
lm-eval samples log (samples_*.jsonl), the question of each record's `doc` (the few-shot examples in
`arguments` are not test items).

Hashing is vectorized (pairstore.holdout.ngrams: numpy over the Arrow buffers, only
the benchmark's distinct words hashed in Python) and the overlap is a join in
DuckDB. Training text is every registered mixture (the rows `export_rows` records, or
the file's rows when none are recorded) or, with --all-pairs, every pair. A stored row's text
is its prompt messages, chosen and rejected. A file is read as the leak audit reads it
(pairstore.holdout.file_texts: every string of every record, whatever its column), in
batches, each distinct string once (copies across batches found by fingerprint,
pairstore.holdout.text_set); a row's shared n-grams are those of its strings together. Memory
stays flat in the file's size.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.holdout.file_texts import RecordTexts, other_strings, read_file_texts
from pairstore.holdout.ngrams import DEFAULT_N, Vocabulary, arrow_query, text_ngram_table
from pairstore.holdout.scan import folded
from pairstore.ingest.dataset_files import read_dataset
from pairstore.normalize import word_text
from pairstore.progress import current as current_progress
from pairstore.tables.evals import lm_eval_doc_text

if TYPE_CHECKING:
    from pairstore.holdout.text_set import TextSet
    from pairstore.progress import Stage
    from pairstore.store.store import Store

FORMATS = ("gsm8k", "math", "mmlu", "ifeval", "text", "lm-eval")
ID_FIELDS = ("id", "unique_id", "key", "doc_id", "item_id", "task_id")
TEXT_FIELD = {"gsm8k": "question", "math": "problem", "mmlu": "question", "ifeval": "prompt", "text": "text"}
SNIPPET = 160


@dataclass(frozen=True)
class BenchmarkItem:
    item_id: str
    text: str


def detect_format(rec: dict) -> str | None:
    """The benchmark format a record looks like (None: unknown)."""
    if isinstance(rec.get("doc"), dict) and "doc_id" in rec:
        return "lm-eval"  # an lm-evaluation-harness samples_*.jsonl record
    if "instruction_id_list" in rec and "prompt" in rec:
        return "ifeval"
    if "problem" in rec:
        return "math"
    if "question" in rec and ("choices" in rec or "A" in rec or "subject" in rec):
        return "mmlu"
    if "question" in rec:
        return "gsm8k"
    if "text" in rec:
        return "text"
    return None


def _read_mmlu_csv(path: Path) -> list[tuple[int, dict]]:
    """The original MMLU CSV layout: question, A, B, C, D, answer (no header)."""
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        for line, row in enumerate(csv.reader(f), start=1):
            if len(row) != 6:
                raise BadInput(
                    f"expected 6 columns (question, A, B, C, D, answer), got {len(row)}",
                    path=str(path),
                    line=line,
                )
            out.append((line, {"question": row[0], "choices": row[1:5], "answer": row[5]}))
    if not out:
        raise BadInput("no rows", path=str(path))
    return out


def load_benchmark(path: str | Path, fmt: str | None = None) -> list[BenchmarkItem]:
    """Test items of a local benchmark: a JSONL or parquet file, its Hub folder or save_to_disk folder (the
    test split), or an MMLU CSV; ids from an id field or the row."""
    path = Path(path)
    if fmt is not None and fmt not in FORMATS:
        raise BadInput(
            f"unknown benchmark format {fmt!r} (expected one of {', '.join(FORMATS)})", field="format"
        )
    if not path.exists():
        raise BadInput("no such file", path=str(path))
    if path.suffix.lower() == ".csv":
        records = _read_mmlu_csv(path)
    else:  # a file, a Hub folder layout or a save_to_disk folder: the test split
        records = [(r.line, r.record) for r in read_dataset(path, split="test")]
    items: list = []
    seen: dict = {}
    for index, (line, rec) in enumerate(records):
        kind = fmt or detect_format(rec)
        if kind is None:
            raise BadInput(
                "cannot tell the benchmark format (no question, problem, prompt or text field); "
                "pass --format",
                path=str(path),
                line=line,
            )
        name = TEXT_FIELD.get(kind, "doc")
        text = lm_eval_doc_text(rec.get("doc")) if kind == "lm-eval" else rec.get(name)
        if not isinstance(text, str) or not text.strip():
            raise BadInput("missing or empty test item text", path=str(path), line=line, field=name)
        item_id = next(
            (
                str(rec[k])
                for k in ID_FIELDS
                if isinstance(rec.get(k), (str, int)) and not isinstance(rec.get(k), bool)
            ),
            str(index),
        )
        if item_id in seen:
            if kind == "lm-eval" and seen[item_id] == text:
                continue  # the same doc under another filter
            raise BadInput(f"item id {item_id!r} appears twice", path=str(path), line=line)
        seen[item_id] = text
        items.append(BenchmarkItem(item_id, text))
    return items


# -- training text -------------------------------------------------------------

_PAIR_TEXT_SQL = (
    "array_to_string(list_transform(p.prompt, lambda m: m.content), chr(10)) || chr(10) || p.chosen "
    "|| coalesce(chr(10) || p.rejected, '')"
)


def _empty_texts() -> pa.Table:
    return pa.table(
        {
            "source": pa.array([], pa.string()),
            "round": pa.array([], pa.string()),
            "row_index": pa.array([], pa.int64()),
            "pair_id": pa.array([], pa.string()),
            "text": pa.array([], pa.string()),
        }
    )


@dataclass
class TrainingFile:
    """A registered mixture read from its file (no rows recorded for it in the store)."""

    path: str
    round: str | None


def training_sources(
    store: Store, *, all_pairs: bool = False
) -> tuple[list[pa.Table | TrainingFile], list[str]]:
    """(the training text in parts: tables of source, round, row_index, pair_id, text, one row per training
    row, read from the store; or files to stream; notes)."""
    notes: list[str] = []
    con = store.con
    if all_pairs:
        tbl = arrow_query(
            con,
            f"""
            SELECT 'pairs' AS source, NULL::VARCHAR AS round, \
(row_number() OVER (ORDER BY p.pair_id) - 1)::BIGINT
                   AS row_index, p.pair_id, {_PAIR_TEXT_SQL} AS text
            FROM pairs p ORDER BY p.pair_id""",
        )
        return [tbl], notes
    parts: list[pa.Table | TrainingFile] = []
    exports = store.rows(
        "SELECT export_id, round, path, (SELECT count(*) FROM export_rows r "
        "WHERE r.export_id = e.export_id) AS n FROM exports e ORDER BY created_at, export_id"
    )
    for ex in exports:
        if ex["n"]:
            parts.append(
                arrow_query(
                    con,
                    f"""
                SELECT ?::VARCHAR AS source, ?::VARCHAR AS round, r.row_index,
                       p.pair_id, {_PAIR_TEXT_SQL} AS text
                FROM export_rows r JOIN pairs p USING (pair_id)
                WHERE r.export_id = ? ORDER BY r.row_index""",
                    [ex["path"], ex["round"], ex["export_id"]],
                )
            )
        elif Path(ex["path"]).exists():
            parts.append(TrainingFile(ex["path"], ex["round"]))
        else:
            notes.append(f"{ex['path']}: missing and no rows recorded; not checked")
    if not parts and not exports:
        notes.append("no registered mixtures")
    return parts, notes


def training_texts(store: Store, *, all_pairs: bool = False) -> tuple[pa.Table, list[str]]:
    """(table of source, round, row_index, pair_id, text; notes): one row per stored training row (files
    are streamed by decontam, not read here)."""
    parts, notes = training_sources(store, all_pairs=all_pairs)
    tables = [p for p in parts if isinstance(p, pa.Table)]
    if not tables:
        return _empty_texts(), notes
    schema = tables[0].schema
    return pa.concat_tables([t.cast(schema) for t in tables]), notes


# -- the audit -------------------------------------------------------------------


@dataclass
class Contaminated:
    source: str
    round: str | None
    row_index: int
    pair_id: str | None
    item_id: str
    shared_ngrams: int
    item_text: str

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "round": self.round,
            "row_index": self.row_index,
            "pair_id": self.pair_id,
            "item_id": self.item_id,
            "shared_ngrams": self.shared_ngrams,
            "item_text": self.item_text,
        }


@dataclass
class DecontamReport:
    benchmark: str
    n: int
    items: int
    items_without_ngrams: int  # fewer than n words: only an exact match could find them
    training_rows: int
    training_bytes: int
    contaminated_rows: int
    contaminated_items: int
    rows: list[Contaminated] = field(default_factory=list)
    registered: bool = False
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "benchmark": self.benchmark,
            "n": self.n,
            "items": self.items,
            "items_without_ngrams": self.items_without_ngrams,
            "training_rows": self.training_rows,
            "training_bytes": self.training_bytes,
            "contaminated_rows": self.contaminated_rows,
            "contaminated_items": self.contaminated_items,
            "registered": self.registered,
            "notes": self.notes,
            "rows": [r.as_dict() for r in self.rows],
        }


class PreparedItems:
    """A benchmark's items as the export gate's benchmark stage reads them: word texts (through
    pairstore.normalize.word_text), their vocabulary and their n-grams (doc = the item's index)."""

    def __init__(self, items: list[BenchmarkItem], n: int = DEFAULT_N) -> None:
        self.n = n
        texts = [word_text(it.text) for it in items]
        self.vocab = Vocabulary.of_texts(texts)
        self.ngrams = text_ngram_table(self.vocab, texts, n)

    @property
    def with_ngrams(self) -> int:
        """Items of n words or more (the others only an exact match could find)."""
        return len(np.unique(self.ngrams["doc"].to_numpy()))

    def shared(self, con: duckdb.DuckDBPyConnection, texts: pa.Array) -> pa.Table:
        """(doc, item, ngram): every distinct n-gram a text shares with an item. Training texts are read
        through pairstore.holdout.scan.folded (the janitor words, with look-alikes, invisible characters,
        escapes and markup undone first)."""
        train = text_ngram_table(self.vocab, folded(texts), self.n)
        if self.ngrams.num_rows == 0 or train.num_rows == 0:
            return pa.table(
                {
                    "doc": pa.array([], pa.int64()),
                    "item": pa.array([], pa.int64()),
                    "ngram": pa.array([], pa.uint64()),
                }
            )
        con.register("_dc_bench", self.ngrams)
        con.register("_dc_train", train)
        try:
            # Probe first (most training n-grams match nothing), then pair the few left with the items.
            return arrow_query(
                con,
                """
                WITH t AS (SELECT DISTINCT doc, ngram FROM _dc_train SEMI JOIN _dc_bench USING (ngram))
                SELECT t.doc, b.doc AS item, t.ngram FROM t JOIN (SELECT DISTINCT doc, ngram FROM _dc_bench) b
                USING (ngram) ORDER BY 1, 2, 3""",
            )
        finally:
            con.unregister("_dc_bench")
            con.unregister("_dc_train")


def overlap(
    con: duckdb.DuckDBPyConnection, items: list[BenchmarkItem], texts: pa.Array, n: int = DEFAULT_N
) -> list[tuple[int, int, int]]:
    """(text index, item index, shared distinct n-grams) for every overlapping pair; a DuckDB join.

    Both sides are read as the export gate reads them (the gate's benchmark stage is this check): items
    through pairstore.normalize.word_text, training texts through pairstore.holdout.scan.folded."""
    return _counts(PreparedItems(items, n).shared(con, texts))


def _counts(shared: pa.Table) -> list[tuple[int, int, int]]:
    if shared.num_rows == 0:
        return []
    grouped = shared.group_by(["doc", "item"]).aggregate([("ngram", "count_distinct")])
    out = zip(
        grouped["doc"].to_pylist(), grouped["item"].to_pylist(), grouped["ngram_count_distinct"].to_pylist()
    )
    return sorted((int(d), int(i), int(c)) for d, i, c in out)


def items_without_ngrams(items: list[BenchmarkItem], n: int) -> int:
    return len(items) - PreparedItems(items, n).with_ngrams


def _text_set() -> TextSet:
    # imported here: text_set compiles with numba, whose import (and scipy's with it) is a fifth of a
    # second that `pairstore --help` and every other command would pay (pairstore.compiled)
    from pairstore.holdout.text_set import TextSet

    return TextSet()


@dataclass
class _FileScan:
    """Shared n-grams of a file's strings, each distinct string read once (fingerprints across batches)."""

    seen: TextSet = field(default_factory=_text_set)
    # fingerprint of a string that shares n-grams -> its (item, ngram) pairs
    shared_of: dict = field(default_factory=dict)
    rows: int = 0
    nbytes: int = 0


_STRING_SEED = 7


def _file_rows(
    con: duckdb.DuckDBPyConnection,
    prepared: PreparedItems,
    items: list[BenchmarkItem],
    f: TrainingFile,
    scan: _FileScan,
    stage: Stage,
) -> list[Contaminated]:
    """The contaminated rows of a registered mixture's file, streamed (see the module docstring)."""
    found: list[Contaminated] = []
    for batch in read_file_texts(f.path):
        scan.rows += batch.records
        found += _batch_rows(con, prepared, items, f, scan, batch)
        stage.advance(batch.records)
    return found


def _batch_rows(
    con: duckdb.DuckDBPyConnection,
    prepared: PreparedItems,
    items: list[BenchmarkItem],
    f: TrainingFile,
    scan: _FileScan,
    batch: RecordTexts,
) -> list[Contaminated]:
    from pairstore.holdout.text_set import fingerprints  # numba: imported where it runs (_text_set)

    other_row, other_text = other_strings(batch)
    texts = pa.concat_arrays([batch.user_text, other_text])
    rows = np.concatenate([batch.user_row, other_row])
    scan.nbytes += int(pc.sum(pc.binary_length(texts)).as_py() or 0) if len(texts) else 0
    if not len(texts):
        return []
    enc = texts.dictionary_encode()
    uniq, index = enc.dictionary, np.asarray(enc.indices).astype(np.int64)
    lo, hi = fingerprints(uniq, _STRING_SEED)
    fresh = np.flatnonzero(scan.seen.add_fingerprints(lo, hi))
    if len(fresh):
        shared = prepared.shared(con, uniq.take(pa.array(fresh)))
        docs = shared["doc"].to_numpy()
        pairs = np.stack([shared["item"].to_numpy(), shared["ngram"].to_numpy().astype(np.int64)], axis=1)
        for d in np.unique(docs).tolist():
            u = int(fresh[d])
            scan.shared_of[(int(lo[u]), int(hi[u]))] = pairs[docs == d]
    if not scan.shared_of:
        return []
    per_row: dict[int, list[np.ndarray]] = {}
    for u in range(len(uniq)):
        got = scan.shared_of.get((int(lo[u]), int(hi[u])))
        if got is not None:
            for r in np.unique(rows[index == u]).tolist():
                per_row.setdefault(r, []).append(got)
    out = []
    pair_ids = batch.pair_id.to_pylist() if per_row else []
    for r in sorted(per_row):
        both = np.unique(np.concatenate(per_row[r]), axis=0)
        items_of, counts = np.unique(both[:, 0], return_counts=True)
        for b, c in zip(items_of.tolist(), counts.tolist()):
            it = items[b]
            out.append(
                Contaminated(
                    f.path, f.round, batch.first_row + r, pair_ids[r], it.item_id, int(c), it.text[:SNIPPET]
                )
            )
    return out


def decontam(
    store: Store,
    benchmark: str,
    path: str | Path | list[BenchmarkItem],
    *,
    n: int = DEFAULT_N,
    fmt: str | None = None,
    all_pairs: bool = False,
    registered: bool = False,
) -> DecontamReport:
    """Every training row sharing an n-gram with a test item. `path`: the benchmark's file, or its items
    (load_benchmark). Read-only: storing the benchmark for the gate is pairstore.holdout.ngrams's
    register_benchmark, which `pairstore audit decontam --register` calls first (`registered` says so)."""
    if not isinstance(n, int) or n < 1:
        raise BadInput(f"--n must be a positive integer, got {n!r}", field="n")
    progress = current_progress()
    with progress.stage(f"decontam {benchmark}: read", unit="items") as stage:
        items = path if isinstance(path, list) else load_benchmark(path, fmt)
        stage.advance(len(items))
    prepared = PreparedItems(items, n)
    parts, notes = training_sources(store, all_pairs=all_pairs)
    rows: list[Contaminated] = []
    training_rows = 0
    nbytes = 0
    scan = _FileScan()
    contaminated: set[tuple[int, int]] = set()  # (part, row)
    with progress.stage(f"decontam {benchmark}: {n}-gram overlap", unit="rows") as stage:
        for k, part in enumerate(parts):
            if isinstance(part, TrainingFile):
                before = (scan.rows, scan.nbytes)
                found_rows = _file_rows(store.con, prepared, items, part, scan, stage)
                contaminated |= {(k, r.row_index) for r in found_rows}
                rows += found_rows
                training_rows += scan.rows - before[0]
                nbytes += scan.nbytes - before[1]
                continue
            found = _counts(prepared.shared(store.con, part["text"]))
            contaminated |= {(k, t) for t, _, _ in found}
            src, rnd = part["source"].to_pylist(), part["round"].to_pylist()
            idx, pid = part["row_index"].to_pylist(), part["pair_id"].to_pylist()
            rows += [
                Contaminated(
                    src[t], rnd[t], int(idx[t]), pid[t], items[b].item_id, int(c), items[b].text[:SNIPPET]
                )
                for t, b, c in found
            ]
            training_rows += part.num_rows
            text = part["text"].combine_chunks()
            nbytes += int(pc.sum(pc.binary_length(text)).as_py() or 0) if len(text) else 0
            stage.advance(part.num_rows)
    return DecontamReport(
        benchmark,
        n,
        len(items),
        len(items) - prepared.with_ngrams,
        training_rows,
        nbytes,
        len(contaminated),
        len({r.item_id for r in rows}),
        rows,
        registered,
        notes,
    )
