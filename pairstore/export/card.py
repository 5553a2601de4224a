"""The dataset card of an export folder: README.md with the YAML `configs` that `datasets` reads.

`datasets.load_dataset(FOLDER)` loads the default config (the folder's latest export, its preference
rows); `load_dataset(FOLDER, "NAME-nll")` its NLL-only rows. Because the card names the data files,
`datasets` never reads the evidence JSON as data. The card is rebuilt from the registry after every
export into the folder, so it lists every current (not superseded) export there, with the round, the
rows, the gate's counts and the SHA-256 of each file and of its evidence. A README.md that pairstore
did not write is left alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pairstore.export.paths import CARD_NAME, is_sft_file
from pairstore.files import atomic_write_text

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
        "| config | file | rows | gate: members checked | pairs checked | exempted | sha256 | evidence "
        "| evidence sha256 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in entries:
        g = e.gate or {}
        lines.append(
            f"| {config_name(e)} | {e.file} | {e.rows} | {g.get('members_checked', '')} | "
            f"{g.get('pairs_checked', '')} | {len(g.get('exempted') or [])} | {e.sha256} | "
            f"{e.evidence_file or ''} | {e.evidence_sha256 or ''} |"
        )
    return "\n".join(lines) + "\n"


def card_entries(store, folder: Path) -> tuple[list[CardEntry], str | None]:
    """The current exports registered in `folder` and the round exported there last."""
    rows = store.rows(
        "SELECT round, path, rows, sha256, evidence_path, evidence_sha256, evidence, created_at FROM exports "
        "WHERE kind = 'export' AND superseded_at IS NULL ORDER BY created_at, round, path"
    )
    entries, default_round = [], None
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
        if not is_sft_file(path):
            default_round = r["round"]
    return entries, default_round


def write_card(store, folder) -> tuple[Path | None, str | None]:
    """(card path, None) after (re)writing the folder's card, or (None, why) when a README.md there is
    not pairstore's."""
    folder = Path(folder)
    card = folder / CARD_NAME
    if card.exists() and MARKER not in card.read_text(encoding="utf-8", errors="replace"):
        return None, f"{card}: a README.md pairstore did not write is there; no dataset card was written"
    entries, default_round = card_entries(store, folder)
    atomic_write_text(card, render_card(entries, default_round))
    return card, None
