"""Ingest of model outputs into `generations` (written by pairstore.tables.generations).

    pairstore ingest generations outs.jsonl --model so7a
    pairstore ingest generations vllm_outs.jsonl --model so7a --format vllm --item-kind problem

A file in any generations format (pairstore.ingest.formats) is read into checked Arrow batches
(pairstore.ingest.batches); each batch's items are found in DuckDB and its ids computed a batch at a time,
and the rows are inserted in one transaction. An output names the item it answers one of three ways:

- by id: `item_id` is the item's id in the store (a problem's problem_id, a task's task_id, an eval
  item's id within its suite), or a problem's own id in its dataset (`unique_id`, MATH's
  `train/algebra/1.json`);
- by its question: no `item_id`, the `prompt` as asked; the stored item of that kind whose match key
  (pairstore.keys.match_key: spacing, case, punctuation and Unicode form aside) is the prompt's;
- none: a free prompt (`item_kind` prompt, or neither item_kind nor item_id).

An output whose item cannot be found is refused with one line naming its file, line and how it was
looked up; an id or a question that fits several items (two suites, two datasets) is refused naming
them. Verdicts and loop flags are left NULL here: the miners and `train sample` compute them with the
verifier and the scanner (which live outside the store package).
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
from pairstore.ingest.base import PLACE, IngestResult, log_ingest, place_columns, records_in
from pairstore.ingest.batches import Batch, bounded_memory, read_columns
from pairstore.ingest.formats import get_format
from pairstore.ingest.keyed import prompt_match_keys
from pairstore.ingest.kinds import MSG_TYPE
from pairstore.keys import nfc_many, sha256_file
from pairstore.progress import as_progress
from pairstore.tables.generations import insert_generations_select

if TYPE_CHECKING:
    from pairstore.store.store import Store

ITEM_KINDS = ("problem", "task", "eval_item", "prompt")
STORED_KINDS = ("problem", "task", "eval_item")
# What a generations format's reading gives.
READ = pa.schema(
    [
        ("item_kind", pa.string()),
        ("item_id", pa.string()),
        ("suite", pa.string()),
        ("prompt", MSG_TYPE),
        ("output", pa.string()),
        ("sample_index", pa.int32()),
        ("temperature", pa.float64()),
        ("top_p", pa.float64()),
        ("max_new_tokens", pa.int32()),
        ("seed", pa.int64()),
        ("decoding", pa.string()),
        ("_row", pa.int64()),
    ]
)
_STAGED = pa.schema(
    [
        ("gen_id", pa.string()),
        ("item_kind", pa.string()),
        ("item_id", pa.string()),
        ("suite", pa.string()),
        ("prompt", MSG_TYPE),
        ("output", pa.string()),
        ("sample_index", pa.int32()),
        ("temperature", pa.float64()),
        ("top_p", pa.float64()),
        ("max_new_tokens", pa.int32()),
        ("seed", pa.int64()),
        ("decoding", pa.string()),
        *PLACE,
    ]
)
_STAGE = "_generations_stage"
_BATCH = "_generations_batch"
# Every stored item a generation may answer, with what finds it: its id, its dataset's own id, its
# question's match key, and its prompt as messages.
_ITEMS_SQL = """
    SELECT 'problem' AS kind, NULL::VARCHAR AS suite, problem_id AS id, unique_id AS own_id, match_key AS key,
        [{'role': 'user', 'content': question}] AS prompt FROM problems
    UNION ALL SELECT 'task', NULL, task_id, NULL, match_key, [{'role': 'user', 'content': prompt}] FROM tasks
    UNION ALL SELECT 'eval_item', suite, item_id, NULL, match_key, prompt FROM eval_items
