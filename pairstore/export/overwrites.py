"""The files an export writes over: which registered files it would replace, and what an interrupted
export left behind.

    supersede = replacements(store, {final_path: new_sha256, ...}, replace=False)  # BadInput on a clash
    found = leftovers(store, out_dir, [final_path, ...])   # temp files, files renamed but never registered

A folder may hold a registered file (an earlier export of the round, or an attached file) at the path an
export is about to write. Same bytes: nothing changes. Other bytes: the export is refused, naming the
file, unless `--replace`, which marks the old registration superseded (pairstore.export.registry) so mixture
audits keep passing while the registry keeps the history.

An export publishes inside the registry's transaction: files already at the final paths are renamed aside
(`.NAME.parquet.<random>.old`, `set_aside`), the new ones renamed onto them, then the registration
commits. An export killed on the way leaves temp files (`.NAME.parquet.<random>.tmp`, pairstore.files),
files renamed aside, or final files no registration has; the next export into the folder puts back what
the registry still names and removes the rest (`recover_interrupted`), and `audit mixtures` names them.
Each export logs `export.started` with its folder first, so the audit finds the folder of a first export
that never got registered.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pairstore.errors import BadInput
from pairstore.export.paths import CARD_NAME
from pairstore.export.registry import active_at
from pairstore.files import leftover_temps, publish_point
from pairstore.keys import sha256_file

if TYPE_CHECKING:
    from pairstore.store.store import Store

ASIDE_SUFFIX = ".old"


def set_aside(final: Path) -> Path:
    """Rename `final` to `.NAME.<random>.old` beside it (a publish point) and return the new name."""
    aside = final.with_name(f".{final.name}.{os.urandom(6).hex()}{ASIDE_SUFFIX}")
    publish_point(f"rename {final.name} aside")
    os.replace(final, aside)
    return aside


def _set_aside_files(folder: Path, final: Path) -> list[Path]:
    prefix = f".{final.name}."
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefix) and p.name.endswith(ASIDE_SUFFIX))


def recover_interrupted(store: Store, folder: Path, finals: list[Path]) -> list[str]:
    """Undo what an export killed before its commit left in `folder`, and finish one killed after it:
    a file renamed aside whose bytes the registry still names for its path goes back (the old state); any
    other file renamed aside, and every temp file, is removed; a final file that no registration names
    and that an export of this folder began writing (audit_log `export.started`) is removed. Returns one
    line per thing done."""
    notes: list[str] = []
    if not folder.is_dir():
        return notes
    started = {f for e in started_exports(store) for f in e.get("files", [])}
    # The dataset card is derived from the registry and rebuilt after every export: a temp of it is
    # simply dropped.
    for tmp in leftover_temps(folder, CARD_NAME):
        tmp.unlink(missing_ok=True)
        notes.append(f"{tmp}: removed the temp file of an interrupted dataset card")
    for final in finals:
        registered = {
            sha
            for reg in active_at(store, [str(final)])
            for path, sha in ((reg["path"], reg["sha256"]), (reg["evidence_path"], reg["evidence_sha256"]))
            if path == str(final)
        }
        for tmp in leftover_temps(folder, final.name):
            tmp.unlink(missing_ok=True)
            notes.append(f"{tmp}: removed the temp file of an interrupted export")
        for old in _set_aside_files(folder, final):
            current = sha256_file(final) if final.is_file() else None
            if current not in registered and sha256_file(old) in registered:
                os.replace(old, final)
                notes.append(f"{final}: put back the registered file an interrupted export had renamed aside")
            else:
                old.unlink()
                notes.append(f"{old}: removed a file an export had replaced")
        if (
            final.is_file()
            and str(final) in started
            and not store.one(
                "SELECT 1 FROM exports WHERE path = ? OR evidence_path = ?", [str(final), str(final)]
            )
        ):
            final.unlink()
            notes.append(f"{final}: removed a file an interrupted export never registered")
    return notes


def replacements(store: Store, new_sha: dict[Path, str | None], *, replace: bool) -> list[str]:
    """Export ids whose registered file (or evidence file) at one of the paths would get other bytes.

    `new_sha`: final path -> the SHA-256 it is about to hold (None: the export removes the file). Without
    `replace` a clash raises BadInput (exit 2) naming the file."""
    registered = active_at(store, [str(p) for p in new_sha])
    clashes = []
    for reg in registered:
        for col, sha_col in (("path", "sha256"), ("evidence_path", "evidence_sha256")):
            path = reg[col]
            if path is not None and Path(path) in new_sha and new_sha[Path(path)] != reg[sha_col]:
                clashes.append((path, reg))
    if clashes and not replace:
        # The mixture files first: they are what the round trains on; the evidence file follows them.
        clashes.sort(key=lambda c: (c[0].endswith(".json"), c[0]))
        path, reg = clashes[0]
        others = sorted({p for p, _ in clashes} - {path})
        raise BadInput(
            f"{path} is registered ({reg['kind']} {reg['export_id']} of round {reg['round']!r}) with "
            "other bytes"
            + (f" (and {', '.join(others)})" if others else "")
            + "; export into another folder, or pass --replace to supersede the registration",
            path=path,
            field="out",
        )
    return sorted({reg["export_id"] for _, reg in clashes})


def leftovers(store: Store, folder: Path, finals: list[Path]) -> list[tuple[Path, str]]:
    """(file, what it is) for everything an interrupted export left in `folder` for these final files: temp
    files, and final files no registration names (a registered file with other bytes is the mixture
    audit's "changed", not a leftover)."""
    found = [
        (p, "temp file of an interrupted export") for f in finals for p in leftover_temps(folder, f.name)
    ]
    for f in finals:
        if f.is_file() and not store.one(
            "SELECT 1 FROM exports WHERE path = ? OR evidence_path = ?", [str(f), str(f)]
        ):
            found.append((f, "a file no registration names (an export interrupted before it registered it?)"))
    return found


def started_exports(store: Store) -> list[dict]:
    """Every export that began: its round, folder and final files (audit_log `export.started`)."""
    out = []
    for subject, detail in store.con.execute(
        "SELECT subject, detail FROM audit_log WHERE action = 'export.started' ORDER BY seq"
    ).fetchall():
        d = json.loads(detail) if isinstance(detail, str) else detail
        out.append({"round": subject, "out": d.get("out"), "files": d.get("files", [])})
    return out
