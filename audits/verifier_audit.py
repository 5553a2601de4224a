"""What the verifier would do before anyone mines: our verdicts and math-verify's over a model's stored
generations or any labelled file, per dataset and per reason, with the disagreements.

    pairstore audit verifier --model so7a [--json]
    pairstore audit verifier --path outputs.jsonl [--examples 5] [--json]
    from audits.verifier_audit import audit_verifier_store, audit_verifier_rows, read_labelled
    audit = audit_verifier_store(store, "so7a")    # VerifierAudit: groups per dataset

Store rows: the model's generations on problems (dataset gsm8k / math, gold from `problems`), on
loop-fix tasks (dataset "task:<family>", gold from `tasks`) and on eval items with a gold (dataset
"eval:<suite>"). A file: JSONL/parquet/CSV records with the output (`pred` or `output`), `gold`,
`kind` (gsm8k, math or task; default math), and optionally `dataset` and a label (`equal` or
`label`, a boolean) -- with labels, each verifier's wrong verdicts against them are counted too.

Per dataset: rows, our correct / wrong / unknown (unknowns by reason), math-verify alone's correct
/ wrong, where the two disagree (ours definite and math-verify the other way), and examples of the
disagreements and of each unknown reason. math-verify is run as it is normally used
(verify(parse("$gold$"), parse(output)), its failures "not equal"): about 30 rows a second.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field

from miners.verify import KINDS, Verifier
from pairstore.errors import BadInput
from pairstore.ingest.records import read_records
from pairstore.progress import current as current_progress

EXAMPLE_CHARS = 160


@dataclass
class Example:
    row: str  # generation id or "file:line"
    gold: str
    ours: str  # label: reason
    our_answer: str | None
    math_verify: str  # correct / wrong / not run
    label: bool | None
    output_tail: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class DatasetAudit:
    dataset: str
    rows: int = 0
    ours: Counter = field(default_factory=Counter)  # correct / wrong / unknown
    unknown_reasons: Counter = field(default_factory=Counter)
    math_verify: Counter = field(default_factory=Counter)  # correct / wrong / not run (task golds)
    disagreements: int = 0  # ours definite, math-verify the other way
    labelled: int = 0
    ours_wrong_definite: int = 0  # against the labels: a right answer called wrong or the reverse
    ours_right_called_wrong: int = 0
    math_verify_wrong: int = 0
    math_verify_right_called_wrong: int = 0
    examples: list[Example] = field(default_factory=list)

    @property
    def coverage(self) -> float | None:
        return (self.ours["correct"] + self.ours["wrong"]) / self.rows if self.rows else None

    def as_dict(self) -> dict:
        return {
            "dataset": self.dataset,
            "rows": self.rows,
            "ours": dict(self.ours),
            "unknown_reasons": dict(self.unknown_reasons),
            "math_verify": dict(self.math_verify),
            "disagreements": self.disagreements,
            "coverage": self.coverage,
            "labelled": self.labelled,
            "ours_wrong_definite": self.ours_wrong_definite,
            "ours_right_called_wrong": self.ours_right_called_wrong,
            "math_verify_wrong": self.math_verify_wrong,
            "math_verify_right_called_wrong": self.math_verify_right_called_wrong,
            "examples": [e.as_dict() for e in self.examples],
        }


@dataclass
class VerifierAudit:
    source: str  # "model so7a" or the file
    datasets: list[DatasetAudit]

    def as_dict(self) -> dict:
        return {"source": self.source, "datasets": [d.as_dict() for d in self.datasets]}


def math_verify_alone(output: str, gold: str) -> bool:
    """math-verify as it is normally used on a whole output; its failures are "not equal"."""
    from math_verify import parse, verify

    try:
        return bool(verify(parse("$" + gold + "$"), parse(output)))
    except Exception:  # its own failures are its verdicts
        return False


def audit_verifier_rows(source: str, rows, examples: int = 3) -> VerifierAudit:
    """rows: (row id, dataset, output, gold, kind, label or None). Groups in order of first appearance."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it logs every timeout
    verifier = Verifier()
    groups: dict[str, DatasetAudit] = {}
    shown: dict[str, Counter] = {}
    total = len(rows) if hasattr(rows, "__len__") else None
    for row_id, dataset, output, gold, kind, label in current_progress().track(
        rows, f"audit verifier {source}", total, "outputs"
    ):
        g = groups.setdefault(dataset, DatasetAudit(dataset))
        seen = shown.setdefault(dataset, Counter())
        g.rows += 1
        v = verifier.verify(output, gold, kind)
        # task golds are generator strings ("253 R 9", digits to N places): not math-verify's domain
        mv = math_verify_alone(output, gold) if kind != "task" else None
        g.ours[v.label] += 1
        g.math_verify["not run" if mv is None else "correct" if mv else "wrong"] += 1
        if v.label == "unknown":
            g.unknown_reasons[v.reason] += 1
        disagree = mv is not None and v.definite and (v.label == "correct") != mv
        g.disagreements += disagree
        if label is not None:
            g.labelled += 1
            g.ours_wrong_definite += v.label == ("wrong" if label else "correct")
            g.ours_right_called_wrong += label and v.label == "wrong"
            if mv is not None:
                g.math_verify_wrong += mv != label
                g.math_verify_right_called_wrong += label and not mv
        kind_of_example = "disagreement" if disagree else (f"unknown: {v.reason}" if not v.definite else None)
        if kind_of_example and seen[kind_of_example] < examples:
            seen[kind_of_example] += 1
            g.examples.append(
                Example(
                    row_id,
                    gold,
                    f"{v.label}: {v.reason}",
                    v.answer,
                    "not run" if mv is None else "correct" if mv else "wrong",
                    label,
                    (output or "")[-EXAMPLE_CHARS:],
                )
            )
    return VerifierAudit(source, list(groups.values()))