"""
# Per batch row that names a stored kind: the items found by id, by own id and by question, how many each
# way (more than one: ambiguous), and the prompt of the one found.
_FIND_SQL = f"""
    WITH items AS ({_ITEMS_SQL}),
    asked AS (SELECT _i, item_kind, item_id, suite, _key FROM {_BATCH} WHERE item_kind <> 'prompt'),
    by_id AS (
        SELECT a._i, count(*) AS n, min(i.id) AS id, list(DISTINCT i.suite) AS suites,
            arg_min(i.prompt, i.id) AS prompt
        FROM asked a JOIN items i ON a.item_id IS NOT NULL AND i.kind = a.item_kind AND i.id = a.item_id
            AND (a.suite IS NULL OR i.suite = a.suite)
        GROUP BY a._i),
    by_own AS (
        SELECT a._i, count(*) AS n, min(i.id) AS id, list(i.id ORDER BY i.id) AS ids,
            arg_min(i.prompt, i.id) AS prompt
        FROM asked a JOIN items i ON a.item_id IS NOT NULL AND i.kind = a.item_kind AND i.own_id = a.item_id
        GROUP BY a._i),
    by_key AS (
        SELECT a._i, count(*) AS n, min(i.id) AS id,
            list(coalesce(i.suite || '/', '') || i.id ORDER BY i.suite, i.id) AS ids,
            arg_min(i.prompt, i.id) AS prompt, min(i.suite) AS suite
        FROM asked a JOIN items i ON a._key IS NOT NULL AND i.kind = a.item_kind AND i.key = a._key
            AND (a.suite IS NULL OR i.suite = a.suite)
        GROUP BY a._i)
    SELECT a._i, a.item_kind, a.item_id, a.suite,
        b.n AS id_n, b.id AS id_found, b.suites AS id_suites, b.prompt AS id_prompt,
        o.n AS own_n, o.id AS own_found, o.ids AS own_ids, o.prompt AS own_prompt,
        k.n AS key_n, k.id AS key_found, k.ids AS key_ids, k.prompt AS key_prompt, k.suite AS key_suite
    FROM asked a LEFT JOIN by_id b USING (_i) LEFT JOIN by_own o USING (_i) LEFT JOIN by_key k USING (_i)
    ORDER BY a._i
