"""Ingest of `problems` (this module writes it): GSM8K / MATH train problems from a file, a Hub copy or a
save_to_disk folder.

    pairstore ingest problems --dataset gsm8k --path gsm8k/

The datasets' row shapes are formats (pairstore.ingest.formats: `gsm8k`, `math`); a file is read into
checked Arrow batches (pairstore.ingest.batches), each batch's problems found by the dataset's rules
(pairstore.ingest.math_problems.problem_of: the gold, the subject and level), keyed a batch at a time
and staged in DuckDB, then deduplicated and inserted in one transaction with the ingests log.
"""

from __future__ import annotations

from collections.abc import Iterator
from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ingest.base import PLACE, IngestResult, StagedRows, place_columns, records_in
from pairstore.ingest.batches import Batch, read_columns, record_columns
from pairstore.ingest.dataset_files import dataset_files, files_sha256
from pairstore.ingest.formats import get_format
from pairstore.ingest.math_problems import HUB_DATASETS, TEST_NAME, FieldProblem, problem_of
from pairstore.keys import match_keys_of_texts, nfc_many, xxh128
from pairstore.progress import as_progress
from pairstore.store.store import bounded_memory
from pairstore.tables.ingests import log_ingest

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.progress import Progress
    from pairstore.store.store import Store

_PROBLEM_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),
        ("dataset", pa.string()),
        ("subject", pa.string()),
        ("level", pa.string()),
        ("split", pa.string()),
        ("question", pa.string()),
        ("solution", pa.string()),
        ("gold", pa.string()),
        ("unique_id", pa.string()),
        ("match_key", pa.string()),
        ("source_file", pa.string()),
        ("_hash", pa.string()),
        *PLACE,
    ]
)


def _reading_schema(dataset: str) -> pa.Schema:
    """The dataset format's fields as columns (every one text, as the kinds read them)."""
    fields = [f for f in get_format("problems", dataset).fields if f.kind is not None]
    return pa.schema([(f.name, f.kind.arrow) for f in fields] + [("_row", pa.int64())])  # type: ignore[union-attr]


def _test_split(unique_id: str | None) -> bool:
    """A MATH unique_id of the test split ("test/algebra/1.json")."""
    return unique_id is not None and unique_id.lower().startswith("test/")


def problem_rows(dataset: str, batch: Batch, source: str, seq: int) -> pa.Table:
    """The staged rows (_PROBLEM_SCHEMA) of one checked batch: each row's problem by the dataset's rules,
    the keys computed a batch at a time (NFC in one call, the match keys' normalization in one batch).
    The (question, solution) hash is content_id's JSON of the two NFC texts, written out."""
    t = batch.table
    names = [n for n in t.column_names if n != "_row"]
    problems = []
    for i, values in enumerate(zip(*(t.column(n).to_pylist() for n in names))):
        try:
            p = problem_of(dataset, {n: v for n, v in zip(names, values) if v is not None})
        except FieldProblem as e:
            raise batch.error(i, str(e), e.field) from None
        if _test_split(p.unique_id):
            raise batch.error(
                i,
                f"{p.unique_id!r} is a test-split problem: only train splits become "
                "training problems (test items enter through eval suites and benchmarks)",
                "unique_id",
            )
        problems.append(p)
    n = len(problems)
    questions = [p.question for p in problems]
    nfc_questions = nfc_many(questions)
    nfc_solutions = nfc_many([p.solution for p in problems])
    given = {
        "problem_id": [f"{dataset}:{xxh128(q)}" for q in nfc_questions],
        "dataset": [dataset] * n,
        "subject": [p.subject for p in problems],
        "level": [p.level for p in problems],
        "split": ["train"] * n,
        "question": questions,
        "solution": [p.solution for p in problems],
        "gold": [p.gold for p in problems],
        "unique_id": [p.unique_id for p in problems],
        "match_key": match_keys_of_texts(questions),
        "source_file": [source] * n,
        "_hash": [
            xxh128(f"[{encode_basestring(q)}, {encode_basestring(s)}]")
            for q, s in zip(nfc_questions, nfc_solutions)
        ],
    }
    arrays = {name: pa.array(v, _PROBLEM_SCHEMA.field(name).type) for name, v in given.items()}
    arrays.update(place_columns(n, batch.path, t.column("_row").combine_chunks(), batch.lines, seq))
    return pa.table([arrays[f.name] for f in _PROBLEM_SCHEMA], schema=_PROBLEM_SCHEMA)


def _hub_batches(dataset: str, schema: pa.Schema) -> Iterator[Batch]:
    """The real `datasets` loaders, train split only (offline, this needs the hub cache)."""
    import datasets

    repo, configs = HUB_DATASETS[dataset]
    fmt = get_format("problems", dataset)
    for config in configs:
        ds = datasets.load_dataset(repo, config, split="train")
        yield from record_columns(fmt, schema, enumerate(ds, start=1), repo)


def ingest_problems(
    store: Store,
    dataset: str,
    *,
    path: StrPath | None = None,
    split: str = "train",
    progress: Progress | bool = False,
) -> IngestResult:
    """GSM8K (openai/gsm8k, main) or MATH (EleutherAI/hendrycks_math, every subject; or MATH-500-shaped rows)
    train problems, from the Hub or from `path`: a file, a Hub folder or a save_to_disk folder
    (pairstore.ingest.dataset_files)."""
    if dataset not in HUB_DATASETS:
        raise BadInput(f"unknown dataset {dataset!r} (expected gsm8k or math)", field="dataset")
    if split != "train":
        raise BadInput(
            f"split {split!r} refused: only train splits become training problems "
            "(test items enter through eval suites)",
            field="split",
        )
    fmt = get_format("problems", dataset)
    schema = _reading_schema(dataset)
    files: list[Path] = []
    if path is not None:
        path = Path(path)
        if path.is_file() and TEST_NAME.search(path.name):
            raise BadInput(
                "this looks like a test/validation split (by its file name); only train splits "
                "become training problems (test items enter through eval suites)",
                path=str(path),
            )
        files = dataset_files(path, split="train", configs=HUB_DATASETS[dataset][1])
    where = str(path or HUB_DATASETS[dataset][0])
    result = IngestResult(f"problems:{dataset}", where)
    stages = as_progress(progress)
    staged = StagedRows(store, "problems", ["problem_id"], _PROBLEM_SCHEMA, "_hash", "problem", where)
    with bounded_memory(store.con), store.transaction():
        total = records_in(path) if path else None
        with stages.stage("ingest problems: read", total=total, unit="records") as stage:
            if path is None:
                batches = ((b, HUB_DATASETS[dataset][0]) for b in _hub_batches(dataset, schema))
            else:
                batches = (
                    (b, f.name if f == path else f.relative_to(path).as_posix())
                    for f in files
                    for b in read_columns(fmt, schema, f)
                )
            for batch, source in batches:
                staged.add_table(problem_rows(dataset, batch, source, result.read))
                result.read += batch.table.num_rows
                stage.advance(batch.table.num_rows)
        # Problems are keyed by their question: the same question with another solution is a clash.
        with stages.stage("ingest problems: insert", total=result.read, unit="records") as stage:
            added, repeated = staged.insert("i.solution <> t.solution")
            stage.advance(result.read)
        result.added = added
        if repeated:
            result.skipped["already present"] = repeated
        if path is not None:
            log_ingest(store, path, result.kind, result.read, added, sha256=files_sha256(path, files))
    return result
