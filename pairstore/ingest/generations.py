"""Ingest of model outputs into `generations` (written by pairstore.tables.generations).

pairstore ingest generations outs.jsonl --model so7a
"""

from __future__ import annotations

import json
from pathlib import Path

from pairstore.errors import BadInput
from pairstore.ingest.base import (
    ITEM_KINDS,
    IngestResult,
    dedup_in_file,
    log_ingest,
    progress_bar,
)
from pairstore.ingest.records import Fields, read_records
from pairstore.tables.generations import generation_id, insert_generations

_ITEM_PROMPT_SQL = {
    "problem": "SELECT question FROM problems WHERE problem_id = ?",
    "task": "SELECT prompt FROM tasks WHERE task_id = ?",
}


def _item_prompt(store, kind: str, item_id: str, suite: str | None):
    if kind == "eval_item":
        row = store.one(
            "SELECT prompt FROM eval_items WHERE item_id = ? AND (? IS NULL OR suite = ?) LIMIT 1",
            [item_id, suite, suite],
        )
        return None if row is None else [dict(m) for m in row[0]]
    row = store.one(_ITEM_PROMPT_SQL[kind], [item_id])
    return None if row is None else [{"role": "user", "content": row[0]}]


def parse_generation(store, rec: dict, path, line: int, model: str) -> dict:
    f = Fields(rec, path, line)
    kind = f.choice("item_kind", ITEM_KINDS, required=False) or ("prompt" if not f.has("item_id") else None)
    if kind is None:
        raise f.error("item_kind", "missing field (needed with item_id: problem, task, eval_item or prompt)")
    item_id = f.str("item_id", required=kind != "prompt", allow_int=True)
    suite = f.str("suite", required=False)
    output = f.str("output", allow_empty=True)
    if f.has("prompt"):
        prompt = f.messages("prompt")
    elif kind == "prompt":
        raise f.error("prompt", "missing field")
    else:
        assert item_id is not None  # required for every kind but prompt
        prompt = _item_prompt(store, kind, item_id, suite)
        if prompt is None:
            raise f.error(
                "item_id", f"no {kind} with id {item_id!r} in the store (ingest it first or give prompt)"
            )
    sample_index = f.int("sample_index", default=0, bits=32)
    temperature = f.float("temperature")
    decoding = rec.get("decoding")
    if decoding is not None and not isinstance(decoding, dict):
        raise f.error("decoding", "expected an object of decoding settings")
    ref = item_id if item_id is not None else json.dumps(prompt, ensure_ascii=False)
    return {
        "gen_id": generation_id(model, kind, ref, sample_index, temperature, output),
        "model": model,
        "item_kind": kind,
        "item_id": item_id,
        "suite": suite,
        "prompt": prompt,
        "output": output,
        "sample_index": sample_index,
        "temperature": temperature,
        "top_p": f.float("top_p"),
        "max_new_tokens": f.int("max_new_tokens", bits=32),
        "seed": f.int("seed"),
        "decoding": None if decoding is None else json.dumps(decoding, sort_keys=True),
        "_line": line,
    }


def ingest_generations(store, path, *, model: str, progress: bool = False) -> IngestResult:
    """Outputs of `model` on problems, tasks, eval items or free prompts, with sampling settings.

    Verdicts and loop flags are left NULL here: the miners and `train sample` compute them with the
    verifier and the scanner (which live outside the store package)."""
    if not model or not model.strip():
        raise BadInput("--model is required and must not be empty", field="model")
    result = IngestResult("generations", str(path))
    rows = []
    for line, rec in progress_bar(read_records(path), progress, "generations"):
        result.read += 1
        row = parse_generation(store, rec, path, line, model)
        row["source_file"] = Path(path).name
        rows.append(row)
    rows, dup = dedup_in_file(rows, lambda r: r["gen_id"], "gen_id", "generation", path)
    with store.transaction():
        added = insert_generations(store, rows)
        same = len(rows) - added
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
        log_ingest(store, path, "generations", result.read, result.added)
    return result