"""


def _ids(model: str, kinds: list, refs: list, samples: list, temps: list, outputs: list) -> list[str]:
    """pairstore.tables.generations.generation_id of every row (xxh3-128 has no DuckDB function): the id's
    text built the way pairstore.keys.content_id builds it (json.dumps of the NFC parts), with the parts
    every row shares encoded once; tests/ingest/test_generations.py compares it with generation_id."""
    head = "[" + encode_basestring(nfc_many([model])[0]) + ", "
    kind_text = {k: head + encode_basestring(k) + ", " for k in ITEM_KINDS}
    refs, outputs = nfc_many(refs), nfc_many(outputs)
    return [
        xxh3_128_hexdigest(
            (
                kind_text[k]
                + encode_basestring(r)
                + ", "
                + encode_basestring(str(s))
                + ", "
                + encode_basestring(repr(t))
                + ", "
                + encode_basestring(o)
                + "]"
            ).encode("utf-8")
        )
        for k, r, s, t, o in zip(kinds, refs, samples, temps, outputs)
    ]


class _Generations:
    """The generations of one ingest: each batch's items found, its rows keyed and staged; then inserted."""

    def __init__(self, store: Store, model: str, item_kind: str | None, suite: str | None):
        self.store, self.model, self.item_kind, self.suite = store, model, item_kind, suite
        self.rows = 0

    def _kinds(self, batch: Batch) -> list[str]:
        """The item kind of every row: given, else --item-kind, else a free prompt (no item_id) or an
        error naming the row."""
        t = batch.table
        kinds = t.column("item_kind").to_pylist()
        ids = t.column("item_id").to_pylist()
        prompts = t.column("prompt").is_null().to_pylist()
        out = []
        for i, (kind, item, no_prompt) in enumerate(zip(kinds, ids, prompts)):
            kind = kind or self.item_kind or ("prompt" if item is None else None)
            if kind is None:
                raise batch.error(
                    i, "missing field (needed with item_id: problem, task, eval_item or prompt)", "item_kind"
                )
            if kind == "prompt" and no_prompt:
                raise batch.error(i, "missing field", "prompt")
            if kind != "prompt" and item is None and no_prompt:
                raise batch.error(i, "missing field (or give the question as prompt)", "item_id")
            out.append(kind)
        return out

    def _find(self, batch: Batch, kinds: list[str], suites: list) -> tuple[list, list]:
        """(item id, prompt) of every row: the stored item it answers, found by id, own id or question
        (`suites` gains the suite of an eval item found without one)."""
        t = batch.table
        n = t.num_rows
        ids = t.column("item_id").to_pylist()
        prompts = t.column("prompt").to_pylist()
        # the question finds the item where no id is given, or where the id finds none (lm-eval's doc_id is
        # a position in the benchmark, not a problem's id)
        given = t.column("prompt").is_valid().to_pylist()
        need_key = [k != "prompt" and g for k, g in zip(kinds, given)]
        keys: list[str | None] = [None] * n
        if any(need_key):
            asked = pa.array(need_key)
            got = prompt_match_keys(pc.filter(t.column("prompt"), asked))
            it = iter(got)
            keys = [next(it) if need else None for need in need_key]
        found_ids: list = list(ids)
        found_prompts: list = list(prompts)
        if not any(k != "prompt" for k in kinds):
            return found_ids, found_prompts
        asked_table = pa.table(
            {
                "_i": pa.array(range(n), pa.int64()),
                "item_kind": pa.array(kinds, pa.string()),
                "item_id": pa.array(ids, pa.string()),
                "suite": pa.array(suites, pa.string()),
                "_key": pa.array(keys, pa.string()),
            }
        )
        with self.store.registered(_BATCH, asked_table):
            rows = self.store.con.execute(_FIND_SQL).fetchall()
        for row in rows:
            i, kind, item, suite = row[0], row[1], row[2], row[3]
            id_n, id_found, id_suites, id_prompt = row[4:8]
            own_n, own_found, own_ids, own_prompt = row[8:12]
            key_n, key_found, key_ids, key_prompt, key_suite = row[12:17]
            if item is not None:
                if id_n == 1 or (id_n is None and own_n == 1):
                    found_ids[i] = id_found if id_n == 1 else own_found
                    if found_prompts[i] is None:
                        found_prompts[i] = id_prompt if id_n == 1 else own_prompt
                    if kind == "eval_item" and suites[i] is None:
                        suites[i] = id_suites[0]
                    continue
                if id_n or own_n or key_n != 1:
                    message = _not_found_by_id(kind, item, suite, id_n, id_suites, own_n, own_ids)
                    if key_n is not None and key_n > 1 and not (id_n or own_n):
                        message = _not_found_by_question(kind, suite, key_n, key_ids)
                    elif keys[i] is not None and not (id_n or own_n):
                        message += "; nor has any its question (looked up by the prompt's match key)"
                    raise batch.error(i, message, "item_id")
            if key_n == 1:
                found_ids[i] = key_found
                if kind == "eval_item" and suites[i] is None:
                    suites[i] = key_suite
                continue
            raise batch.error(i, _not_found_by_question(kind, suite, key_n, key_ids), "prompt")
        return found_ids, found_prompts

    def stage(self, batch: Batch, source: str) -> None:
        t = batch.table
        n = t.num_rows
        suites = t.column("suite").to_pylist()
        if self.suite is not None:
            suites = [s if s is not None else self.suite for s in suites]
        kinds = self._kinds(batch)
        item_ids, prompts = self._find(batch, kinds, suites)
        samples = [0 if s is None else s for s in t.column("sample_index").to_pylist()]
        temps = t.column("temperature").to_pylist()
        refs = [
            item if item is not None else json.dumps(p, ensure_ascii=False)
            for item, p in zip(item_ids, prompts)
        ]
        gen_ids = _ids(self.model, kinds, refs, samples, temps, t.column("output").to_pylist())
        given = {
            "gen_id": pa.array(gen_ids, pa.string()),
            "item_kind": pa.array(kinds, pa.string()),
            "item_id": pa.array(item_ids, pa.string()),
            "suite": pa.array(suites, pa.string()),
            "prompt": pa.array(prompts, MSG_TYPE),
            "sample_index": pa.array(samples, pa.int32()),
            **{
                c: t.column(c)
                for c in ("output", "temperature", "top_p", "max_new_tokens", "seed", "decoding")
            },
            **place_columns(n, batch.path, t.column("_row").combine_chunks(), batch.lines, self.rows),
        }
        table = pa.table([given[f.name] for f in _STAGED], schema=_STAGED)
        with self.store.registered("_generations_batch_rows", table):
            if self.rows == 0:
                self.store.con.execute(
                    f"CREATE OR REPLACE TEMP TABLE {_STAGE} AS FROM _generations_batch_rows"
                )
            else:
                self.store.con.execute(f"INSERT INTO {_STAGE} FROM _generations_batch_rows")
        self.rows += n

    def insert(self, source: str) -> int:
        if not self.rows:
            return 0
        columns = [f.name for f in _STAGED if not f.name.startswith("_")] + ["source_file"]
        repeats = self.store.con.execute(
            f"SELECT count(*) - count(DISTINCT gen_id) FROM {_STAGE}"
        ).fetchall()[0][0]
        select = f"SELECT *, ? AS model, ? AS source_file, _seq AS _row FROM {_STAGE}"
        return insert_generations_select(
            self.store, select, [*columns, "model"], [self.model, source], distinct=repeats == 0
        )

    def close(self) -> None:
        self.store.con.execute(f"DROP TABLE IF EXISTS {_STAGE}")


