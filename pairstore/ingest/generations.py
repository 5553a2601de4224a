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
from pairstore.ingest.base import IngestResult, records_in
from pairstore.ingest.batches import Batch, read_columns
from pairstore.ingest.formats import get_format
from pairstore.ingest.keyed import prompt_match_keys
from pairstore.ingest.kinds import MSG_TYPE
from pairstore.keys import nfc_many, sha256_file
from pairstore.progress import as_progress
from pairstore.store.store import bounded_memory
from pairstore.tables.generations import insert_generations_select
from pairstore.tables.ingests import log_ingest

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.progress import Progress
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
_BATCH = "_generations_batch"
_ASKED = "_generations_asked"
# Every stored item a generation may answer, with what finds it: its id, its dataset's own id, its
# question's match key.
_ITEMS_SQL = """
    SELECT 'problem' AS kind, NULL::VARCHAR AS suite, problem_id AS id, unique_id AS own_id, match_key AS key
    FROM problems
    UNION ALL SELECT 'task', NULL, task_id, NULL, match_key FROM tasks
    UNION ALL SELECT 'eval_item', suite, item_id, NULL, match_key FROM eval_items
"""
# The items each asked row finds one way (`{on}`): how many (more than one: ambiguous), the first, and all.
_FIND_SQL = f"""
    WITH items AS ({_ITEMS_SQL})
    SELECT a._i, count(*) AS n, min(i.id) AS id, list(DISTINCT i.suite) AS suites,
        list(coalesce(i.suite || '/', '') || i.id ORDER BY i.suite, i.id) AS ids
    FROM {_ASKED} a JOIN items i ON i.kind = a.item_kind AND {{on}}
    GROUP BY a._i
"""
_BY_ID = "i.id = a.item_id AND (a.suite IS NULL OR i.suite = a.suite)"
# The asked rows whose id is not exactly one item's id (by kind, and suite where given).
_NOT_ONE_SQL = f"""
    WITH items AS ({_ITEMS_SQL})
    SELECT a._i FROM {_ASKED} a LEFT JOIN items i ON i.kind = a.item_kind AND {_BY_ID}
    GROUP BY a._i HAVING count(i.id) <> 1
"""
_BY_OWN = "i.own_id = a.item_id"
_BY_KEY = "i.key = a._key AND (a.suite IS NULL OR i.suite = a.suite)"
# A batch's rows as generations: the prompt as given, else the item's (the same messages every path gives).
_ROWS_SQL = f"""
    SELECT b.gen_id, ? AS model, b.item_kind, b.item_id, b.suite,
        coalesce(b.prompt, CASE b.item_kind
            WHEN 'problem' THEN [{{'role': 'user', 'content': p.question}}]
            WHEN 'task' THEN [{{'role': 'user', 'content': t.prompt}}]
            ELSE e.prompt END) AS prompt,
        b.output, b.sample_index, b.temperature, b.top_p, b.max_new_tokens, b.seed, b.decoding,
        ? AS source_file, b._seq AS _row
    FROM {_BATCH} b
    LEFT JOIN problems p ON b.prompt IS NULL AND b.item_kind = 'problem' AND p.problem_id = b.item_id
    LEFT JOIN tasks t ON b.prompt IS NULL AND b.item_kind = 'task' AND t.task_id = b.item_id
    LEFT JOIN eval_items e ON b.prompt IS NULL AND b.item_kind = 'eval_item' AND e.item_id = b.item_id
        AND e.suite = b.suite
"""
_COLUMNS = [
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
    "decoding",
    "source_file",
]


def _ids(model: str, kinds: list, refs: list, samples: list, temps: list, outputs: list) -> list[str]:
    """pairstore.tables.generations.generation_id of every row (xxh3-128 has no DuckDB function): the id's
    text built the way pairstore.keys.content_id builds it (json.dumps of the NFC parts), each part that
    rows share (the model, the kind, an item, a sample number, a temperature) encoded once;
    tests/ingest/test_keyed.py compares it with generation_id."""
    head = "[" + encode_basestring(nfc_many([model])[0]) + ", "
    kind_text = {k: head + encode_basestring(k) + ", " for k in ITEM_KINDS}
    distinct = list(dict.fromkeys(refs))
    ref_text = {r: encode_basestring(n) + ", " for r, n in zip(distinct, nfc_many(distinct))}
    tail_text: dict = {}
    out = []
    for k, r, s, t, o in zip(kinds, refs, samples, temps, nfc_many(outputs)):
        tail = tail_text.get((s, t))
        if tail is None:
            tail = tail_text[(s, t)] = encode_basestring(str(s)) + ", " + encode_basestring(repr(t)) + ", "
        out.append(
            xxh3_128_hexdigest((kind_text[k] + ref_text[r] + tail + encode_basestring(o) + "]").encode())
        )
    return out