def store_rows(store, model: str):
    """The model's generations that have a gold, as audit rows."""
    if not store.rows("SELECT 1 FROM generations WHERE model = ? LIMIT 1", [model]):
        raise BadInput(f"no generations of model {model!r} in the store", field="model")
    yield from (
        (r["gen_id"], r["dataset"], r["output"], r["gold"], r["kind"], None)
        for r in store.rows(
            """
            SELECT g.gen_id, p.dataset AS dataset, g.output, p.gold, p.dataset AS kind
            FROM generations g JOIN problems p ON g.item_kind = 'problem' AND g.item_id = p.problem_id
            WHERE g.model = ? AND p.gold IS NOT NULL AND p.dataset IN ('gsm8k', 'math')
            UNION ALL
            SELECT g.gen_id, 'task:' || t.family, g.output, t.gold, 'task'
            FROM generations g JOIN tasks t ON g.item_kind = 'task' AND g.item_id = t.task_id
            WHERE g.model = ? AND t.gold IS NOT NULL
            UNION ALL
            SELECT g.gen_id, 'eval:' || e.suite, g.output, e.gold,
                   CASE WHEN e.kind IN ('gsm8k', 'math', 'task') THEN e.kind ELSE 'math' END
            FROM generations g JOIN eval_items e
              ON g.item_kind = 'eval_item' AND g.suite = e.suite AND g.item_id = e.item_id
            WHERE g.model = ? AND e.gold IS NOT NULL
            ORDER BY 2, 1""",
            [model, model, model],
        )
    )


def read_labelled(path) -> list[tuple]:
    """A file's records as audit rows; a bad record raises BadInput naming the file, line and field."""
    rows = []
    for line, rec in read_records(path):
        output = rec.get("pred", rec.get("output"))
        if not isinstance(output, str):
            raise BadInput(
                "an output is required (pred or output, a string)", path=str(path), line=line, field="pred"
            )
        gold = rec.get("gold")
        if not isinstance(gold, str | int | float) or isinstance(gold, bool) or not str(gold).strip():
            raise BadInput("a gold answer is required", path=str(path), line=line, field="gold")
        kind = rec.get("kind", "math")
        if kind not in KINDS:
            raise BadInput(f"kind must be one of {', '.join(KINDS)}", path=str(path), line=line, field="kind")
        label = rec.get("equal", rec.get("label"))
        if label is not None and not isinstance(label, bool):
            field_name = "equal" if "equal" in rec else "label"
            raise BadInput("a label is true or false", path=str(path), line=line, field=field_name)
        dataset = rec.get("dataset") or kind
        rows.append((str(rec.get("id", f"{path}:{line}")), str(dataset), output, str(gold), kind, label))
    if not rows:
        raise BadInput("no records", path=str(path))
    return rows


def audit_verifier_store(store, model: str, examples: int = 3) -> VerifierAudit:
    return audit_verifier_rows(f"model {model}", list(store_rows(store, model)), examples)


def audit_verifier_file(path, examples: int = 3) -> VerifierAudit:
    return audit_verifier_rows(str(path), read_labelled(path), examples)


# -- the report's section: the verdicts already stored for the lineage's models ----------------------


def stored_verdicts(store, models: list[str]) -> tuple[list[str], list[list]]:
    """(columns, rows): per model and dataset, the verdicts the miners and `train sample` stored on
    `generations` -- correct, wrong, unknown (by reason) and rows whose two readings disagree -- so
    the report shows what the miners did with each model's outputs without running a verifier."""
    if not models:
        return [], []
    marks = ", ".join("?" for _ in models)
    rows = store.rows(
        f"""
        SELECT g.model,
               CASE g.item_kind WHEN 'problem' THEN coalesce(p.dataset, 'problem')
                                WHEN 'task' THEN 'task:' || coalesce(t.family, '?')
                                ELSE g.item_kind || coalesce(':' || g.suite, '') END AS dataset,
               g.verdict, g.verdict_reason, g.verdict_readings
        FROM generations g
        LEFT JOIN problems p ON g.item_kind = 'problem' AND g.item_id = p.problem_id
        LEFT JOIN tasks t ON g.item_kind = 'task' AND g.item_id = t.task_id
        WHERE g.model IN ({marks}) AND g.verdict IS NOT NULL AND g.verdict <> 'unscored'
        ORDER BY 1, 2""",
        list(models),
    )
    groups: dict[tuple[str, str], dict] = {}
    for r in rows:
        g = groups.setdefault(
            (r["model"], r["dataset"]), {"n": 0, "labels": Counter(), "reasons": Counter(), "split": 0}
        )
        g["n"] += 1
        g["labels"][r["verdict"]] += 1
        if r["verdict"] == "unknown":
            g["reasons"][r["verdict_reason"] or "not recorded"] += 1
        readings = json.loads(r["verdict_readings"]) if r["verdict_readings"] else []
        g["split"] += len({x["label"] for x in readings if x["label"] != "unknown"}) > 1
    columns = [
        "model",
        "dataset",
        "generations",
        "correct",
        "wrong",
        "unknown",
        "unknown by reason",
        "readings disagree",
    ]
    table = [
        [
            model,
            dataset,
            g["n"],
            g["labels"]["correct"],
            g["labels"]["wrong"],
            g["labels"]["unknown"],
            ", ".join(f"{k} {v}" for k, v in g["reasons"].most_common()) or "-",
            g["split"],
        ]
        for (model, dataset), g in groups.items()
    ]
    return columns, table
