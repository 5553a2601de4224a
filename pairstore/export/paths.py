"""Where an export's files go: the one place their names are made.

    OUT/NAME.parquet                  the preference mixture (TRL's conversational format)
    OUT/NAME.sft.parquet              its NLL-only rows, when it has some
    OUT/NAME.training_evidence.json   the evidence (hashes, gate, recipe)
    OUT/README.md                     the dataset card: `datasets.load_dataset(OUT)` reads the configs it
                                      names (NAME, and NAME-nll for the NLL rows), never the evidence

Every reader of these paths (audits, `train dpo`, attach, the card) goes through this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pairstore.errors import BadInput

if TYPE_CHECKING:
    from pairstore.files import StrPath

EVIDENCE_SUFFIX = ".training_evidence.json"
SFT_SUFFIX = ".sft.parquet"
CARD_NAME = "README.md"


def evidence_name(round_name: str) -> str:
    return f"{round_name}{EVIDENCE_SUFFIX}"


def is_sft_file(path: StrPath) -> bool:
    """An export's NLL-only file (prompt, completion), by its name."""
    return str(path).endswith(SFT_SUFFIX)


def evidence_beside(path: StrPath, round_name: str) -> Path:
    """The evidence file of the export that wrote `path` (its pair file or its NLL file)."""
    return Path(path).parent / evidence_name(round_name)


def relocated(store_path: StrPath | None, registered: StrPath) -> Path | None:
    """Where a registered file that is not at its registered path now lies when the store was moved (or
    copied) together with its files: the longest tail of the registered path that exists under the
    store's folder (`/old/run/mixtures/m11a.parquet` -> `STORE_DIR/mixtures/m11a.parquet`); None when
    the file is at its registered path or nowhere beside the store. The caller says both paths."""
    registered = Path(registered)
    # Only a folder that is gone as a whole was moved: a file missing from a folder still there was
    # deleted, and the audit must say so. The tail keeps the file's folder, so another file of the
    # same name beside the store is never taken for it.
    if store_path is None or registered.exists() or registered.parent.exists():
        return None
    base = Path(store_path).resolve().parent
    parts = registered.parts[1:] if registered.is_absolute() else registered.parts
    for start in range(len(parts) - 1):
        candidate = base.joinpath(*parts[start:])
        if candidate.exists():
            return candidate
    return None


@dataclass(frozen=True)
class ExportPaths:
    folder: Path
    dpo: Path
    sft: Path
    evidence: Path
    card: Path

    def mixture_files(self) -> dict[str, Path]:
        return {"dpo": self.dpo, "sft": self.sft}


def export_paths(out: Path, name: str) -> ExportPaths:
    """The files of round `name`'s export into folder `out` (resolved); BadInput if a name escapes it."""
    folder = Path(out).resolve()
    paths = ExportPaths(
        folder=folder,
        dpo=folder / f"{name}.parquet",
        sft=folder / f"{name}{SFT_SUFFIX}",
        evidence=folder / evidence_name(name),
        card=folder / CARD_NAME,
    )
    for p in (paths.dpo, paths.sft, paths.evidence):
        if p.parent != folder:
            raise BadInput(f"round {name!r} would write outside {folder}", field="out")
    return paths