class _Generations:
    """The generations of one ingest, a batch at a time: each row's item found, its id computed, the new
    rows inserted (one transaction around them all)."""

    def __init__(self, store: Store, model: str, item_kind: str | None, suite: str | None) -> None:
        self.store, self.model, self.item_kind, self.suite = store, model, item_kind, suite
        self.rows = 0
        self.added = 0

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

    def _lookup(
        self, on: str, rows: list[int], kinds: list[str], ids: list, suites: list, keys: list
    ) -> dict[int, tuple]:
        """Row -> (count, first id, suites, ids) of the items rows `rows` find by `on`."""
        if not rows:
            return {}
        with self.store.registered(_ASKED, self._asked(rows, kinds, ids, suites, keys)):
            found = self.store.con.execute(_FIND_SQL.format(on=on)).fetchall()
        return {r[0]: r[1:] for r in found}

    @staticmethod
    def _asked(rows: list[int], kinds: list[str], ids: list, suites: list, keys: list) -> pa.Table:
        return pa.Table.from_arrays(
            [
                pa.array(rows, pa.int64()),
                pa.array([kinds[i] for i in rows], pa.string()),
                pa.array([ids[i] for i in rows], pa.string()),
                pa.array([suites[i] for i in rows], pa.string()),
                pa.array([keys[i] for i in rows], pa.string()),
            ],
            names=["_i", "item_kind", "item_id", "suite", "_key"],
        )

    def _ids_found_as_given(self, rows: list[int], kinds: list[str], ids: list, suites: list) -> list[int]:
        """Of the rows naming an item by id, those whose id is not simply one item's id (not found, or an
        eval item's id in several suites): the few the slower lookups look at."""
        if not rows:
            return []
        with self.store.registered(_ASKED, self._asked(rows, kinds, ids, suites, ids)):
            return [r[0] for r in self.store.con.execute(_NOT_ONE_SQL).fetchall()]

    def _find(self, batch: Batch, kinds: list[str], suites: list) -> list:
        """Every row's item id: the stored item it answers, found by id, by the dataset's own id, or by
        its question (`suites` gains the suite of an eval item found without one)."""
        t = batch.table
        ids = t.column("item_id").to_pylist()
        found = list(ids)
        stored = [i for i, k in enumerate(kinds) if k != "prompt"]
        if not stored:
            return found
        with_id = [i for i in stored if ids[i] is not None]
        # the common batch: every id is one item's, nothing more to look up
        others = set(self._ids_found_as_given(with_id, kinds, ids, suites))
        eval_without_suite = [i for i in with_id if kinds[i] == "eval_item" and suites[i] is None]
        by_id = self._lookup(_BY_ID, sorted(others | set(eval_without_suite)), kinds, ids, suites, ids)
        unfound = [i for i in sorted(others) if i not in by_id]
        by_own = self._lookup(_BY_OWN, [i for i in unfound if kinds[i] == "problem"], kinds, ids, suites, ids)
        # the question finds the item where no id is given, or where the id finds none (lm-eval's doc_id is
        # a position in the benchmark, not a problem's id)
        given = t.column("prompt").is_valid().to_pylist()
        asked = [
            i
            for i in stored
            if given[i] and (ids[i] is None or (i in others and i not in by_id and i not in by_own))
        ]
        keys: list = [None] * t.num_rows
        if asked:
            got = prompt_match_keys(pc.take(t.column("prompt"), pa.array(asked, pa.int64())))
            for i, key in zip(asked, got):
                keys[i] = key
        by_key = self._lookup(_BY_KEY, asked, kinds, ids, suites, keys)
        for i in stored:
            if ids[i] is not None and i not in others and i not in by_id:
                continue  # found as given
            for way in (by_id, by_own) if ids[i] is not None else ():
                if i in way and way[i][0] == 1:
                    found[i] = way[i][1]
                    if kinds[i] == "eval_item" and suites[i] is None:
                        suites[i] = way[i][2][0]
                    break
            else:
                if i in by_key and by_key[i][0] == 1:
                    found[i] = by_key[i][1]
                    if kinds[i] == "eval_item" and suites[i] is None:
                        suites[i] = by_key[i][2][0]
                    continue
                raise self._not_found(batch, i, kinds[i], ids[i], suites[i], by_id, by_own, by_key, keys)
        return found

    @staticmethod
    def _not_found(
        batch: Batch,
        i: int,
        kind: str,
        item: str | None,
        suite: str | None,
        by_id: dict[int, tuple],
        by_own: dict[int, tuple],
        by_key: dict[int, tuple],
        keys: list,
    ) -> BadInput:
        key = by_key.get(i)
        if item is None or (key is not None and i not in by_id and i not in by_own):
            return batch.error(i, _not_found_by_question(kind, suite, key), "prompt")
        message = _not_found_by_id(kind, item, suite, by_id.get(i), by_own.get(i))
        if keys[i] is not None:
            message += "; nor has any its question (looked up by the prompt's match key)"
        return batch.error(i, message, "item_id")

    def add(self, batch: Batch, source: str) -> None:
        """Find the batch's items, compute its ids, insert its new rows."""
        t = batch.table
        n = t.num_rows
        suites = t.column("suite").to_pylist()
        if self.suite is not None:
            suites = [s if s is not None else self.suite for s in suites]
        kinds = self._kinds(batch)
        item_ids = self._find(batch, kinds, suites)
        samples = [0 if s is None else s for s in t.column("sample_index").to_pylist()]
        prompts = t.column("prompt")
        free = [k == "prompt" and item is None for k, item in zip(kinds, item_ids)]
        texts = prompts.to_pylist() if any(free) else [None] * n
        refs = [json.dumps(p, ensure_ascii=False) if f else item for f, item, p in zip(free, item_ids, texts)]
        gen_ids = _ids(
            self.model,
            kinds,
            refs,
            samples,
            t.column("temperature").to_pylist(),
            t.column("output").to_pylist(),
        )
        given = {
            "gen_id": pa.array(gen_ids, pa.string()),
            "item_kind": pa.array(kinds, pa.string()),
            "item_id": pa.array(item_ids, pa.string()),
            "suite": pa.array(suites, pa.string()),
            "prompt": prompts,
            "sample_index": pa.array(samples, pa.int32()),
            **{
                c: t.column(c)
                for c in ("output", "temperature", "top_p", "max_new_tokens", "seed", "decoding")
            },
            "_seq": pa.array(range(self.rows, self.rows + n), pa.int64()),
        }
        table = pa.Table.from_arrays(list(given.values()), names=list(given))
        with self.store.registered(_BATCH, table):
            distinct = len(set(gen_ids)) == n
            self.added += insert_generations_select(
                self.store, _ROWS_SQL, _COLUMNS, [self.model, source], distinct=distinct
            )
        self.rows += n


