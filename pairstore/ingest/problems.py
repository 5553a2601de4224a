"""Ingest of `problems` (this module writes it): GSM8K / MATH train problems from a file, a Hub copy or a
save_to_disk folder.

    pairstore ingest problems --dataset gsm8k --path gsm8k/
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ingest.base import (
    IngestResult,
    dedup_in_file,
    insert_new,
    log_ingest,
    progress_bar,
)
from pairstore.ingest.dataset_files import DatasetRecord, dataset_files, files_sha256, read_files
from pairstore.ingest.math_problems import HUB_DATASETS, TEST_NAME, problem_fields
from pairstore.ingest.records import Fields
from pairstore.keys import content_id, match_key

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


def _problem_rows(dataset: str, records) -> list[dict]:
    rows = []
    for r in records:
        f = Fields(r.record, r.path, r.line)
        p = problem_fields(dataset, f)
        if p.unique_id and p.unique_id.lower().startswith("test/"):
            raise f.error(
                "unique_id",
                f"{p.unique_id!r} is a test-split problem: only train splits become "
                "training problems (test items enter through eval suites and benchmarks)",
            )
        rows.append(
            {
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
                "source_file": r.source,
                "_line": r.line,
                "_hash": content_id(p.question, p.solution),
                "_file": str(r.path),
            }
        )
    return rows


def _load_hub_records(dataset: str):
    """The real `datasets` loaders, train split only (offline, this needs the hub cache)."""
    import datasets

    repo, configs = HUB_DATASETS[dataset]
    for config in configs:
        ds = datasets.load_dataset(repo, config, split="train")
        for row, rec in enumerate(ds, start=1):
            yield DatasetRecord(Path(repo), row, rec, repo)


def ingest_problems(
    store, dataset: str, *, path=None, split: str = "train", progress: bool = False
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
    rows = _problem_rows(dataset, progress_bar(records, progress, dataset))
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
