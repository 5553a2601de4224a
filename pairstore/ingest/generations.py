"""Ingest of model outputs into `generations` (written by pairstore.tables.generations).

pairstore ingest generations outs.jsonl --model so7a
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from xxhash import xxh3_128_hexdigest

from pairstore.errors import BadInput
from pairstore.ingest.base import (
    ITEM_KINDS,
    IngestResult,
    dedup_in_file,
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
    flag_choice,
    flag_int,
    flag_text,
    iter_jsonl_batches,
)
from pairstore.ingest.records import Fields, read_records
from pairstore.keys import nfc
from pairstore.progress import as_progress
from pairstore.tables.generations import generation_id, insert_generations, insert_generations_select

if TYPE_CHECKING:
    from pairstore.store.store import Store

_ITEM_PROMPT_SQL = {
    "problem": "SELECT question FROM problems WHERE problem_id = ?",
    "task": "SELECT prompt FROM tasks WHERE task_id = ?",
}


def _item_prompt(store: Store, kind: str, item_id: str, suite: str | None):
    if kind == "eval_item":
        row = store.one(
            "SELECT prompt FROM eval_items WHERE item_id = ? AND (? IS NULL OR suite = ?) LIMIT 1",
            [item_id, suite, suite],
        )
        return None if row is None else [dict(m) for m in row[0]]
    row = store.one(_ITEM_PROMPT_SQL[kind], [item_id])
    return None if row is None else [{"role": "user", "content": row[0]}]


def parse_generation(store: Store, rec: dict, path, line: int, model: str) -> dict:
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


# The columns the vectorized path reads; any other non-null field a record carries for the ingest
# (a prompt to canonicalize, decoding settings) sends the file down the per-record path.
_BULK_SCHEMA = pa.schema(
    [
        ("item_kind", pa.string()),
        ("item_id", pa.string()),
        ("suite", pa.string()),
        ("output", pa.string()),
        ("sample_index", pa.int64()),
        ("temperature", pa.float64()),
        ("top_p", pa.float64()),
        ("max_new_tokens", pa.int64()),
        ("seed", pa.int64()),
    ]
)
_BULK_BATCH = 1 << 16
# What the vectorized insert writes; the verifier's and the scanner's columns stay NULL, as below.
_BULK_COLUMNS = [
    "gen_id",
    "model",
    "item_kind",
    "item_id",
    "suite",
    "prompt",
    "output",
    "sample_index",
    "temperature",
    "top_p",
    "max_new_tokens",
    "seed",
    "source_file",
]
# The item's prompt, joined in SQL: the same messages _item_prompt builds row by row.
_ITEM_JOIN_SQL = """
    SELECT i._row, CASE
            WHEN p.problem_id IS NOT NULL THEN [{'role': 'user', 'content': p.question}]
            WHEN t.task_id IS NOT NULL THEN [{'role': 'user', 'content': t.prompt}]
            WHEN e.item_id IS NOT NULL THEN e.prompt END AS prompt
    FROM _bulk_items i
    LEFT JOIN problems p ON i.item_kind = 'problem' AND p.problem_id = i.item_id
    LEFT JOIN tasks t ON i.item_kind = 'task' AND t.task_id = i.item_id
    LEFT JOIN eval_items e ON i.item_kind = 'eval_item' AND e.item_id = i.item_id AND e.suite = i.suite
