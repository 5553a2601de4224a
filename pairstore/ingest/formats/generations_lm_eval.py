"""`lm-eval`: lm-evaluation-harness per-sample logs as generations: every response of every document.

    pairstore ingest generations samples_gsm8k_2026-01-10T10-00-00.jsonl --model so7a --format lm-eval \\
        --suite gsm8k
"""

from __future__ import annotations

from typing import Any

from pairstore.ingest.declare import ID, LABEL, META, SCORE, TEXT, Field, Format, declare
from pairstore.ingest.formats.evals_lm_eval import METRICS, DocText
from pairstore.ingest.kinds import Id
from pairstore.ingest.records import Fields


def _responses(value: Any) -> list[str] | None:
    """Every response of `resps` ([[text], ...] or [[text, text, ...]]), in order."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return None
    out: list[str] = []
    for v in value:
        got = _responses(v)
        if got is None:
            return None
        out += got
    return out


def reshape(values: dict[str, Any], f: Fields) -> list[dict[str, Any]]:
    """One generation per response, its place the sample number."""
    responses = _responses(f.rec.get("resps"))
    if not responses:
        raise f.error("resps", "expected the model's responses (lists of strings)")
    return [{**values, "output": r, "sample_index": i} for i, r in enumerate(responses)]


FORMAT = declare(
    Format(
        name="lm-eval",
        table="generations",
        summary="lm-evaluation-harness per-sample logs (samples_<task>_<time>.jsonl): every response of "
        "every "
        "document a generation; the item found by doc_id (an eval item of --suite, as `ingest evals --format "
        "lm-eval` stores them) or by the doc's question.",
        notes="The item kind is --item-kind (default eval_item); a log holds each document once per "
        "filter, and "
        "the same response twice is one generation.",
        fields=(
            Field("doc_id", ID, "the document's id (`item_id`)", kind=Id(), into="item_id"),
            Field(
                "doc",
                TEXT,
                "the document: its question (the first of question, problem, prompt, ... or its longest "
                "string) "
                "is the prompt; its other fields (answers, choices, labels) are metadata",
                role="prompt",
                kind=DocText(),
                into="prompt",
                required=True,
            ),
            Field("resps", TEXT, "the model's responses: each one a generation", role="output"),
            Field("target", META, "the gold answer"),
            Field("arguments", META, "the request as sent: the few-shot examples and the question"),
            Field("filtered_resps", META, "the answers the filter extracted"),
            Field("filter", LABEL, "the filter's name"),
            Field("metrics", LABEL, "the names of the metrics computed"),
            Field("doc_hash", ID, "lm-eval's hash of the doc"),
            Field("prompt_hash", ID, "lm-eval's hash of the prompt"),
            Field("target_hash", ID, "lm-eval's hash of the target"),
            *(Field(m, SCORE, "a metric") for m in METRICS),
        ),
        signature=("doc_id", "doc", "resps"),
        reshape=reshape,
        order=20,
        extra={"item_kind": "eval_item"},
    )
)
