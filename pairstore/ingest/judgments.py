"""Ingest of blind judge verdicts into `judgments` (this module writes it).

pairstore ingest judgments verdicts.jsonl

The Queue page (`pairstore serve`) and `pairstore judge` write through the same checks
(add_judgment_records).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ingest.base import (
    WINNERS,
    IngestResult,
    dedup_in_file,
    insert_new,
    log_ingest,
    progress_bar,
)
from pairstore.ingest.records import Fields, read_records
from pairstore.keys import content_id

if TYPE_CHECKING:
    pass
HEAVY_FLAWS = ("fabrication", "hallucinated_output", "degenerate_repetition", "broken_placeholder")
JUDGED_KINDS = ("battle", "eval_item")

_JUDGMENT_SCHEMA = pa.schema(
    [
        ("judgment_id", pa.string()),
        ("battle_id", pa.string()),
        ("model_a", pa.string()),
        ("model_b", pa.string()),
        ("winner", pa.string()),
        ("heavy_flaw_a", pa.bool_()),
        ("heavy_flaw_b", pa.bool_()),
        ("judge", pa.string()),
        ("notes", pa.string()),
        ("annotator", pa.string()),
        ("prompt_hash", pa.string()),
        ("item_kind", pa.string()),
        ("flaws_a", pa.list_(pa.string())),
        ("flaws_b", pa.list_(pa.string())),
        ("origin", pa.string()),
        ("source_file", pa.string()),
        ("_line", pa.int64()),
    ]
)


def _flaw_list(f: Fields, name: str) -> list[str] | None:
    v = f.rec.get(name)
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise f.error(name, "expected a list of heavy flaw names")
    for x in v:
        if x not in HEAVY_FLAWS:
            raise f.error(name, f"unknown heavy flaw {x!r} (expected one of {', '.join(HEAVY_FLAWS)})")
    return sorted(set(v))


def parse_judgment(rec: dict, path, line: int) -> dict:
    """Validate one verdict; return its `judgments` row. The optional fields (annotator, prompt_hash,
    item_kind, flaws_a/b, origin, submission_id) enter the judgment id only when given, so a file's verdicts
    keep their ids; a submission_id (the Queue page's form) makes a second submit of one form the same id."""
    f = Fields(rec, path, line)
    row: dict[str, Any] = {
        "battle_id": f.str("battle_id", allow_int=True),
        "model_a": f.str("model_a"),
        "model_b": f.str("model_b"),
        "winner": f.choice("winner", WINNERS),
        "heavy_flaw_a": f.bool("heavy_flaw_a"),
        "heavy_flaw_b": f.bool("heavy_flaw_b"),
        "judge": f.str("judge", required=False),
        "notes": f.str("notes", required=False, allow_empty=True),
    }
    if row["model_a"] == row["model_b"]:
        raise f.error("model_b", "model_a and model_b are the same model")
    extras: dict[str, Any] = {}
    for name in ("annotator", "prompt_hash", "origin", "submission_id"):
        if f.has(name):
            extras[name] = f.str(name)
    if f.has("item_kind"):
        extras["item_kind"] = f.choice("item_kind", JUDGED_KINDS)
    for side in ("a", "b"):
        flaws = _flaw_list(f, f"flaws_{side}")
        if flaws is not None:
            extras[f"flaws_{side}"] = flaws
            if flaws and not row[f"heavy_flaw_{side}"]:
                raise f.error(f"heavy_flaw_{side}", f"false, but flaws_{side} names {', '.join(flaws)}")
    identity = {**row, **extras}
    if "submission_id" in extras:
        identity = {"submission_id": extras["submission_id"]}
    row["judgment_id"] = content_id(json.dumps(identity, sort_keys=True))
    extras.pop("submission_id", None)
    row.update(extras)
    row["_line"] = line
    return row


def _check_judged_items(store, rows: list[dict], path) -> None:
    """Every verdict names a stored battle, or for eval items `<suite>/<item id>` of a stored item (only the
    ids named are looked up: a vote from the Queue page does not read the whole table)."""
    named = {r["battle_id"] for r in rows if r.get("item_kind") != "eval_item"}
    items = {r["battle_id"] for r in rows if r.get("item_kind") == "eval_item"}
    battles = {
        b for (b,) in store.con.execute("SELECT battle_id FROM battles WHERE list_contains(?, battle_id)",
                                        [sorted(named)]).fetchall()
    } if named else set()  # fmt: skip
    known_items = {
        x for (x,) in store.con.execute(
            "SELECT suite || '/' || item_id FROM eval_items WHERE list_contains(?, suite || '/' || item_id)",
            [sorted(items)]).fetchall()
    } if items else set()  # fmt: skip
    for r in rows:
        if r.get("item_kind") == "eval_item":
            if r["battle_id"] not in known_items:
                raise BadInput(
                    f"unknown eval item {r['battle_id']!r} (expected <suite>/<item id> of a stored item)",
                    path=str(path),
                    line=r["_line"],
                    field="battle_id",
                )
        elif r["battle_id"] not in battles:
            raise BadInput(
                f"unknown battle {r['battle_id']!r} (ingest the battles first)",
                path=str(path),
                line=r["_line"],
                field="battle_id",
            )


def _write_judgments(store, rows: list[dict], path, result: IngestResult, *, log: bool) -> IngestResult:
    _check_judged_items(store, rows, path)
    rows, dup = dedup_in_file(rows, lambda r: r["judgment_id"], "judgment_id", "judgment", path)
    with store.transaction():
        added, same = insert_new(
            store, "judgments", ["judgment_id"], rows, _JUDGMENT_SCHEMA, "false", "judgment", path
        )
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
        if log:
            log_ingest(store, path, "judgments", result.read, result.added)
    return result


def ingest_judgments(store, path, *, progress: bool = False) -> IngestResult:
    """Blind judge verdicts per battle: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b (and
    optionally annotator, prompt_hash, item_kind, flaws_a/b, origin)."""
    result = IngestResult("judgments", str(path))
    rows = []
    for line, rec in progress_bar(read_records(path), progress, "judgments", path=path):
        result.read += 1
        row = parse_judgment(rec, path, line)
        row["source_file"] = Path(path).name
        rows.append(row)
    return _write_judgments(store, rows, path, result, log=True)


def add_judgment_records(store, records: list[dict], *, source: str) -> IngestResult:
    """Verdicts made in this process (the Queue page, `pairstore judge`), through the same checks as a
    file's lines, in one transaction."""
    result = IngestResult("judgments", source)
    rows = []
    for line, rec in enumerate(records, start=1):
        result.read += 1
        row = parse_judgment(rec, source, line)
        row["source_file"] = source
        rows.append(row)
    return _write_judgments(store, rows, source, result, log=False)
