"""`pairstore ingest evals`: per-item eval results made elsewhere join the store's `evals` table.

    pairstore ingest evals results.jsonl --model sm11a --suite v6
    pairstore ingest evals samples_gsm8k_2026-01-10T10-00-00.jsonl --model sm11a --suite gsm8k \\
        --format lm-eval

The formats are declared in pairstore.ingest.formats (`jsonl`, `lm-eval`: their fields in
docs/schema.md). A file is read into checked Arrow batches (pairstore.ingest.batches); each batch's
results are computed a batch at a time (the score and its verdict, the outputs scanned for their length
and loops by the scanner the caller passes: `scan_many`, else `scan` one output at a time; the CLI
passes the domain's repetition scanner, audits.loops: the core does not import a domain package) and
staged in DuckDB. Then, in one transaction: an item with two different results, or an lm-eval doc id
with two docs, is refused naming the later line; every lm-eval doc becomes an eval item of the suite (its
question text, pairstore.tables.evals.lm_eval_doc_text; gold: the target), so the export gate refuses
training rows that hold it; each item's first result is inserted. A re-ingest adds nothing, and a
different result for a (model, suite, item) already stored is an error naming the line, never a silent
overwrite.

An lm-eval log holds one record per document and filter: --filter picks one (default: the first filter
in the file), --metric the field scored (default: the first of METRICS a record has). A filter or a
metric no record has is refused naming the ones the file holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ingest.base import PLACE, place_columns, records_in
from pairstore.ingest.batches import Batch, line_of, read_columns
from pairstore.ingest.declare import counted, did_you_mean
from pairstore.ingest.formats import get_format
from pairstore.ingest.keyed import prompt_match_keys
from pairstore.ingest.kinds import MSG_TYPE
from pairstore.keys import sha256_file
from pairstore.progress import as_progress
from pairstore.store.store import Store, bounded_memory
from pairstore.tables.audit_log import log_action
from pairstore.tables.evals import COMPARED_COLUMNS, SCORE_SCHEMA, add_eval_items, add_staged_scores
from pairstore.tables.ingests import log_ingest

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.progress import Progress


class OutputReport(Protocol):
    """What an output scanner says about one output (audits.loops.LoopReport is one)."""

    @property
    def n_tokens(self) -> int: ...
    @property
    def empty(self) -> bool: ...
    @property
    def flagged(self) -> bool: ...
    @property
    def catastrophic(self) -> bool: ...


OutputScanner = Callable[[str], OutputReport]
# The same judgement of many outputs at once, in order (audits.loops.scan_many is one).
BatchScanner = Callable[[list[str]], Sequence[OutputReport]]


@dataclass(frozen=True)
class EvalsResult:
    read: int  # records read
    added: int  # scores written
    skipped: int  # scores already stored
    filter: str | None  # lm-eval: the filter kept
    metric: str | None  # lm-eval: the metric asked for (None: the first known one present)
    items: int  # distinct items scored
    eval_items_added: int  # lm-eval: documents newly held out as eval items

    def as_dict(self) -> dict:
        return asdict(self)


def _reading(fmt: str) -> pa.Schema:
    """The columns a format's reading gives: each kind-read field's column."""
    fields = [f for f in get_format("evals", fmt).fields if f.kind is not None]
    return pa.schema(
        [(f.column, f.kind.arrow) for f in fields] + [("_row", pa.int64())]  # type: ignore[union-attr]
    )


_STAGE = "_evals_stage"
_STAGED = pa.schema(
    [
        ("item_id", pa.string()),
        *(SCORE_SCHEMA.field(n) for n in COMPARED_COLUMNS),
        ("_kept", pa.bool_()),  # lm-eval: the record is of the filter kept
        ("_doc", pa.string()),  # lm-eval: the doc's question text
        *PLACE,
    ]
)


class _Evals:
    """One ingest's reading of results: each batch's rows computed and staged."""

    def __init__(
        self,
        store: Store,
        fmt: str,
        suite: str,
        metric: str | None,
        filter_name: str | None,
        scan: OutputScanner,
        scan_many: BatchScanner | None,
    ) -> None:
        self.store, self.fmt, self.metric, self.scan, self.scan_many = store, fmt, metric, scan, scan_many
        self.suite = suite
        self.chosen: str | None = filter_name
        self.given_filter = filter_name
        self.first = True
        self.rows = 0
        self.filters: Counter[str] = Counter()
        self.metrics: Counter[str] = Counter()
        self.metric_names = get_format("evals", "lm-eval").extra["metrics"]

    def _items(self, batch: Batch) -> pa.Array:
        """Every row's item id: given, or the suite's eval item whose question has the prompt's match key."""
        t = batch.table
        ids = t.column("item_id").to_pylist()
        asked = [i for i, item in enumerate(ids) if item is None]
        if not asked:
            return t.column("item_id")
        prompts = t.column("prompt").to_pylist()
        for i in asked:
            if prompts[i] is None:
                raise batch.error(i, "missing field (or give the item's question as prompt)", "item_id")
        keys = prompt_match_keys(pa.array([prompts[i] for i in asked], MSG_TYPE))
        found: dict[str, list[str]] = dict(
            self.store.con.execute(
                "SELECT match_key, list(item_id ORDER BY item_id) FROM eval_items "
                "WHERE suite = ? AND list_contains(?, match_key) GROUP BY match_key",
                [self.suite, sorted({k for k in keys if k is not None})],
            ).fetchall()
        )
        for i, key in zip(asked, keys):
            items = found.get(key or "") or []
            if len(items) != 1:
                raise batch.error(i, _not_found(self.suite, items), "prompt")
            ids[i] = items[0]
        return pa.array(ids, pa.string())

    def _simple(self, batch: Batch) -> dict:
        """The simple form's results: correct from score (>= 0.5) or score from correct (1 or 0)."""
        t = batch.table
        correct, score = t.column("correct").to_pylist(), t.column("score").to_pylist()
        for i, (c, s) in enumerate(zip(correct, score)):
            if c is None and s is None:
                raise batch.error(i, "needs correct (true/false) or score", "correct")
        n = t.num_rows
        return {
            "item_id": self._items(batch),
            "score": pa.array(
                [(1.0 if c else 0.0) if s is None else s for c, s in zip(correct, score)], pa.float64()
            ),
            "correct": pa.array([s >= 0.5 if c is None else c for c, s in zip(correct, score)], pa.bool_()),
            "extracted_answer": t.column("extracted_answer"),
            "gold": t.column("gold"),
            "doc_hash": pa.nulls(n, pa.string()),
            "prompt_hash": pa.nulls(n, pa.string()),
            "_kept": pa.array([True] * n),
            "_doc": pa.nulls(n, pa.string()),
            "_output": t.column("output").to_pylist(),
        }

    def _lm_eval(self, batch: Batch) -> dict:
        """An lm-eval batch's results: the metric asked for (or each record's first of METRICS), the kept
        filter (the first record's, unless --filter)."""
        t = batch.table
        n = t.num_rows
        filters = t.column("filter").to_pylist()
        self.filters.update(f for f in filters if f is not None)
        if self.first:
            self.chosen = self.given_filter if self.given_filter is not None else filters[0]
            self.first = False
        values = {m: t.column(m).to_pylist() for m in self.metric_names}
        for m, col in values.items():
            given = sum(v is not None for v in col)
            if given:
                self.metrics[m] += given
        scores, names = [], []
        for i in range(n):
            if self.metric is not None:
                name: str | None = self.metric
                v = values[self.metric][i] if self.metric in values else None
            else:
                name = next((m for m in values if values[m][i] is not None), None)
                v = values[name][i] if name is not None else None
            if v is None:
                raise batch.error(i, self._no_metric(), self.metric or "metric")
            scores.append(v)
            names.append(name)
        return {
            "item_id": t.column("doc_id"),
            "score": pa.array(scores, pa.float64()),
            "correct": pa.array(
                [s >= (1.0 if m == "f1" else 0.5) for s, m in zip(scores, names)], pa.bool_()
            ),
            "extracted_answer": t.column("extracted_answer"),
            "gold": t.column("target"),
            "doc_hash": t.column("doc_hash"),
            "prompt_hash": t.column("prompt_hash"),
            "_kept": pa.array([(f is None) if self.chosen is None else f == self.chosen for f in filters]),
            "_doc": t.column("doc"),
            "_output": t.column("output").to_pylist(),
        }

    def _no_metric(self) -> str:
        if self.metric is None:
            return f"no metric field ({', '.join(self.metric_names)})"
        seen = counted(dict(self.metrics)) if self.metrics else "none of " + ", ".join(self.metric_names)
        return (
            f"no metric field {self.metric!r} (metrics seen: {seen}){did_you_mean(self.metric, self.metrics)}"
        )

    def _scanned(self, outputs: list, kept: list) -> dict:
        """The scanner's judgement of every kept row's output, the scanner run once over the batch."""
        todo = [o for o, k in zip(outputs, kept) if o is not None and k]
        reports = iter(self.scan_many(todo) if self.scan_many else [self.scan(o) for o in todo])
        cols: dict[str, list] = {"output_len": [], "empty": [], "loop_flagged": [], "loop_catastrophic": []}
        for o, k in zip(outputs, kept):
            rep = next(reports) if o is not None and k else None
            cols["output_len"].append(None if rep is None else rep.n_tokens)
            cols["empty"].append(None if rep is None else bool(rep.empty))
            cols["loop_flagged"].append(None if rep is None else bool(rep.flagged))
            cols["loop_catastrophic"].append(None if rep is None else bool(rep.catastrophic))
        return {name: pa.array(v, _STAGED.field(name).type) for name, v in cols.items()}

    def stage(self, batch: Batch) -> None:
        cols = self._simple(batch) if self.fmt == "jsonl" else self._lm_eval(batch)
        outputs = cols.pop("_output")
        cols.update(self._scanned(outputs, cols["_kept"].to_pylist()))
        n = batch.table.num_rows
        cols.update(
            place_columns(n, batch.path, batch.table.column("_row").combine_chunks(), batch.lines, self.rows)
        )
        table = pa.table({f.name: cols[f.name] for f in _STAGED}, schema=_STAGED)
        con = self.store.con
        with self.store.registered("_evals_batch", table):
            if self.rows == 0:
                con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE} AS FROM _evals_batch")
            else:
                con.execute(f"INSERT INTO {_STAGE} FROM _evals_batch")
        self.rows += n

    def refuse_conflicts(self) -> None:
        """An item of the kept filter with a result other than its first, or (lm-eval) a doc id with a
        doc other than its first: BadInput naming the later record."""
        differs = " OR ".join(f"{c} IS DISTINCT FROM first_value({c}) OVER w" for c in COMPARED_COLUMNS)
        checks = [
            (
                f"({differs})",
                "_kept",
                "item {!r} appears twice with different results (first at line {})",
                "item_id",
            )
        ]
        if self.fmt == "lm-eval":
            checks.append(
                (
                    "_doc <> first_value(_doc) OVER w",
                    "true",
                    "doc_id {} appears with two different docs",
                    "doc",
                )
            )
        found = []
        for test, where, message, field in checks:
            row = self.store.con.execute(f"""
                SELECT _seq, item_id, _file, _row, _line, first_file, first_row, first_line FROM (
                    SELECT _seq, item_id, _file, _row, _line, {test} AS differs,
                        first_value(_file) OVER w AS first_file, first_value(_row) OVER w AS first_row,
                        first_value(_line) OVER w AS first_line
                    FROM {_STAGE} WHERE {where} WINDOW w AS (PARTITION BY item_id ORDER BY _seq))
                WHERE differs ORDER BY _seq LIMIT 1""").fetchall()
            if row:
                found.append((row[0], message, field))
        if found:
            seq, message, field = min(found)
            _, item, file, row, line, ffile, frow, fline = self.store.con.execute(
                f"SELECT * FROM ({self._conflict_sql(field)}) WHERE _seq = ?", [seq]
            ).fetchall()[0]
            first = fline if fline is not None else line_of(ffile, frow)
            text = message.format(item, first) if field == "item_id" else message.format(item)
            raise BadInput(
                text, path=file, line=line if line is not None else line_of(file, row), field=field
            )

    @staticmethod
    def _conflict_sql(field: str) -> str:
        where = "_kept" if field == "item_id" else "true"
        return f"""SELECT _seq, item_id, _file, _row, _line, first_value(_file) OVER w AS first_file,
            first_value(_row) OVER w AS first_row, first_value(_line) OVER w AS first_line
            FROM {_STAGE} WHERE {where} WINDOW w AS (PARTITION BY item_id ORDER BY _seq)"""

    def where(self, seq: int) -> tuple[str, int]:
        """The file and line of the staged row `seq`."""
        file, row, line = self.store.con.execute(
            f"SELECT _file, _row, _line FROM {_STAGE} WHERE _seq = ?", [seq]
        ).fetchall()[0]
        return file, line if line is not None else line_of(file, row)

    def close(self) -> None:
        self.store.con.execute(f"DROP TABLE IF EXISTS {_STAGE}_first")
        self.store.con.execute(f"DROP TABLE IF EXISTS {_STAGE}")