def _not_found_by_id(kind, item, suite, id_n, id_suites, own_n, own_ids) -> str:
    if id_n and id_n > 1:
        return f"eval item {item!r} is in suites {', '.join(sorted(id_suites))}: give suite (or --suite)"
    if own_n and own_n > 1:
        shown = ", ".join(own_ids[:3])
        return f"{kind} id {item!r} is the own id of {own_n} stored problems ({shown}): give problem_id"
    where = (
        "problem_id and the dataset's own id (unique_id)"
        if kind == "problem"
        else (
            f"item_id in suite {suite!r}"
            if kind == "eval_item" and suite
            else "item_id in every suite"
            if kind == "eval_item"
            else "task_id"
        )
    )
    return f"no {kind} with id {item!r} in the store (looked up by {where}; ingest it first or give prompt)"


def _not_found_by_question(kind, suite, key_n, key_ids) -> str:
    within = f" of suite {suite!r}" if suite else ""
    if key_n and key_n > 1:
        shown = ", ".join(key_ids[:3])
        return (
            f"the question fits {key_n} stored {kind}s{within} ({shown}{', ...' if key_n > 3 else ''}): "
            "give item_id"
        )
    return (
        f"no stored {kind}{within} has this question (looked up by the prompt's match key: its user turns "
        "with spacing, case, punctuation and Unicode form left aside; ingest the items first or give item_id)"
    )


def ingest_generations(
    store: Store,
    path,
    *,
    model: str,
    fmt: str = "native",
    item_kind: str | None = None,
    suite: str | None = None,
    progress=None,
) -> IngestResult:
    """Outputs of `model` on problems, tasks, eval items or free prompts, with sampling settings, from a
    file in any generations format (module docstring). `item_kind` and `suite` apply to the records that
    do not name their own (the format's default kind where it has one). One transaction; a bad record
    names its file, line and field."""
    if not model or not model.strip():
        raise BadInput("--model is required and must not be empty", field="model")
    form = get_format("generations", fmt)
    if item_kind is not None and item_kind not in ITEM_KINDS:
        raise BadInput(
            f"unknown item kind {item_kind!r} (expected one of {', '.join(ITEM_KINDS)})", field="item-kind"
        )
    item_kind = item_kind or form.extra.get("item_kind")
    p = Path(path)
    if not p.exists():
        raise BadInput("no such file", path=str(path))
    if p.is_dir():
        raise BadInput("a folder, not a file", path=str(path))
    progress = as_progress(progress)
    result = IngestResult("generations", str(path))
    work = _Generations(store, model, item_kind, suite)
    try:
        with bounded_memory(store.con), store.transaction():
            with progress.stage("ingest generations: read", total=records_in(p), unit="records") as stage:
                for batch in read_columns(form, READ, p):
                    work.stage(batch, p.name)
                    result.read += batch.table.num_rows
                    stage.advance(batch.table.num_rows)
            with progress.stage("ingest generations: insert", total=result.read, unit="records") as stage:
                result.added = work.insert(p.name)
                stage.advance(result.read)
            if result.read - result.added:
                result.skipped["already present"] = result.read - result.added
            log_ingest(store, p, "generations", result.read, result.added, sha256=sha256_file(p))
    finally:
        work.close()
    return result