"""


def _flags(table: pa.Table) -> list:
    """The vectorized versions of parse_generation's checks (pairstore.ingest.bulk), for files where every
    record names a stored problem, task or eval item (with its suite). A flagged row is left to
    parse_generation, which either accepts it the same way or raises naming its line and field."""
    col = table.column
    return [
        flag_choice(col("item_kind"), ("problem", "task", "eval_item")),
        flag_text(col("item_id")),
        flag_text(col("output"), allow_empty=True),
        # an eval item without its suite: the per-record path picks among suites
        pc.and_(pc.equal(col("item_kind"), "eval_item"), pc.is_null(col("suite"))),
        flag_text(col("suite"), required=False),
        flag_int(col("sample_index"), 32),
        flag_int(col("max_new_tokens"), 32),
    ]


def _bulk_gen_ids(table: pa.Table, model: str) -> pa.Array:
    """generation_id of every row, batch by batch (xxh3-128 has no DuckDB function). The id's text is
    built the way pairstore.keys.content_id builds it (json.dumps of the NFC parts, ensure_ascii off,
    whose strings json encodes with encode_basestring), with the parts every row shares encoded once;
    tests/ingest/test_ingest_bulk.py checks the ids against generation_id."""
    head = "[" + encode_basestring(nfc(model)) + ", "
    kinds = {k: head + encode_basestring(nfc(k)) + ", " for k in ("problem", "task", "eval_item")}
    ids: list[str] = []
    for batch in table.to_batches(_BULK_BATCH):
        rows = zip(
            batch.column("item_kind").to_pylist(),
            batch.column("item_id").to_pylist(),
            batch.column("sample_index").to_pylist(),
            batch.column("temperature").to_pylist(),
            batch.column("output").to_pylist(),
        )
        ids.extend(
            xxh3_128_hexdigest(
                (
                    kinds[k]
                    + encode_basestring(nfc(i))
                    + ", "
                    + encode_basestring(str(0 if s is None else s))
                    + ", "
                    + encode_basestring(repr(temp))
                    + ", "
                    + encode_basestring(nfc(o))
                    + "]"
                ).encode("utf-8")
            )
            for k, i, s, temp, o in rows
        )
    return pa.array(ids, type=pa.string())


_STAGE = "_bulk_stage"


def _stage_batch(store, model: str, table: pa.Table, first_row: int) -> None:
    """One batch of the vectorized path: checked with Arrow compute, keyed, appended to the staging
    table. NotVectorized when a value needs the per-record path."""
    hit = first_flagged(*_flags(table))
    if hit is not None:
        raise FlaggedRecord(first_row + hit)
    n = table.num_rows
    table = table.append_column("_row", pa.array(range(first_row, first_row + n), type=pa.int64()))
    table = table.append_column("gen_id", _bulk_gen_ids(table, model))
    with store.registered("_bulk_batch", table):
        if first_row == 0:
            store.con.execute(f"CREATE TEMP TABLE {_STAGE} AS SELECT * FROM _bulk_batch")
        else:
            store.con.execute(f"INSERT INTO {_STAGE} SELECT * FROM _bulk_batch")


def _insert_staged(store, path, model: str) -> int:
    """The staged rows joined to their items in SQL and inserted (one join, one insert, whatever the
    file's size); NotVectorized when an item is not in the store."""
    items = _ITEM_JOIN_SQL.replace("_bulk_items", _STAGE)
    missing = store.con.execute(f"SELECT min(_row) FROM ({items}) WHERE prompt IS NULL").fetchall()[0][0]
    if missing is not None:
        raise FlaggedRecord(missing)  # an item that is not in the store
    select = f"""
        SELECT g._row, g.gen_id, ? AS model, g.item_kind, g.item_id, g.suite, j.prompt, g.output,
            coalesce(g.sample_index, 0)::INTEGER AS sample_index, g.temperature, g.top_p,
            g.max_new_tokens::INTEGER AS max_new_tokens, g.seed, ? AS source_file
        FROM {_STAGE} g JOIN ({items}) j USING (_row)"""
    repeats = store.con.execute(f"SELECT count(*) - count(DISTINCT gen_id) FROM {_STAGE}").fetchall()[0][0]
    return insert_generations_select(
        store, select, _BULK_COLUMNS, [model, Path(path).name], distinct=repeats == 0
    )


def _ingest_vectorized(store, path, model: str, result: IngestResult, progress) -> bool:
    """The file streamed in Arrow batches into a staging table, then joined and inserted, all in one
    transaction; False (nothing written) when any record needs the per-record path."""
    con = store.con
    read = 0
    try:
        with bounded_memory(con), store.transaction():
            with progress.stage("ingest generations: read", total=records_in(path), unit="records") as stage:
                for table in iter_jsonl_batches(path, _BULK_SCHEMA, refuse=("prompt", "decoding")):
                    _stage_batch(store, model, table, read)
                    read += table.num_rows
                    stage.advance(table.num_rows)
            if read == 0 or read != count_lines(Path(path)):
                raise NotVectorized("blank lines: line numbers would not be row numbers")
            with progress.stage("ingest generations: join and insert", total=read, unit="records") as stage:
                added = _insert_staged(store, path, model)
                stage.advance(read)
            result.read, result.added = read, added
            if read - added:
                result.skipped["already present"] = read - added
            log_ingest(store, path, "generations", result.read, result.added)
    except FlaggedRecord as flagged:
        con.execute(f"DROP TABLE IF EXISTS {_STAGE}")
        first_record_error(
            read_records(path), flagged.index, lambda r: parse_generation(store, r[1], path, r[0], model)
        )
        return False
    except NotVectorized:
        return False
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_STAGE}")
    return True


def ingest_generations(store: Store, path, *, model: str, progress=None) -> IngestResult:
    """Outputs of `model` on problems, tasks, eval items or free prompts, with sampling settings.

    A JSONL file whose records all name stored items is streamed in Arrow batches, checked with Arrow compute
    and joined to its items in SQL (pairstore.ingest.bulk), in one transaction; any other file, or one with a
    record those checks refuse, is read record by record, whose errors name the file, line and field. Verdicts
    and loop flags are left NULL here: the miners and `train sample` compute them with the verifier and the
    scanner (which live outside the store package)."""
    if not model or not model.strip():
        raise BadInput("--model is required and must not be empty", field="model")
    result = IngestResult("generations", str(path))
    if _ingest_vectorized(store, path, model, result, as_progress(progress)):
        return result
    result = IngestResult("generations", str(path))
    rows = []
    for line, rec in progress_bar(read_records(path), progress, "generations", path=path):
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
