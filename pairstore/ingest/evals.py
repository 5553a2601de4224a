"""`pairstore ingest evals`: per-item eval results made elsewhere join the store's `evals` table.

    pairstore ingest evals results.jsonl --model sm11a --suite v6
    pairstore ingest evals samples_gsm8k_2026-01-10T10-00-00.jsonl --model sm11a --suite gsm8k \\
        --format lm-eval

Formats
- jsonl: one object per item: item_id, correct (true/false) or score (number;
  correct = score >= 0.5 when `correct` is absent), and optionally
  extracted_answer, gold, output. With an output its length in scanner tokens,
  emptiness and loop flags are stored too, from the scanner the caller passes (`scan`; the CLI passes
  the domain's repetition scanner, audits.loops.scan: the core does not import a domain package).
- lm-eval: lm-evaluation-harness per-sample logs (samples_<task>_<time>.jsonl):
  doc_id, doc_hash, prompt_hash, target, resps, filtered_resps and the
  metric fields (exact_match, acc, acc_norm, prompt_level_strict_acc, ...).
  A log holds one record per document and filter; --filter picks one (default:
  the first filter in the file), --metric the field scored (default: the first
  of METRICS present). The item id is the doc_id. Each distinct doc becomes an
  eval item of the suite (its question text, pairstore.tables.evals.lm_eval_doc_text;
  gold: the target), so the export gate refuses training rows that hold it. The
  few-shot examples inside `arguments` are training items and are not held out.

Validation first, then one transaction; a re-ingest adds nothing, and a
different result for a (model, suite, item) already stored is an error naming
the line, never a silent overwrite.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from pairstore.errors import BadInput
from pairstore.ingest.base import log_ingest, records_in
from pairstore.ingest.bulk import (
    FlaggedRecord,
    NotVectorized,
    bounded_memory,
    count_lines,
    first_flagged,
    flag_text,
    iter_jsonl_batches,
)
from pairstore.ingest.records import read_records
from pairstore.keys import sha256_file
from pairstore.progress import as_progress
from pairstore.store.store import Store
from pairstore.tables.evals import (
    COMPARED_COLUMNS,
    LM_EVAL_QUESTION_FIELDS,
    SCORE_SCHEMA,
    add_eval_items,
    add_scores,
    add_staged_scores,
    lm_eval_doc_text,
)

METRICS = (
    "exact_match",
    "acc",
    "acc_norm",
    "prompt_level_strict_acc",
    "prompt_level_loose_acc",
    "inst_level_strict_acc",
    "math_verify",
    "pass@1",
    "f1",
    "em",
)
FORMATS = ("jsonl", "lm-eval")


def _text(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _first_string(v):
    """The first string inside nested lists (lm-eval resps: [["text"]], filtered_resps: ["72"])."""
    while isinstance(v, (list, tuple)) and v:
        v = v[0]
    return v if isinstance(v, str) else None


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


def _output_fields(output: str | None, scan: OutputScanner) -> dict:
    if output is None:
        return {"output_len": None, "empty": None, "loop_flagged": None, "loop_catastrophic": None}

    rep = scan(output)
    return {
        "output_len": rep.n_tokens,
        "empty": bool(rep.empty),
        "loop_flagged": bool(rep.flagged),
        "loop_catastrophic": bool(rep.catastrophic),
    }


def _number(v, path, line, name) -> float:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    raise BadInput(f"expected a number, got {v!r}", path=str(path), line=line, field=name)


def parse_simple(rec: dict, path, line: int, scan: OutputScanner) -> dict:
    item = rec.get("item_id")
    if isinstance(item, bool) or not isinstance(item, (str, int)) or str(item).strip() == "":
        raise BadInput("missing or empty item_id", path=str(path), line=line, field="item_id")
    correct = rec.get("correct")
    if correct is not None and not isinstance(correct, bool):
        raise BadInput(f"expected true or false, got {correct!r}", path=str(path), line=line, field="correct")
    score = rec.get("score")
    if score is not None:
        score = _number(score, path, line, "score")
    if correct is None and score is None:
        raise BadInput("needs correct (true/false) or score", path=str(path), line=line, field="correct")
    if correct is None:
        assert score is not None
        correct = score >= 0.5
    if score is None:
        score = 1.0 if correct else 0.0
    output = rec.get("output")
    if output is not None and not isinstance(output, str):
        raise BadInput("expected a string", path=str(path), line=line, field="output")
    return {
        "item_id": str(item),
        "score": score,
        "correct": correct,
        "extracted_answer": _text(rec.get("extracted_answer")),
        "gold": _text(rec.get("gold")),
        "doc_hash": None,
        "prompt_hash": None,
        **_output_fields(output, scan),
    }


def parse_lm_eval(
    rec: dict, path, line: int, metric: str | None, scan: OutputScanner
) -> tuple[dict, str | None]:
    """One lm-eval sample -> (row, filter name)."""
    doc_id = rec.get("doc_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
        raise BadInput(
            "missing doc_id (not an lm-evaluation-harness samples log?)",
            path=str(path),
            line=line,
            field="doc_id",
        )
    name = metric or next((m for m in METRICS if m in rec), None)
    if name is None or name not in rec:
        raise BadInput(
            f"no metric field ({metric or ', '.join(METRICS)})",
            path=str(path),
            line=line,
            field=metric or "metric",
        )
    score = _number(rec[name], path, line, name)
    output = _first_string(rec.get("resps"))
    extracted = _first_string(rec.get("filtered_resps"))
    return (
        {
            "item_id": str(doc_id),
            "score": score,
            "correct": score >= 0.5 if name != "f1" else score >= 1.0,
            "extracted_answer": extracted,
            "gold": _text(rec.get("target")),
            "doc_hash": _text(rec.get("doc_hash")),
            "prompt_hash": _text(rec.get("prompt_hash")),
            **_output_fields(output, scan),
        },
        rec.get("filter"),
    )


def _read_per_record(
    records, path, fmt: str, metric: str | None, filter_name: str | None, scan: OutputScanner, stop=None
):
    """The per-record read: every record parsed, its doc held out (lm-eval), the chosen filter's rows kept
    once per item. Returns (rows by item, docs by item, records read, the filter kept). With `stop` (a
    0-based record index) it returns after that record: the vectorized path's way to have a record it
    flagged named by this loop, with every error before it found first, in the same order."""
    rows: dict = {}
    read, chosen_filter = 0, filter_name
    docs: dict[str, dict] = {}
    for line, rec in records:
        read += 1
        if fmt == "jsonl":
            row = parse_simple(rec, path, line, scan)
        else:
            row, filt = parse_lm_eval(rec, path, line, metric, scan)
            _held_out_doc(docs, rec, row, path, line)
            if chosen_filter is None:
                chosen_filter = filt
            if filt != chosen_filter:
                row = None
        if row is not None:
            row["_line"] = line
            prev = rows.get(row["item_id"])
            if prev is not None:
                if any(prev[k] != row[k] for k in COMPARED_COLUMNS):
                    raise BadInput(
                        f"item {row['item_id']!r} appears twice with different results (first at line "
                        f"{prev['_line']})",
                        path=str(path),
                        line=line,
                        field="item_id",
                    )
            else:
                rows[row["item_id"]] = row
        if stop is not None and read > stop:
            break
    return rows, docs, read, chosen_filter


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
    progress=None,
) -> EvalsResult:
    """Read, validate and insert per-item results; `scan` judges each output (length, empty, loops), and
    `scan_many`, when given, the same for many outputs at once (the vectorized path's way).

    A JSONL file is streamed in Arrow batches, checked with Arrow compute, its outputs scanned batch by
    batch, and deduplicated and inserted in DuckDB (pairstore.ingest.bulk); a file those checks cannot
    take, or one with a record they leave to the parser, is read record by record, whose errors name the
    file, line and field. Both ways store the same rows (tests/ingest/test_ingest_bulk_evals.py)."""

    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})", field="format")
    for name, value in (("model", model), ("suite", suite)):
        if not value or not value.strip():
            raise BadInput(f"--{name} is empty", field=name)
    if not Path(path).is_file():
        raise BadInput("no such file", path=str(path))
    origin = f"{fmt}:{Path(path).name}:{sha256_file(path)[:16]}"
    progress = as_progress(progress)
    reader = _EvalBatches(path, fmt, metric, filter_name, scan, scan_many)
    done = _ingest_vectorized(store, path, reader, model, suite, origin, progress)
    if done is not None:
        return done
    records = progress.track(read_records(path), "ingest evals", total=records_in(path), unit="records")
    rows, docs, read, chosen_filter = _read_per_record(records, path, fmt, metric, filter_name, scan)
    if not rows:
        raise BadInput(f"no records for filter {chosen_filter!r}", path=str(path), field="filter")
    with store.transaction():
        held = add_eval_items(store, suite, list(docs.values()))
        added = add_scores(store, model, suite, list(rows.values()), origin=origin, path=path)
        _log(store, path, model, suite, fmt, read, len(rows), added, chosen_filter, held)
    return EvalsResult(
        read=read,
        added=int(added),
        skipped=len(rows) - int(added),
        filter=chosen_filter,
        metric=metric,
        items=len(rows),
        eval_items_added=held,
    )


def _log(store, path, model, suite, fmt, read, rows, added, chosen_filter, held) -> None:
    log_ingest(store, path, "evals", read, added)
    store.audit(
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


# -- the vectorized path -------------------------------------------------------------------------------
#
# Every field whose JSON type may vary (an item id that is a number or a string, a score that is a number
# or true/false, a gold that is any value) is read with the type pyarrow infers for the file; a column of
# a type the checks below do not know takes the per-record path (NotVectorized), so no value is ever
# converted otherwise than parse_simple / parse_lm_eval convert it.

_SIMPLE_SCHEMA = pa.schema([("output", pa.string())])
_SIMPLE_INFERRED = ("item_id", "correct", "score", "extracted_answer", "gold")
_LM_EVAL_SCHEMA = pa.schema([("filter", pa.string())])
_LM_EVAL_INFERRED = (
    "doc_id",
    "doc",
    "target",
    "resps",
    "filtered_resps",
    "doc_hash",
    "prompt_hash",
    *METRICS,
)
_STAGE = "_evals_stage"
# The score columns as the evals table takes them (SCORE_SCHEMA), between the record's position and what
# only the lm-eval reading needs.
_STAGED_SCORES = ("item_id", *COMPARED_COLUMNS)
_STAGE_SCHEMA = pa.schema(
    [
        ("_row", pa.int64()),
        ("_line", pa.int64()),
        *(SCORE_SCHEMA.field(n) for n in _STAGED_SCORES),
        ("_kept", pa.bool_()),  # lm-eval: the record is of the filter kept
        ("_doc", pa.string()),  # lm-eval: the doc's question text
    ]
)


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    """A field's column, all nulls when no record has it."""
    if name in table.column_names:
        col = table.column(name)
        if not pa.types.is_null(col.type):
            return col
    return pa.chunked_array([pa.nulls(table.num_rows, pa.string())])


def _as_text(table: pa.Table, name: str) -> pa.ChunkedArray:
    """_text of a column: strings as they are, integers and true/false as json.dumps writes them;
    NotVectorized for other types (floats, lists, objects: json.dumps of the parsed value is the
    per-record path's)."""
    col = _column(table, name)
    if pa.types.is_string(col.type):
        return col
    if pa.types.is_int64(col.type) or pa.types.is_boolean(col.type):
        return pc.cast(col, pa.string())
    raise NotVectorized(f"{name}: {col.type}")


def _as_id(table: pa.Table, name: str) -> pa.ChunkedArray:
    """An id that may be a string or an integer (never true/false), as str() writes it."""
    col = _column(table, name)
    if pa.types.is_string(col.type):
        return col
    if pa.types.is_int64(col.type):
        return pc.cast(col, pa.string())
    raise NotVectorized(f"{name}: {col.type}")


def _as_number(table: pa.Table, name: str) -> pa.ChunkedArray:
    """_number of a column: true/false as 1.0/0.0, numbers as floats (the reader refuses what is not
    finite); NotVectorized for strings and the rest."""
    col = _column(table, name)
    if pa.types.is_null(col.type) or pa.types.is_string(col.type) and col.null_count == len(col):
        return pa.chunked_array([pa.nulls(table.num_rows, pa.float64())])
    if pa.types.is_floating(col.type) or pa.types.is_integer(col.type) or pa.types.is_boolean(col.type):
        return pc.cast(col, pa.float64())
    raise NotVectorized(f"{name}: {col.type}")


def _first_strings(col: pa.ChunkedArray) -> list[str | None]:
    """_first_string of every value of a column (lm-eval resps: [["text"]], filtered_resps: ["72"])."""
    if pa.types.is_null(col.type):
        return [None] * len(col)
    return [_first_string(v) for v in col.to_pylist()]


class _EvalBatches:
    """What the vectorized path needs to know of the ingest's options, and the work on one batch."""

    def __init__(self, path, fmt, metric, filter_name, scan, scan_many):
        self.path, self.fmt, self.metric, self.scan, self.scan_many = path, fmt, metric, scan, scan_many
        self.filter_name = filter_name
        self.chosen: str | None = filter_name
        self.first = True

    def batches(self):
        if self.fmt == "jsonl":
            return iter_jsonl_batches(self.path, _SIMPLE_SCHEMA, keep=_SIMPLE_INFERRED)
        return iter_jsonl_batches(self.path, _LM_EVAL_SCHEMA, keep=_LM_EVAL_INFERRED)

    def stage(self, table: pa.Table, first_row: int) -> pa.Table | int:
        """The batch's staged rows, or the index (in the batch) of the first row the parser must see."""
        if self.fmt == "jsonl":
            cols, flags = self._simple(table)
        else:
            cols, flags = self._lm_eval(table)
        hit = first_flagged(*flags)
        if hit is not None:
            return hit
        outputs = cols.pop("_output")
        cols.update(self._scanned(outputs))
        n = table.num_rows
        cols["_row"] = pa.array(range(first_row, first_row + n), pa.int64())
        cols["_line"] = pa.array(range(first_row + 1, first_row + n + 1), pa.int64())
        return pa.table({name: cols[name] for name in _STAGE_SCHEMA.names}, schema=_STAGE_SCHEMA)

    def _simple(self, table: pa.Table):
        """parse_simple's checks and conversions, column by column."""
        item, correct, score = _as_id(table, "item_id"), _column(table, "correct"), _as_number(table, "score")
        if not (
            pa.types.is_boolean(correct.type)
            or pa.types.is_string(correct.type)
            and correct.null_count == len(correct)
        ):
            raise NotVectorized(f"correct: {correct.type}")
        correct = pc.cast(correct, pa.bool_())
        output = _column(table, "output")
        flags = [
            flag_text(item),
            pc.and_(pc.is_null(correct), pc.is_null(score)),  # neither: the parser's error
        ]
        n = table.num_rows
        return {
            "item_id": item,
            "score": pc.coalesce(score, pc.if_else(correct, 1.0, 0.0)),
            "correct": pc.coalesce(correct, pc.greater_equal(score, 0.5)),
            "extracted_answer": _as_text(table, "extracted_answer"),
            "gold": _as_text(table, "gold"),
            "doc_hash": pa.nulls(n, pa.string()),
            "prompt_hash": pa.nulls(n, pa.string()),
            "_kept": pa.array([True] * n),
            "_doc": pa.nulls(n, pa.string()),
            "_output": output.to_pylist(),
        }, flags

    def _lm_eval(self, table: pa.Table):
        """parse_lm_eval's and _held_out_doc's checks and conversions, column by column. The metric is
        --metric, or the first of METRICS any record has: a row without it is left to the parser (which
        takes another metric for that row, or names the field)."""
        n = table.num_rows
        name = self.metric or next((m for m in METRICS if m in table.column_names), None)
        if name is None:
            return {}, [pa.array([True] * n)]
        score = _as_number(table, name)
        doc_id = _as_id(table, "doc_id")
        filters = table.column("filter")
        if self.first:
            self.chosen = self.filter_name if self.filter_name is not None else filters[0].as_py()
            self.first = False
        if self.chosen is None and filters.null_count != n:
            # The per-record loop takes the first filter it meets after records without one, and keeps
            # those: a rule no column-wide comparison says as simply.
            raise NotVectorized("filter: absent from the first record only")
        kept = (
            pc.is_null(filters)
            if self.chosen is None
            else pc.fill_null(pc.equal(filters, self.chosen), False)
        )
        texts, ambiguous = _doc_texts(_column(table, "doc"))
        flags = [
            pc.is_null(doc_id),
            pc.is_null(score),
            pa.array([t is None for t in texts]),  # no question text: the parser's error
            pa.array(ambiguous),
        ]
        return {
            "item_id": doc_id,
            "score": score,
            "correct": pc.greater_equal(score, 1.0 if name == "f1" else 0.5),
            "extracted_answer": pa.array(_first_strings(_column(table, "filtered_resps")), pa.string()),
            "gold": _as_text(table, "target"),
            "doc_hash": _as_text(table, "doc_hash"),
            "prompt_hash": _as_text(table, "prompt_hash"),
            "_kept": kept,
            "_doc": pa.array(texts, pa.string()),
            "_output": _first_strings(_column(table, "resps")),
        }, flags

    def _scanned(self, outputs: list[str | None]) -> dict:
        """_output_fields of every output, the scanner run once over the batch's outputs."""
        given = [o for o in outputs if o is not None]
        reports = iter(self.scan_many(given) if self.scan_many else [self.scan(o) for o in given])
        fields = [_output_fields(o, lambda _text: next(reports)) for o in outputs]
        return {
            name: pa.array([f[name] for f in fields], _STAGE_SCHEMA.field(name).type)
            for name in ("output_len", "empty", "loop_flagged", "loop_catastrophic")
        }


def _doc_texts(docs: pa.ChunkedArray) -> tuple[list[str | None], list[bool]]:
    """lm_eval_doc_text of every doc, and whether that text is ambiguous here: a doc without a question
    field gives its longest string, and between two strings of that length the record's own key order
    decides, which the Arrow column (one key order for the whole file) does not keep."""
    if not pa.types.is_struct(docs.type):
        if pa.types.is_string(docs.type) and docs.null_count != len(docs):
            raise NotVectorized("doc: a string")
        return [None] * len(docs), [False] * len(docs)
    texts, ambiguous = [], []
    for doc in docs.to_pylist():
        text = lm_eval_doc_text(doc)
        tie = False
        if text is not None and not any(
            isinstance(doc.get(f), str) and doc[f].strip() for f in LM_EVAL_QUESTION_FIELDS
        ):
            longest = {v for v in doc.values() if isinstance(v, str) and v.strip() and len(v) == len(text)}
            tie = len(longest) > 1
        texts.append(text)
        ambiguous.append(tie)
    return texts, ambiguous


def _ingest_vectorized(store: Store, path, reader: _EvalBatches, model, suite, origin, progress):
    """The file streamed in Arrow batches into a staging table (checked, converted, its outputs scanned),
    then its docs held out and its scores deduplicated and inserted in SQL, in one transaction. None
    (nothing written) when the file takes the per-record path; a record the checks flag, or the first
    line of a conflict found in SQL (one item with two results, one doc id with two docs), is named by
    the per-record loop run up to it, which raises the error the per-record path raises there."""
    con = store.con
    read = 0
    try:
        with bounded_memory(con), store.transaction():
            with progress.stage("ingest evals: read", total=records_in(path), unit="records") as stage:
                for table in reader.batches():
                    staged = reader.stage(table, read)
                    if isinstance(staged, int):
                        raise FlaggedRecord(read + staged)
                    with store.registered("_evals_batch", staged):
                        if read == 0:
                            con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE} AS FROM _evals_batch")
                        else:
                            con.execute(f"INSERT INTO {_STAGE} FROM _evals_batch")
                    read += table.num_rows
                    stage.advance(table.num_rows)
            if not read or read != count_lines(Path(path)):
                raise NotVectorized("blank lines: row numbers would not be line numbers")
            with progress.stage("ingest evals: insert", total=read, unit="records") as stage:
                conflict = _first_conflict(con, reader.fmt)
                if conflict is not None:
                    raise FlaggedRecord(conflict)
                items = int(
                    con.execute(f"SELECT count(DISTINCT item_id) FROM {_STAGE} WHERE _kept").fetchall()[0][0]
                )
                if not items:
                    raise NotVectorized("no records for the filter: the per-record path says so")
                held = 0
                if reader.fmt == "lm-eval":
                    docs = con.execute(f"""
                        SELECT item_id, _doc, gold FROM {_STAGE}
                        QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY _row) = 1 ORDER BY _row
                        """).fetchall()
                    held = add_eval_items(
                        store,
                        suite,
                        [
                            {
                                "item_id": i,
                                "kind": "lm-eval",
                                "prompt": [{"role": "user", "content": t}],
                                "gold": g,
                                "task_key": None,
                            }
                            for i, t, g in docs
                        ],
                    )
                con.execute(
                    f"""CREATE OR REPLACE TEMP TABLE {_STAGE}_first AS
                    SELECT ?::VARCHAR AS model, ?::VARCHAR AS suite, item_id, score, correct,
                        extracted_answer, gold, output_len, empty, loop_flagged, loop_catastrophic,
                        NULL::VARCHAR AS gen_id, doc_hash, prompt_hash, ?::VARCHAR AS origin, _line
                    FROM {_STAGE} WHERE _kept
                    QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY _row) = 1""",
                    [model, suite, origin],
                )
                added = add_staged_scores(store, f"{_STAGE}_first", path=path)
                stage.advance(read)
            _log(store, path, model, suite, reader.fmt, read, items, added, reader.chosen, held)
    except FlaggedRecord as flagged:
        _drop_stage(con)
        _read_per_record(
            read_records(path),
            path,
            reader.fmt,
            reader.metric,
            reader.filter_name,
            reader.scan,
            stop=flagged.index,
        )
        return None
    except NotVectorized:
        _drop_stage(con)
        return None
    finally:
        _drop_stage(con)
    return EvalsResult(
        read=read,
        added=int(added),
        skipped=items - int(added),
        filter=reader.chosen,
        metric=reader.metric,
        items=items,
        eval_items_added=held,
    )


