"""`pairstore ingest evals`: per-item eval results made elsewhere join the store's `evals` table.

    pairstore ingest evals results.jsonl --model sm11a --suite v6
    pairstore ingest evals samples_gsm8k_2026-01-10T10-00-00.jsonl --model sm11a --suite gsm8k --format lm-eval

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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from pairstore.errors import BadInput
from pairstore.ingest.base import log_ingest
from pairstore.ingest.records import read_records
from pairstore.keys import sha256_file
from pairstore.store.store import Store
from pairstore.tables.evals import SCORE_COLUMNS, add_eval_items, add_scores, lm_eval_doc_text

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

_COMPARED = tuple(c for c in SCORE_COLUMNS if c != "gen_id")


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


def ingest_evals(
    store: Store,
    path: str | Path,
    *,
    model: str,
    suite: str,
    scan: OutputScanner,
    fmt: str = "jsonl",
    metric: str | None = None,
    filter_name: str | None = None,
) -> EvalsResult:
    """Read, validate and insert per-item results; `scan` judges each output (length, empty, loops)."""

    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})", field="format")
    for name, value in (("model", model), ("suite", suite)):
        if not value or not value.strip():
            raise BadInput(f"--{name} is empty", field=name)
    if not Path(path).is_file():
        raise BadInput("no such file", path=str(path))
    origin = f"{fmt}:{Path(path).name}:{sha256_file(path)[:16]}"
    rows: dict = {}
    read, chosen_filter = 0, filter_name
    docs: dict[str, dict] = {}
    for line, rec in read_records(path):
        read += 1
        if fmt == "jsonl":
            row = parse_simple(rec, path, line, scan)
        else:
            row, filt = parse_lm_eval(rec, path, line, metric, scan)
            _held_out_doc(docs, rec, row, path, line)
            if chosen_filter is None:
                chosen_filter = filt
            if filt != chosen_filter:
                continue
        row["_line"] = line
        prev = rows.get(row["item_id"])
        if prev is not None:
            if any(prev[k] != row[k] for k in _COMPARED):
                raise BadInput(
                    f"item {row['item_id']!r} appears twice with different results (first at line "
                    f"{prev['_line']})",
                    path=str(path),
                    line=line,
                    field="item_id",
                )
            continue
        rows[row["item_id"]] = row
    if not rows:
        raise BadInput(f"no records for filter {chosen_filter!r}", path=str(path), field="filter")
    with store.transaction():
        held = add_eval_items(store, suite, list(docs.values()))
        added = add_scores(store, model, suite, list(rows.values()), origin=origin, path=path)
        log_ingest(store, path, "evals", read, added)
        store.audit(
            "ingest.evals",
            f"{model}/{suite}",
            {
                "path": str(path),
                "format": fmt,
                "rows": len(rows),
                "added": added,
                "filter": chosen_filter,
                "eval_items_added": held,
            },
        )
    return EvalsResult(
        read=read,
        added=int(added),
        skipped=len(rows) - int(added),
        filter=chosen_filter,
        metric=metric,
        items=len(rows),
        eval_items_added=held,
    )


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
