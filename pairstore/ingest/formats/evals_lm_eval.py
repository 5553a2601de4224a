"""`lm-eval`: lm-evaluation-harness per-sample logs (`--log_samples`: samples_<task>_<time>.jsonl).

pairstore ingest evals samples_gsm8k_2026-01-10T10-00-00.jsonl --model sm11a --suite gsm8k --format lm-eval
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from pairstore.ingest.declare import ID, LABEL, META, SCORE, TEXT, Field, Format, declare
from pairstore.ingest.kinds import (
    INFER,
    AnyText,
    Checked,
    Column,
    Id,
    Kind,
    NotDirect,
    Problem,
    Score,
    Text,
    as_array,
)
from pairstore.tables.evals import LM_EVAL_QUESTION_FIELDS, lm_eval_doc_text

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
    "inst_level_loose_acc",
    "mcc",
    "bleu",
    "rouge1",
    "rouge2",
    "rougeL",
    "chrf",
    "ter",
)


def first_string(v: Any) -> str | None:
    """The first string inside nested lists (lm-eval resps: [["text"]], filtered_resps: ["72"])."""
    while isinstance(v, (list, tuple)) and v:
        v = v[0]
    return v if isinstance(v, str) else None


class FirstString(Kind):
    """The first string of a nested list (a response, an extracted answer)."""

    direct = INFER
    doc = "a string or nested lists of strings (the first is read)"

    def value(self, v: Any) -> str | None:
        return first_string(v)

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type):
            return Checked(pa.nulls(len(arr), pa.string()))
        if pa.types.is_string(arr.type):
            return Checked(arr)
        if pa.types.is_list(arr.type):
            return Checked(pa.array([first_string(v) for v in arr.to_pylist()], pa.string()))
        raise NotDirect(f"first string: {arr.type}")


class DocText(Kind):
    """An lm-eval doc's question text (pairstore.tables.evals.lm_eval_doc_text)."""

    direct = INFER
    doc = "an object; its question is the first of " + ", ".join(LM_EVAL_QUESTION_FIELDS[:4]) + ", ..."

    def value(self, v: Any) -> str:
        text = lm_eval_doc_text(v)
        if text is None:
            raise Problem("no question text in doc: the sample cannot be held out")
        return text

    def takes(self, t: pa.DataType) -> bool:
        return pa.types.is_struct(t) or pa.types.is_null(t)  # a doc given as a string is no doc

    def column(self, col: Column) -> Checked:
        arr = as_array(col)
        if pa.types.is_null(arr.type):
            return Checked(pa.nulls(len(arr), pa.string()))
        if pa.types.is_string(arr.type):
            return Checked(arr)  # the texts `value` read
        if not pa.types.is_struct(arr.type):
            raise NotDirect(f"doc: {arr.type}")
        texts: list[str | None] = []
        for i, doc in enumerate(arr.to_pylist()):
            if doc is None:
                texts.append(None)
                continue
            text = lm_eval_doc_text(doc)
            if text is None:
                return Checked(
                    pa.nulls(len(arr), pa.string()),
                    i,
                    "no question text in doc: the sample cannot be held out",
                )
            if not any(isinstance(doc.get(f), str) and doc[f].strip() for f in LM_EVAL_QUESTION_FIELDS):
                # the longest string decides, and between two of one length the record's own key order,
                # which a whole column (one key order for the file) does not keep
                longest = {
                    v for v in doc.values() if isinstance(v, str) and v.strip() and len(v) == len(text)
                }
                if len(longest) > 1:
                    raise NotDirect("doc: two longest strings")
            texts.append(text)
        return Checked(pa.array(texts, pa.string()))


FORMAT = declare(
    Format(
        name="lm-eval",
        table="evals",
        summary="lm-evaluation-harness per-sample logs (samples_<task>_<time>.jsonl): one record per "
        "document "
        "and filter.",
        notes="--filter picks one filter (default: the first in the file), --metric the field scored "
        "(default: "
        "the first of " + ", ".join(METRICS) + " present). Each distinct doc becomes an eval item of the "
        "suite (its question text; gold: the target), so the export gate refuses training rows that hold it. "
        "The few-shot examples inside `arguments` are training items and are not held out.",
        fields=(
            Field("doc_id", ID, "the document's id (the item id)", kind=Id(), required=True),
            Field(
                "doc",
                TEXT,
                "the document: its question (the first of question, problem, prompt, ... or its longest "
                "string) is held out; its other fields (answers, choices, labels) are metadata",
                role="eval item prompt",
                kind=DocText(),
                required=True,
            ),
            Field("target", TEXT, "the gold answer", role="gold", kind=AnyText()),
            Field(
                "resps",
                META,
                "the model's responses (the first is scanned for length and loops)",
                kind=FirstString(),
                into="output",
            ),
            Field(
                "filtered_resps",
                META,
                "the answers the filter extracted from the responses (the first is kept as the "
                "extracted answer)",
                kind=FirstString(),
                into="extracted_answer",
            ),
            Field("filter", LABEL, "the filter's name", kind=Text()),
            Field("doc_hash", ID, "lm-eval's hash of the doc", kind=AnyText()),
            Field("prompt_hash", ID, "lm-eval's hash of the prompt", kind=AnyText()),
            Field("target_hash", ID, "lm-eval's hash of the target"),
            Field("arguments", META, "the request as sent: the few-shot examples and the question"),
            Field("metrics", LABEL, "the names of the metrics computed"),
            *(Field(m, SCORE, "a metric", kind=Score()) for m in METRICS),
        ),
        signature=("doc_id", "doc"),
        order=10,
        extra={"metrics": METRICS},
    )
)
