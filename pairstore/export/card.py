"""The dataset card of an export folder: README.md with the YAML `configs` that `datasets` reads.

`datasets.load_dataset(FOLDER, "NAME")` loads round NAME's preference rows and `load_dataset(FOLDER,
"NAME-nll")` its NLL-only rows. Without a name, `load_dataset(FOLDER)` loads the round when the folder
holds one, and refuses to guess when it holds several (datasets then lists the configs). Because the card
names the data files, `datasets` never reads the evidence JSON as data.

The card is rebuilt after every export into the folder. It lists every round exported there: the
store's current (not superseded) registrations, and every other round whose evidence file and data
files are in the folder (exported by another store, or before this store was moved), each with its
rows, the gate's counts and the SHA-256 of each file and of its evidence. A README.md that pairstore did
not write is left alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pairstore.export.paths import CARD_NAME, EVIDENCE_SUFFIX, is_sft_file
from pairstore.files import StrPath, atomic_write_text

if TYPE_CHECKING:
    from pairstore.store.store import Store

MARKER = "<!-- written by pairstore export: rebuilt from the store's registry after every export here -->"


@dataclass(frozen=True)
class CardEntry:
    round: str
    file: str  # name inside the folder
    kind: str  # dpo or sft
    rows: int
    sha256: str
    evidence_file: str | None
    evidence_sha256: str | None
    gate: dict


def config_name(entry: CardEntry) -> str:
    return entry.round if entry.kind == "dpo" else f"{entry.round}-nll"


def render_card(entries: list[CardEntry], default_round: str | None) -> str:
    """The card's text: YAML front matter (`configs`, one per file; the default is `default_round`'s
    preference rows), then a table of what each file is. Pure: the same entries give the same bytes."""
    entries = sorted(entries, key=lambda e: (e.round, e.kind))
    lines = ["---", "configs:"]
    for e in entries:
        lines.append(f"- config_name: {json.dumps(config_name(e))}")
        if e.kind == "dpo" and e.round == default_round:
            lines.append("  default: true")
        lines += ["  data_files:", "  - split: train", f"    path: {json.dumps(e.file)}"]
    lines += ["---", "", MARKER, "", "# Training mixtures", ""]
    lines += [
        "Exported by `pairstore export` through the holdout gate. Load a round's preference pairs with",
        '`datasets.load_dataset("<this folder>", "<round>")` and its NLL-only rows with the config',
        '`"<round>-nll"`; the evidence JSON beside each file holds the recipe, the gate\'s full result and',
        "every hash (check them with `pairstore audit mixtures`).",
        "",
        (
            f"This folder holds one round, `{default_round}`: `load_dataset(FOLDER)` loads it."
            if default_round is not None
            else "This folder holds several rounds: name one (`load_dataset(FOLDER, ROUND)`); "
            "without a name, `load_dataset` refuses to guess."
        ),
        "",
        "| config | file | rows | gate: members checked | pairs checked | exempted | dropped as held out "
        "| sha256 | evidence | evidence sha256 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in entries:
        g = e.gate or {}
        lines.append(
            f"| {config_name(e)} | {e.file} | {e.rows} | {g.get('members_checked', '')} | "
            f"{g.get('pairs_checked', '')} | {len(g.get('exempted') or [])} | "
            f"{len({d['pair_id'] for d in g.get('dropped_held_out') or []})} | {e.sha256} | "
            f"{e.evidence_file or ''} | {e.evidence_sha256 or ''} |"
        )
    return "\n".join(lines) + "\n"


def card_entries(store: Store, folder: Path) -> tuple[list[CardEntry], str | None]:
    """Every round exported into `folder` (the store's current registrations, then the rounds whose
    evidence lies there without one) and the default round: the only one, or None when there are
    several, so load_dataset(FOLDER) never silently picks one."""
    rows = store.rows(
        "SELECT round, path, rows, sha256, evidence_path, evidence_sha256, evidence, created_at FROM exports "
        "WHERE kind = 'export' AND superseded_at IS NULL ORDER BY created_at, round, path"
    )
    entries: list[CardEntry] = []
    for r in rows:
        path = Path(r["path"])
        if path.parent != folder:
            continue
        evidence = json.loads(r["evidence"]) if r["evidence"] else {}
        entries.append(
            CardEntry(
                round=r["round"],
                file=path.name,
                kind="sft" if is_sft_file(path) else "dpo",
                rows=int(r["rows"] or 0),
                sha256=r["sha256"],
                evidence_file=Path(r["evidence_path"]).name if r["evidence_path"] else None,
                evidence_sha256=r["evidence_sha256"],
                gate=evidence.get("gate") or {},
            )
        )
    registered = {e.round for e in entries}
    entries += [e for e in evidence_entries(folder) if e.round not in registered]
    rounds = {e.round for e in entries}
    default_round = next(iter(rounds)) if len(rounds) == 1 else None
    return entries, default_round


def evidence_entries(folder: Path) -> list[CardEntry]:
    """Card entries read from the evidence files in `folder` whose data files are there too: rounds
    another store (or this one before a move) exported into the folder. Their hashes are the evidence's
    own; `pairstore audit mixtures` checks registered files against theirs."""
    out = []
    for evidence_path in sorted(folder.glob(f"*{EVIDENCE_SUFFIX}")):
        try:
            raw = evidence_path.read_bytes()
            evidence = json.loads(raw)
        except (OSError, ValueError):
            continue  # not pairstore's, or damaged: the card does not vouch for it
        if not isinstance(evidence, dict) or not isinstance(evidence.get("round"), str):
            continue
        for kind, file_key, sha_key, rows_key in (
            ("dpo", "parquet", "parquet_sha256", "rows"),
            ("sft", "sft_parquet", "sft_parquet_sha256", "sft_rows"),
        ):
            name = evidence.get(file_key)
            if not isinstance(name, str) or not (folder / name).is_file():
                continue
            out.append(
                CardEntry(
                    round=evidence["round"],
                    file=name,
                    kind=kind,
                    rows=int(evidence.get(rows_key) or 0),
                    sha256=str(evidence.get(sha_key) or ""),
                    evidence_file=evidence_path.name,
                    evidence_sha256=hashlib.sha256(raw).hexdigest(),
                    gate=evidence.get("gate") or {},
                )
            )
    return out


def write_card(store: Store, folder: StrPath) -> tuple[Path | None, str | None]:
    """(card path, None) after (re)writing the folder's card, or (None, why) when a README.md there is
    not pairstore's."""
    folder = Path(folder)
    card = folder / CARD_NAME
    if card.exists() and MARKER not in card.read_text(encoding="utf-8", errors="replace"):
        return None, f"{card}: a README.md pairstore did not write is there; no dataset card was written"
    entries, default_round = card_entries(store, folder)
    atomic_write_text(card, render_card(entries, default_round))
    return card, None
