"""Ingest of `problems` (this module writes it): GSM8K / MATH train problems from a file, a Hub copy or a
save_to_disk folder.

    pairstore ingest problems --dataset gsm8k --path gsm8k/
"""

from __future__ import annotations

from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.ingest.base import (
    IngestResult,
    StagedRows,
    dedup_in_file,
    insert_new,
    log_ingest,
    progress_bar,
    records_in,
)
from pairstore.ingest.bulk import (
    FlaggedRecord,
    NotVectorized,
    bounded_memory,
    count_lines,
    first_flagged,
    first_record_error,
    flag_text,
    iter_jsonl_batches,
)
from pairstore.ingest.dataset_files import DatasetRecord, dataset_files, files_sha256, read_files
from pairstore.ingest.math_problems import (
    HUB_DATASETS,
    TEST_NAME,
    ProblemFields,
    gsm8k_gold,
    last_boxed,
    problem_fields,
)
from pairstore.ingest.records import Fields
from pairstore.keys import content_id, match_key, match_keys_of_texts, nfc_many, xxh128
from pairstore.progress import as_progress

if TYPE_CHECKING:
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
        ("_line", pa.int64()),
        ("_hash", pa.string()),
        ("_file", pa.string()),
    ]
)


def _test_split(unique_id: str | None) -> bool:
    """A MATH unique_id of the test split ("test/algebra/1.json")."""
    return unique_id is not None and unique_id.lower().startswith("test/")


def _problem_row(dataset: str, p: ProblemFields, source: str, path, line: int) -> dict:
    """The stored row of one checked problem, with its keys (both ingest paths build rows here)."""
    return {
        "problem_id": f"{dataset}:{content_id(p.question)}",
        "dataset": dataset,
        "subject": p.subject,
        "level": p.level,
        "split": "train",
        "question": p.question,
        "solution": p.solution,
        "gold": p.gold,
        "unique_id": p.unique_id,
        "match_key": match_key(p.question),
        "source_file": source,
        "_line": line,
        "_hash": content_id(p.question, p.solution),
        "_file": str(path),
    }


def _problem_rows(dataset: str, records) -> list[dict]:
    rows = []
    for r in records:
        f = Fields(r.record, r.path, r.line)
        p = problem_fields(dataset, f)
        if _test_split(p.unique_id):
            raise f.error(
                "unique_id",
                f"{p.unique_id!r} is a test-split problem: only train splits become "
                "training problems (test items enter through eval suites and benchmarks)",
            )
        rows.append(_problem_row(dataset, p, r.source, r.path, r.line))
    return rows


# The string columns the vectorized path reads, per dataset. MATH's `answer` and `level` may be strings
# or integers, so pyarrow infers their type (_INFERRED; a file that mixes the two in one column is
# refused by the reader and takes the per-record path).
_BULK_SCHEMAS = {
    "gsm8k": pa.schema([("question", pa.string()), ("answer", pa.string())]),
    "math": pa.schema(
        [
            ("problem", pa.string()),
            ("solution", pa.string()),
            ("type", pa.string()),
            ("subject", pa.string()),
            ("unique_id", pa.string()),
        ]
    ),
}


_INFERRED = ("answer", "level")


def _inferred(table: pa.Table, name: str) -> pa.ChunkedArray:
    """A column whose type pyarrow inferred: strings, integers or nothing but nulls (all nulls when no
    record has the field); NotVectorized for any other type (a float, a bool, an object: the per-record
    parser names it)."""
    if name not in table.column_names:
        return pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    col = table.column(name)
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    if pa.types.is_string(col.type) or pa.types.is_int64(col.type):
        return col
    raise NotVectorized(f"{name}: {col.type}")


def _math_columns(table: pa.Table) -> tuple[list, dict]:
    """The vectorized versions of problem_fields' MATH checks (flags) and the columns ProblemFields is built
    from: the subject is `type` or else `subject` (Fields.str of `subject` only when `type` is absent), an
    integer level is written "Level N", an integer answer is its decimal text."""
    col = table.column
    kind, subject = col("type"), col("subject")
    level, answer = _inferred(table, "level"), _inferred(table, "answer")
    flags = [
        flag_text(col("problem")),
        flag_text(col("solution")),
        flag_text(kind, required=False),
        pc.and_(pc.is_null(kind), flag_text(subject, required=False)),
        flag_text(col("unique_id"), required=False),
    ]
    if pa.types.is_int64(level.type):
        level = pc.binary_join_element_wise("Level ", pc.cast(level, pa.string()), "")
    else:
        flags.append(flag_text(level, required=False))
    if pa.types.is_int64(answer.type):
        answer = pc.cast(answer, pa.string())
    columns = {
        "question": col("problem"),
        "solution": col("solution"),
        "answer": answer,
        "subject": pc.coalesce(kind, subject),
        "level": level,
        "unique_id": col("unique_id"),
    }
    return flags, columns


def _batch_problems(dataset: str, table: pa.Table) -> list[ProblemFields] | int:
    """The ProblemFields of every row of a batch, or the index of the first row the per-record parser must
    look at: the type and blank checks in Arrow compute, the gold (and the test-split id) in Python, row by
    row, as problem_fields finds them."""
    if dataset == "gsm8k":
        questions, solutions = table.column("question"), table.column("answer")
        hit = first_flagged(flag_text(questions), flag_text(solutions))
        if hit is not None:
            return hit
        out = []
        for i, (q, s) in enumerate(zip(questions.to_pylist(), solutions.to_pylist())):
            gold = gsm8k_gold(s)
            if gold is None:
                return i
            out.append(ProblemFields(q, s, gold))
        return out
    flags, columns = _math_columns(table)
    hit = first_flagged(*flags)
    if hit is not None:
        return hit
    out = []
    values = (
        columns[n].to_pylist() for n in ("question", "solution", "answer", "subject", "level", "unique_id")
    )
    for i, (q, s, answer, subject, level, uid) in enumerate(zip(*values)):
        gold = (answer or "").strip() or last_boxed(s)
        if gold is None or _test_split(uid):
            return i
        out.append(ProblemFields(q, s, gold, subject=subject, level=level, unique_id=uid))
    return out


