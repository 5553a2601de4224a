"""The evaluation tables: `eval_items` (the items of each suite) and `evals` (per-item scores of a model on
a suite). This module is the one that writes both.

    add_eval_items(store, "lf2", items)            # generated suites, `eval` suite files, lm-eval docs
    lm_eval_doc_text({"question": "Janet's ducks ...", "answer": "..."})   # the held-out text of a doc
    replace_scores(store, "sm11a", "lf2", rows)    # `eval`: a re-run replaces the model's scores
    add_scores(store, table, path=...)             # `ingest evals`: results made elsewhere, never overwritten

Every eval item is a member the export gate checks (set "eval:<suite>"), so an evaluated item can
never slip into a training mixture.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.files import StrPath
from pairstore.keys import match_key

if TYPE_CHECKING:
    from pairstore.store.store import Store

# Where lm-evaluation-harness docs keep the question, by task family (GSM8K, MATH, MMLU, IFEval, ARC,
# HellaSwag, WinoGrande, PIQA, ...), first match wins; a doc with none of them gives its longest string.
LM_EVAL_QUESTION_FIELDS = (
    "question",
    "problem",
    "prompt",
    "query",
    "input",
    "instruction",
    "text",
    "ctx",
    "context",
    "sentence",
    "goal",
    "premise",
    "passage",
)

SCORE_COLUMNS = (
    "score",
    "correct",
    "extracted_answer",
    "gold",
    "output_len",
    "empty",
    "loop_flagged",
    "loop_catastrophic",
    "gen_id",
    "doc_hash",
    "prompt_hash",
)
# What two readings of one score are compared on (gen_id links a stored generation, not the score).
COMPARED_COLUMNS = tuple(c for c in SCORE_COLUMNS if c != "gen_id")
SCORE_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("suite", pa.string()),
        ("item_id", pa.string()),
        ("score", pa.float64()),
        ("correct", pa.bool_()),
        ("extracted_answer", pa.string()),
        ("gold", pa.string()),
        ("output_len", pa.int32()),
        ("empty", pa.bool_()),
        ("loop_flagged", pa.bool_()),
        ("loop_catastrophic", pa.bool_()),
        ("gen_id", pa.string()),
        ("doc_hash", pa.string()),
        ("prompt_hash", pa.string()),
        ("origin", pa.string()),
        ("_line", pa.int64()),
    ]
)


_ITEM_SCHEMA = pa.schema(
    [
        ("suite", pa.string()),
        ("item_id", pa.string()),
        ("kind", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("gold", pa.string()),
        ("task_key", pa.string()),
        ("match_key", pa.string()),
    ]
)


def lm_eval_doc_text(doc: Any) -> str | None:
    """The question text of an lm-evaluation-harness doc (the held-out part; the few-shot examples in a
    sample's `arguments` are training items and are not taken). None when the doc holds no text."""
    if not isinstance(doc, dict):
        return None
    for name in LM_EVAL_QUESTION_FIELDS:
        value = doc.get(name)
        if isinstance(value, str) and value.strip():
            return value
    strings = [v for v in doc.values() if isinstance(v, str) and v.strip()]
    return max(strings, key=len) if strings else None


def add_eval_items(store: Store, suite: str, items: list[dict]) -> int:
    """Insert a suite's new items ({item_id, kind, prompt (messages), gold, task_key?}); returns how many
    were new. An item already in the suite with another gold is an error (a suite's answers never
    change under it)."""
    if not items:
        return 0
    ids = [it["item_id"] for it in items]
    with store.transaction():
        have = dict(
            store.con.execute(
                "SELECT item_id, gold FROM eval_items "
                "WHERE suite = ? AND item_id IN (SELECT unnest(?::VARCHAR[]))",
                [suite, ids],
            ).fetchall()
        )
        new, seen = [], set()
        for it in items:
            if it["item_id"] in have:
                if have[it["item_id"]] != it["gold"]:
                    raise BadInput(
                        f"eval item {it['item_id']} of suite {suite!r} already has gold "
                        f"{have[it['item_id']]!r}, not {it['gold']!r}",
                        field="gold",
                    )
                continue
            if it["item_id"] in seen:
                continue
            seen.add(it["item_id"])
            new.append(
                {
                    "suite": suite,
                    "item_id": it["item_id"],
                    "kind": it["kind"],
                    "prompt": it["prompt"],
                    "gold": it["gold"],
                    "task_key": it.get("task_key"),
                    "match_key": match_key(it["prompt"]),
                }
            )
        if new:
            # One insert from an Arrow table, in the items' order (executemany is a statement per row).
            table = pa.Table.from_pylist(new, schema=_ITEM_SCHEMA)
            with store.registered("_new_eval_items", table):
                store.con.execute(
                    "INSERT INTO eval_items (suite, item_id, kind, prompt, gold, task_key, match_key) "
                    "SELECT suite, item_id, kind, prompt, gold, task_key, match_key FROM _new_eval_items"
                )
    return len(new)


def replace_scores(
    store: Store, model: str, suite: str, rows: list[dict], *, origin: str = "pairstore"
) -> int:
    """Scores of `model` on `suite` (rows with item_id and SCORE_COLUMNS), replacing its earlier scores of
    the same items. Returns the rows written."""
    if not rows:
        return 0
    table = _score_table(model, suite, rows, origin)
    cols = [c for c in SCORE_SCHEMA.names if not c.startswith("_")]
    with store.transaction(), store.registered("_scores", table):
        store.con.execute(
            "DELETE FROM evals e USING _scores s "
            "WHERE e.model = s.model AND e.suite = s.suite AND e.item_id = s.item_id"
        )
        store.con.execute(f"INSERT INTO evals ({', '.join(cols)}) SELECT {', '.join(cols)} FROM _scores")
    return table.num_rows


def add_scores(store: Store, model: str, suite: str, rows: list[dict], *, origin: str, path: StrPath) -> int:
    """Scores made elsewhere (rows with item_id, SCORE_COLUMNS and `_line`): new ones are inserted; one
    already stored with another result is an error naming its line, never a silent overwrite."""
    table = _score_table(model, suite, rows, origin)
    with store.transaction(), store.registered("_scores", table):
        return add_staged_scores(store, "_scores", path=path)


def add_staged_scores(
    store: Store, incoming: str, *, path: StrPath, where: Callable[[int], tuple[str, int]] | None = None
) -> int:
    """add_scores of rows already in DuckDB: `incoming` is a table or view with SCORE_SCHEMA's columns, one
    row per (model, suite, item); they are inserted in `_line` order. `where` turns a row's `_line` into
    the file and line a message names, where `_line` is another order. Call inside a transaction."""
    cols = [c for c in SCORE_SCHEMA.names if not c.startswith("_")]
    compared = list(COMPARED_COLUMNS)
    con = store.con
    differs = " OR ".join(f"i.{c} IS DISTINCT FROM e.{c}" for c in compared)
    clash = con.execute(f"""
        SELECT i.model, i.suite, i.item_id, i._line FROM {incoming} i
        JOIN evals e ON e.model = i.model AND e.suite = i.suite AND e.item_id = i.item_id
        WHERE {differs} ORDER BY i._line LIMIT 1""").fetchall()
    if clash:
        model, suite, item, line = clash[0]
        if where is not None:
            path, line = where(line)
        raise BadInput(
            f"model {model!r} suite {suite!r} item {item!r} is already stored with a "
            "different result (use another --model or --suite name for a re-run)",
            path=str(path),
            line=line,
            field="item_id",
        )
    return con.execute(f"""
        INSERT INTO evals ({", ".join(cols)})
        SELECT {", ".join("i." + c for c in cols)} FROM {incoming} i
        ANTI JOIN evals e ON e.model = i.model AND e.suite = i.suite AND e.item_id = i.item_id
        ORDER BY i._line
        """).fetchall()[0][0]


def _score_table(model: str, suite: str, rows: list[dict], origin: str) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {**{c: r.get(c) for c in SCORE_SCHEMA.names}, "model": model, "suite": suite, "origin": origin}
            for r in rows
        ],
        schema=SCORE_SCHEMA,
    )
