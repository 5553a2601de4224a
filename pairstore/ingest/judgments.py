"""Ingest of blind judge verdicts into `judgments` (this module writes it).

pairstore ingest judgments verdicts.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
        ("source_file", pa.string()),
        ("_line", pa.int64()),
    ]
)


def ingest_judgments(store, path, *, progress: bool = False) -> IngestResult:
    """Blind judge verdicts per battle: battle_id, model_a, model_b, winner a|b|tie, heavy_flaw_a/b."""
    result = IngestResult("judgments", str(path))
    rows = []
    for line, rec in progress_bar(read_records(path), progress, "judgments", path=path):
        result.read += 1
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
        row["judgment_id"] = content_id(json.dumps(row, sort_keys=True))
        row["source_file"] = Path(path).name
        row["_line"] = line
        rows.append(row)
    known = {r[0] for r in store.con.execute("SELECT battle_id FROM battles").fetchall()}
    for r in rows:
        if r["battle_id"] not in known:
            raise BadInput(
                f"unknown battle {r['battle_id']!r} (ingest the battles first)",
                path=str(path),
                line=r["_line"],
                field="battle_id",
            )
    rows, dup = dedup_in_file(rows, lambda r: r["judgment_id"], "judgment_id", "judgment", path)
    with store.transaction():
        added, same = insert_new(
            store, "judgments", ["judgment_id"], rows, _JUDGMENT_SCHEMA, "false", "judgment", path
        )
        result.added = added
        if same + dup:
            result.skipped["already present"] = same + dup
        log_ingest(store, path, "judgments", result.read, result.added)
    return result