def _bulk_rows(dataset: str, problems: list[ProblemFields], file: Path, before: int) -> pa.Table:
    """The staged rows (_PROBLEM_SCHEMA) of one checked batch: what _problem_row makes of each problem, the
    keys computed a batch at a time (pairstore.keys: NFC in one call, the match keys' normalization in one
    batch). The (question, solution) hash is content_id's JSON of the two NFC texts, written out.
    `before`: records of the file before the batch."""
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
        "source_file": [file.name] * n,
        "_line": range(before + 1, before + n + 1),
        "_hash": [
            xxh128(f"[{encode_basestring(q)}, {encode_basestring(s)}]")
            for q, s in zip(nfc_questions, nfc_solutions)
        ],
        "_file": [str(file)] * n,
    }
    return pa.table([pa.array(given[f.name], f.type) for f in _PROBLEM_SCHEMA], schema=_PROBLEM_SCHEMA)


def _ingest_vectorized(store: Store, dataset: str, path, files, result: IngestResult, progress) -> bool:
    """A single JSONL file read in Arrow batches, checked with Arrow compute, each batch's rows keyed in
    Python a batch at a time (the content ids and match keys no SQL function computes) and staged in DuckDB
    (pairstore.ingest.base.StagedRows), then deduplicated and inserted in SQL with the ingests log, in one
    transaction. False (nothing written) when the file, or a record the checks leave to problem_fields,
    takes the per-record path; a flagged record that problem_fields refuses raises its error here,
    naming its line and field."""
    if len(files) != 1 or Path(files[0]) != Path(path):
        return False
    file = Path(files[0])
    staged = StagedRows(store, "problems", ["problem_id"], _PROBLEM_SCHEMA, "_hash", "problem", file)
    read = 0
    try:
        with bounded_memory(store.con), store.transaction():
            with progress.stage("ingest problems: read", total=records_in(file), unit="records") as stage:
                for table in iter_jsonl_batches(
                    file, _BULK_SCHEMAS[dataset], keep=_INFERRED if dataset == "math" else ()
                ):
                    problems = _batch_problems(dataset, table)
                    if isinstance(problems, int):
                        raise FlaggedRecord(read + problems)
                    staged.add_table(_bulk_rows(dataset, problems, file, read))
                    read += table.num_rows
                    stage.advance(table.num_rows)
            if not read or read != count_lines(file):
                raise NotVectorized("blank lines: row numbers would not be line numbers")
            with progress.stage("ingest problems: insert", total=read, unit="records") as stage:
                # Problems are keyed by their question: the same question with another solution is a clash.
                added, repeated = staged.insert("i.solution <> t.solution")
                stage.advance(read)
            result.read, result.added = read, added
            if repeated:
                result.skipped["already present"] = repeated
            log_ingest(store, path, result.kind, read, added, sha256=files_sha256(path, files))
    except FlaggedRecord as flagged:
        staged.close()
        first_record_error(read_files(path, files), flagged.index, lambda r: _problem_rows(dataset, [r]))
        return False
    except NotVectorized:
        staged.close()
        return False
    return True


def _load_hub_records(dataset: str):
    """The real `datasets` loaders, train split only (offline, this needs the hub cache)."""
    import datasets

    repo, configs = HUB_DATASETS[dataset]
    for config in configs:
        ds = datasets.load_dataset(repo, config, split="train")
        for row, rec in enumerate(ds, start=1):
            yield DatasetRecord(Path(repo), row, rec, repo)


def ingest_problems(
    store: Store, dataset: str, *, path=None, split: str = "train", progress: bool = False
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
    if path is not None:
        path = Path(path)
        if path.is_file() and TEST_NAME.search(path.name):
            raise BadInput(
                "this looks like a test/validation split (by its file name); only train splits "
                "become training problems (test items enter through eval suites)",
                path=str(path),
            )
        files = dataset_files(path, split="train", configs=HUB_DATASETS[dataset][1])
        records = read_files(path, files)
    else:
        records = _load_hub_records(dataset)
    result = IngestResult(f"problems:{dataset}", str(path or HUB_DATASETS[dataset][0]))
    if path is not None and _ingest_vectorized(store, dataset, path, files, result, as_progress(progress)):
        return result
    result = IngestResult(f"problems:{dataset}", str(path or HUB_DATASETS[dataset][0]))
    rows = _problem_rows(dataset, progress_bar(records, progress, dataset, path=path))
    result.read = len(rows)
    where = str(path or HUB_DATASETS[dataset][0])
    rows, dup = dedup_in_file(rows, lambda r: r["problem_id"], "_hash", "problem", where)
    with store.transaction():
        # Problems are keyed by their question: the same question with another solution is a clash.
        added, same = insert_new(
            store,
            "problems",
            ["problem_id"],
            rows,
            _PROBLEM_SCHEMA,
            "i.solution <> t.solution",
            "problem",
            where,
        )
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
        if path is not None:
            log_ingest(
                store,
                path,
                f"problems:{dataset}",
                result.read,
                result.added,
                sha256=files_sha256(path, files),
            )
    return result
