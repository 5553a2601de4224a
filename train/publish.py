"""Where a bundle (merge, soup) may be published, and what an interrupted run left there.

    replace = prepare_output(store, out_dir)     # BadInput when out_dir holds something else

Before anything is written: what a killed run left beside `out_dir` is cleaned (pairstore.files.
recover_folder: staged folders removed, a folder renamed aside put back). Then `out_dir` must be free (absent or
empty), or hold a bundle pairstore wrote (its training_evidence.json says merge or soup): a re-run, whose
registration is replaced in the same transaction as the folder, or what a run killed between its rename
and its commit left unregistered. Anything else is refused: pairstore never writes over a folder it did
not make.
"""

from __future__ import annotations

import json
from pathlib import Path

from pairstore.errors import BadInput
from pairstore.files import folder_is_free, recover_folder

EVIDENCE_FILE = "training_evidence.json"
BUNDLE_KINDS = ("merge", "soup")


def _bundle_kind(folder: Path) -> str | None:
    try:
        evidence = json.loads((folder / EVIDENCE_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return evidence.get("kind") if isinstance(evidence, dict) else None


def prepare_output(store, out_dir) -> bool:
    """Clean what an interrupted publish of `out_dir` left, then say whether the publish replaces a folder
    (True) or fills a free path (False); BadInput when `out_dir` holds anything pairstore should not
    replace."""
    out = Path(out_dir)
    recover_folder(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise BadInput("output path exists and is not a folder", path=str(out))
    if folder_is_free(out):
        return False
    first = sorted(p.name for p in out.iterdir())[0]
    if _bundle_kind(out) not in BUNDLE_KINDS:
        raise BadInput(
            f"output folder already holds files ({first}) that are not a pairstore bundle; use a new folder",
            path=str(out),
        )
    return True
