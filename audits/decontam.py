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
DuckDB. A training row's text is its prompt messages, chosen and rejected.
Training text is every registered mixture (the rows `export_rows` records, or
the file's rows when none are recorded) or, with --all-pairs, every pair.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.holdout.ngrams import DEFAULT_N, Vocabulary, arrow_query, text_ngram_table
from pairstore.holdout.scan import folded
from pairstore.ingest.dataset_files import read_dataset
from pairstore.ingest.pair_files import read_pair_file
from pairstore.normalize import word_text
from pairstore.progress import current as current_progress
from pairstore.tables.evals import lm_eval_doc_text

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


def load_benchmark(path, fmt: str | None = None) -> list[BenchmarkItem]:
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


def training_texts(store, *, all_pairs: bool = False) -> tuple[pa.Table, list[str]]:
    """(table of source, round, row_index, pair_id, text; notes). One row per training row."""
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
        return tbl, notes
    parts = []
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
            rows = read_pair_file(ex["path"])
            parts.append(
                pa.table(
                    {
                        "source": [ex["path"]] * len(rows),
                        "round": [ex["round"]] * len(rows),
                        "row_index": pa.array([r.row_index for r in rows], pa.int64()),
                        "pair_id": pa.array([r.pair_id for r in rows], pa.string()),
                        "text": [
                            "\n".join(
                                [m["content"] for m in r.prompt] + [x for x in (r.chosen, r.rejected) if x]
                            )
                            for r in rows
                        ],
                    }
                )
            )
        else:
            notes.append(f"{ex['path']}: missing and no rows recorded; not checked")
    if not parts:
        empty = pa.table(
            {
                "source": pa.array([], pa.string()),
                "round": pa.array([], pa.string()),
                "row_index": pa.array([], pa.int64()),
                "pair_id": pa.array([], pa.string()),
                "text": pa.array([], pa.string()),
            }
        )
        return empty, notes + (["no registered mixtures"] if not exports else [])
    schema = parts[0].schema
    return pa.concat_tables([t.cast(schema) for t in parts]), notes


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


def overlap(
    con, items: list[BenchmarkItem], texts: pa.Array, n: int = DEFAULT_N
) -> list[tuple[int, int, int]]:
    """(text index, item index, shared distinct n-grams) for every overlapping pair; a DuckDB join.

    Both sides are read as the export gate reads them (the gate's benchmark stage is this check): items
    through pairstore.normalize.word_text, training texts through pairstore.holdout.scan.folded (the
    janitor words, with look-alikes, invisible characters, escapes and markup undone first)."""
    item_texts = [word_text(it.text) for it in items]
    vocab = Vocabulary.of_texts(item_texts)
    bench = text_ngram_table(vocab, item_texts, n)
    train = text_ngram_table(vocab, folded(texts), n)
    if bench.num_rows == 0 or train.num_rows == 0:
        return []
    con.register("_dc_bench", bench)
    con.register("_dc_train", train)
    try:
        # Probe first (most training n-grams match nothing), then count distinct shared n-grams.
        return con.execute("""
            WITH t AS (SELECT doc, ngram FROM _dc_train SEMI JOIN _dc_bench USING (ngram))
            SELECT t.doc, b.doc, count(DISTINCT t.ngram)
            FROM t JOIN _dc_bench b USING (ngram)
            GROUP BY ALL ORDER BY 1, 2""").fetchall()
    finally:
        con.unregister("_dc_bench")
        con.unregister("_dc_train")


def items_without_ngrams(items: list[BenchmarkItem], n: int) -> int:
    item_texts = [word_text(it.text) for it in items]
    vocab = Vocabulary.of_texts(item_texts)
    docs = text_ngram_table(vocab, item_texts, n)["doc"].to_numpy()
    return len(items) - len(np.unique(docs))


def decontam(
    store,
    benchmark: str,
    path,
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
    with progress.stage(f"decontam {benchmark}: training rows", unit="rows") as stage:
        texts, notes = training_texts(store, all_pairs=all_pairs)
        stage.advance(texts.num_rows)
    with progress.stage(
        f"decontam {benchmark}: {n}-gram overlap", total=texts.num_rows, unit="rows"
    ) as stage:
        found = overlap(store.con, items, texts["text"], n)
        stage.advance(texts.num_rows)
    src = texts["source"].to_pylist()
    rnd = texts["round"].to_pylist()
    idx = texts["row_index"].to_pylist()
    pid = texts["pair_id"].to_pylist()
    rows = [
        Contaminated(src[t], rnd[t], int(idx[t]), pid[t], items[b].item_id, int(c), items[b].text[:SNIPPET])
        for t, b, c in found
    ]
    size = texts["text"].combine_chunks()
    nbytes = int(pc.sum(pc.binary_length(size)).as_py() or 0) if len(size) else 0
    return DecontamReport(
        benchmark,
        n,
        len(items),
        items_without_ngrams(items, n),
        texts.num_rows,
        nbytes,
        len({t for t, _, _ in found}),
        len({b for _, b, _ in found}),
        rows,
        registered,
        notes,
    )