def _drop_stage(con) -> None:
    con.execute(f"DROP TABLE IF EXISTS {_STAGE}_first")
    con.execute(f"DROP TABLE IF EXISTS {_STAGE}")


def _first_conflict(con, fmt: str) -> int | None:
    """The first record (0-based) that the per-record loop refuses for what it saw before it: a result
    for an item of the kept filter other than the item's first, or (lm-eval) a doc text other than the
    first one of its doc id."""
    differs = " OR ".join(f"{c} IS DISTINCT FROM first_value({c}) OVER w" for c in COMPARED_COLUMNS)
    rows = [
        con.execute(f"""
            SELECT min(_row) FROM (SELECT _row, ({differs}) AS differs FROM {_STAGE} WHERE _kept
                WINDOW w AS (PARTITION BY item_id ORDER BY _row)) WHERE differs""").fetchall()[0][0]
    ]
    if fmt == "lm-eval":
        rows.append(
            con.execute(f"""
                SELECT min(_row) FROM (SELECT _row, _doc <> first_value(_doc) OVER w AS differs
                    FROM {_STAGE} WINDOW w AS (PARTITION BY item_id ORDER BY _row)) WHERE differs
                """).fetchall()[0][0]
        )
    found = [r for r in rows if r is not None]
    return min(found) if found else None


def _held_out_doc(docs: dict, rec: dict, row: dict, path, line: int) -> None:
    """Every record's doc (whatever its filter) as an eval item; one doc id with two texts is an error."""
    text = lm_eval_doc_text(rec.get("doc"))
    if text is None:
        raise BadInput(
            "no question text in doc: the sample cannot be held out", path=str(path), line=line, field="doc"
        )
    item = {
        "item_id": row["item_id"],
        "kind": "lm-eval",
        "prompt": [{"role": "user", "content": text}],
        "gold": row["gold"],
        "task_key": None,
    }
    prev = docs.setdefault(row["item_id"], item)
    if prev["prompt"] != item["prompt"]:
        raise BadInput(
            f"doc_id {row['item_id']} appears with two different docs", path=str(path), line=line, field="doc"
        )