def _not_found_by_id(
    kind: str, item: str, suite: str | None, by_id: tuple | None, by_own: tuple | None
) -> str:
    if by_id and by_id[0] > 1:
        return f"eval item {item!r} is in suites {', '.join(sorted(by_id[2]))}: give suite (or --suite)"
    if by_own and by_own[0] > 1:
        shown = ", ".join(by_own[3][:3])
        return f"{kind} id {item!r} is the own id of {by_own[0]} stored problems ({shown}): give problem_id"
    if kind == "problem":
        where = "problem_id and the dataset's own id (unique_id)"
    elif kind == "eval_item":
        where = f"item_id in suite {suite!r}" if suite else "item_id in every suite"
    else:
        where = "task_id"
    return f"no {kind} with id {item!r} in the store (looked up by {where}; ingest it first or give prompt)"


def _not_found_by_question(kind: str, suite: str | None, found: tuple | None) -> str:
    within = f" of suite {suite!r}" if suite else ""
    if found and found[0] > 1:
        shown = ", ".join(found[3][:3]) + (", ..." if found[0] > 3 else "")
        return f"the question fits {found[0]} stored {kind}s{within} ({shown}): give item_id"
    return (
        f"no stored {kind}{within} has this question (looked up by the prompt's match key: its user "
        "turns with spacing, case, punctuation and Unicode form left aside; ingest the items first or give "
        "item_id)"
    )


def ingest_generations(
    store: Store,
    path: StrPath,
    *,
    model: str,
    fmt: str = "native",
    item_kind: str | None = None,
    suite: str | None = None,
    progress: Progress | bool | None = None,
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
    stages = as_progress(progress)
    result = IngestResult("generations", str(path))
    work = _Generations(store, model, item_kind, suite)
    with bounded_memory(store.con), store.transaction():
        with stages.stage("ingest generations: read", total=records_in(p), unit="records") as stage:
            for batch in read_columns(form, READ, p):
                work.add(batch, p.name)
                result.read += batch.table.num_rows
                stage.advance(batch.table.num_rows)
        result.added = work.added
        if result.read - result.added:
            result.skipped["already present"] = result.read - result.added
        log_ingest(store, p, "generations", result.read, result.added, sha256=sha256_file(p))
    return result