def ingest_evals(
    store: Store,
    path: str | Path,
    *,
    model: str,
    suite: str,
    scan: OutputScanner,
    scan_many: BatchScanner | None = None,
    fmt: str = "jsonl",
    metric: str | None = None,
    filter_name: str | None = None,
    progress: Progress | bool | None = None,
) -> EvalsResult:
    """Read, validate and insert per-item results (module docstring); `scan` judges each output (length,
    empty, loops), and `scan_many`, when given, the same for many outputs at once."""
    form = get_format("evals", fmt)
    known = form.extra.get("metrics", ())
    if metric is not None and metric not in known:
        raise BadInput(
            f"unknown metric {metric!r} (expected one of {', '.join(known)}){did_you_mean(metric, known)}",
            field="metric",
        )
    for name, value in (("model", model), ("suite", suite)):
        if not value or not value.strip():
            raise BadInput(f"--{name} is empty", field=name)
    if not Path(path).is_file():
        raise BadInput("no such file", path=str(path))
    origin = f"{fmt}:{Path(path).name}:{sha256_file(path)[:16]}"
    stages = as_progress(progress)
    work = _Evals(store, fmt, suite, metric, filter_name, scan, scan_many)
    con = store.con
    read = 0
    try:
        with bounded_memory(con), store.transaction():
            with stages.stage("ingest evals: read", total=records_in(path), unit="records") as stage:
                for batch in read_columns(form, _reading(fmt), path):
                    work.stage(batch)
                    read += batch.table.num_rows
                    stage.advance(batch.table.num_rows)
            with stages.stage("ingest evals: insert", total=read, unit="records") as stage:
                work.refuse_conflicts()
                items = int(
                    con.execute(f"SELECT count(DISTINCT item_id) FROM {_STAGE} WHERE _kept").fetchall()[0][0]
                )
                if not items:
                    seen = f" (filters seen: {counted(dict(work.filters))})" if work.filters else ""
                    close = did_you_mean(work.chosen, work.filters) if work.chosen else ""
                    raise BadInput(
                        f"no records for filter {work.chosen!r}{seen}{close}", path=str(path), field="filter"
                    )
                held = 0
                if fmt == "lm-eval":
                    docs = con.execute(f"""
                        SELECT item_id, _doc, gold FROM {_STAGE}
                        QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY _seq) = 1 ORDER BY _seq
                        """).fetchall()
                    held = add_eval_items(
                        store,
                        suite,
                        [
                            {"item_id": i, "kind": "lm-eval", "prompt": [{"role": "user", "content": t}],
                             "gold": g, "task_key": None}
                            for i, t, g in docs
                        ],
                    )  # fmt: skip
                con.execute(
                    f"""CREATE OR REPLACE TEMP TABLE {_STAGE}_first AS
                    SELECT ?::VARCHAR AS model, ?::VARCHAR AS suite, item_id, score, correct,
                        extracted_answer, gold, output_len, empty, loop_flagged, loop_catastrophic,
                        NULL::VARCHAR AS gen_id, doc_hash, prompt_hash, ?::VARCHAR AS origin,
                        _seq AS _line
                    FROM {_STAGE} WHERE _kept
                    QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY _seq) = 1""",
                    [model, suite, origin],
                )
                added = add_staged_scores(store, f"{_STAGE}_first", path=path, where=work.where)
                stage.advance(read)
            _log(store, path, model, suite, fmt, read, items, added, work.chosen, held)
    finally:
        work.close()
    return EvalsResult(
        read=read,
        added=int(added),
        skipped=items - int(added),
        filter=work.chosen,
        metric=metric,
        items=items,
        eval_items_added=held,
    )


def _not_found(suite: str, items: list[str]) -> str:
    if items:
        shown = ", ".join(items[:3])
        return f"the question fits {len(items)} eval items of suite {suite!r} ({shown}): give item_id"
    return (
        f"no eval item of suite {suite!r} has this question (looked up by the prompt's match key: its user "
        "turns with spacing, case, punctuation and Unicode form left aside; give item_id)"
    )


def _log(
    store: Store,
    path: StrPath,
    model: str,
    suite: str,
    fmt: str,
    read: int,
    rows: int,
    added: int,
    chosen_filter: str | None,
    held: int,
) -> None:
    log_ingest(store, path, "evals", read, added)
    log_action(
        store,
        "ingest.evals",
        f"{model}/{suite}",
        {
            "path": str(path),
            "format": fmt,
            "rows": rows,
            "added": added,
            "filter": chosen_filter,
            "eval_items_added": held,
        },
    )
