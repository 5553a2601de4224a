"""Ingest of blind judge verdicts into `judgments` (this module writes it).

pairstore ingest judgments verdicts.jsonl

The format is declared in pairstore.ingest.formats (`native`); a file is read into checked batches
(pairstore.ingest.batches). The Queue page (`pairstore serve`) and `pairstore judge` write through the
same reading (add_judgment_records).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.ingest.base import PLACE, IngestResult, StagedRows
from pairstore.ingest.batches import Batch, read_columns, record_batch
from pairstore.ingest.formats import get_format
from pairstore.ingest.formats.judgments_native import HEAVY_FLAWS, JUDGED_KINDS
from pairstore.keys import content_id
from pairstore.tables.ingests import log_ingest

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.store.store import Store

__all__ = ["HEAVY_FLAWS", "JUDGED_KINDS", "add_judgment_records", "ingest_judgments"]

_READ = pa.schema(
    [
        (f.name, f.kind.arrow)  # type: ignore[union-attr]  # every field of the format has a kind
        for f in get_format("judgments", "native").fields
    ]
    + [("_row", pa.int64())]
)
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
        *PLACE,
    ]
)
_BASE = ("battle_id", "model_a", "model_b", "winner", "heavy_flaw_a", "heavy_flaw_b", "judge", "notes")
_EXTRAS = ("annotator", "prompt_hash", "origin", "submission_id", "item_kind", "flaws_a", "flaws_b")


def judgment_rows(batch: Batch, source: str, seq: int) -> list[dict]:
    """The `judgments` rows of a batch of verdicts. The optional fields (annotator, prompt_hash, item_kind,
    flaws_a/b, origin, submission_id) enter the judgment id only when given, so a file's verdicts keep
    their ids; a submission_id (the Queue page's form) makes a second submit of one form the same id."""
    t = batch.table
    columns = {name: t.column(name).to_pylist() for name in t.column_names}
    rows = []
    for i in range(t.num_rows):
        v = {name: col[i] for name, col in columns.items()}
        row: dict[str, Any] = {name: v[name] for name in _BASE}
        row["heavy_flaw_a"] = bool(v["heavy_flaw_a"])
        row["heavy_flaw_b"] = bool(v["heavy_flaw_b"])
        if row["model_a"] == row["model_b"]:
            raise batch.error(i, "model_a and model_b are the same model", "model_b")
        extras = {name: v[name] for name in _EXTRAS if v[name] is not None}
        for side in ("a", "b"):
            flaws = extras.get(f"flaws_{side}")
            if flaws and not row[f"heavy_flaw_{side}"]:
                raise batch.error(
                    i, f"false, but flaws_{side} names {', '.join(flaws)}", f"heavy_flaw_{side}"
                )
        identity = {**row, **extras}
        if "submission_id" in extras:
            identity = {"submission_id": extras["submission_id"]}
        row["judgment_id"] = content_id(json.dumps(identity, sort_keys=True))
        extras.pop("submission_id", None)
        row.update(extras)
        row["source_file"] = source
        row["_file"] = str(batch.path)
        row["_row"] = v["_row"]
        row["_line"] = batch.lines[i] if batch.lines is not None else None
        row["_seq"] = seq + i
        row["_i"] = i
        rows.append(row)
    return rows


def _check_judged_items(store: Store, rows: list[dict], batch_of: Callable[[dict], Batch]) -> None:
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
                raise batch_of(r).error(
                    r["_i"],
                    f"unknown eval item {r['battle_id']!r} (expected <suite>/<item id> of a stored item)",
                    "battle_id",
                )
        elif r["battle_id"] not in battles:
            raise batch_of(r).error(
                r["_i"], f"unknown battle {r['battle_id']!r} (ingest the battles first)", "battle_id"
            )


def _write(
    store: Store,
    batches: list[Batch],
    source: str,
    result: IngestResult,
    *,
    log_path: StrPath | None = None,
) -> IngestResult:
    rows: list[dict] = []
    owner: dict[int, Batch] = {}
    for batch in batches:
        got = judgment_rows(batch, source, len(rows))
        for r in got:
            owner[r["_seq"]] = batch
        rows.extend(got)
    result.read = len(rows)
    _check_judged_items(store, rows, lambda r: owner[r["_seq"]])
    with store.transaction():
        staged = StagedRows(
            store, "judgments", ["judgment_id"], _JUDGMENT_SCHEMA, "judgment_id", "judgment", source
        )
        staged.add(rows)
        added, same = staged.insert("false")
        result.added = added
        if same:
            result.skipped["already present"] = same
        if log_path is not None:
            log_ingest(store, log_path, "judgments", result.read, result.added)
    return result


def ingest_judgments(store: Store, path: StrPath, *, progress: bool = False) -> IngestResult:
    """Blind judge verdicts per battle: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b (and
    optionally annotator, prompt_hash, item_kind, flaws_a/b, origin)."""
    if not Path(path).is_file():
        raise BadInput("no such file" if not Path(path).exists() else "a folder, not a file", path=str(path))
    batches = list(read_columns(get_format("judgments", "native"), _READ, path))
    return _write(store, batches, Path(path).name, IngestResult("judgments", str(path)), log_path=path)


def add_judgment_records(store: Store, records: list[dict], *, source: str) -> IngestResult:
    """Verdicts made in this process (the Queue page, `pairstore judge`), through the same reading as a
    file's lines, in one transaction."""
    batch = record_batch(get_format("judgments", "native"), _READ, records, source)
    return _write(store, [batch], source, IngestResult("judgments", source))
