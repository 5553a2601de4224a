"""The evidence written beside every export: NAME.training_evidence.json.

    evidence = export_evidence(recipe, files, plans=..., gate=..., ...)

It carries what a later reader needs to check the mixture without the store: the parquet files'
SHA-256 and writer-independent content hashes, the recipe and its SHA-256, the system prompt's
SHA-256 and where it came from, rows per block, source and family, what the gate checked and every
exemption it honoured, the row order, the writer settings and the library versions.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import rapidfuzz

from pairstore.export.paths import EVIDENCE_SUFFIX, evidence_name  # noqa: F401  (the names live there)
from pairstore.export.registry import ExportedFile
from pairstore.export.writer import COMPRESSION, COMPRESSION_LEVEL, ROW_GROUP_ROWS
from pairstore.keys import sha256_text
from pairstore.rounds.recipes import Recipe
from pairstore.version import __version__

if TYPE_CHECKING:
    from pairstore.store.store import Store

ROW_ORDER = (
    "blocks in recipe order; within a block pairs in store order (pairs.rowid); copies of a pair adjacent"
)


def library_versions(store: Store) -> dict:
    return {
        "pairstore": __version__,
        "duckdb": duckdb.__version__,
        "pyarrow": pa.__version__,
        "rapidfuzz": rapidfuzz.__version__,
        "schema_version": store.schema_version(),
    }


def export_evidence(
    store: Store,
    recipe: Recipe,
    files: dict[str, ExportedFile],
    *,
    file_names: dict,
    blocks: list[dict],
    rows_by_source: dict,
    rows_by_family: dict,
    gate: dict,
    system_prompt: str | None,
    system_prompt_from: str,
) -> dict:
    """The evidence dict of one export. `files`: kind ("dpo"/"sft") -> the file written;
    `file_names`: kind -> the file's name."""
    dpo = asdict(files["dpo"]) if "dpo" in files else {}
    sft = asdict(files["sft"]) if "sft" in files else None
    return {
        "round": recipe.name,
        "kind": recipe.kind,
        "parents": recipe.parents,
        "job_id": recipe.job_id,
        "recipe_sha256": recipe.sha256,
        "recipe": recipe.to_json(),
        "parquet": file_names["dpo"],
        "parquet_sha256": dpo.get("sha256"),
        "rows": dpo.get("rows", 0),
        "content_hash": dpo.get("content_hash"),
        "sft_parquet": file_names["sft"] if sft else None,
        "sft_parquet_sha256": sft["sha256"] if sft else None,
        "sft_rows": sft["rows"] if sft else 0,
        "sft_content_hash": sft["content_hash"] if sft else None,
        "system_prompt": {
            "from": system_prompt_from,
            "sha256": sha256_text(system_prompt) if system_prompt is not None else None,
        },
        "blocks": blocks,
        "rows_by_source": rows_by_source,
        "rows_by_family": rows_by_family,
        "gate": gate,
        "order": ROW_ORDER,
        "writer": {
            "compression": COMPRESSION,
            "compression_level": COMPRESSION_LEVEL,
            "row_group_rows": ROW_GROUP_ROWS,
        },
        "versions": library_versions(store),
    }
