"""The files an export writes over: which registered files it would replace, and what an interrupted
export left behind.

    supersede = replacements(store, {final_path: new_sha256, ...}, replace=False)  # BadInput on a clash
    found = leftovers(store, out_dir, [final_path, ...])   # temp files, files renamed but never registered

A folder may hold a registered file (an earlier export of the round, or an attached file) at the path an
export is about to write. Same bytes: nothing changes. Other bytes: the export is refused, naming the
file, unless `--replace`, which marks the old registration superseded (pairstore.export.registry) so mixture
audits keep passing while the registry keeps the history.

An export killed between its writes and its registration leaves temp files (`.NAME.parquet.<random>.tmp`,
pairstore.files) or final files whose bytes no registration has; the next export into the folder and
`audit mixtures` name them. Each export logs `export.started` with its folder first, so the audit finds
the folder of a first export that never got registered.
"""

from __future__ import annotations

import json
from pathlib import Path

from pairstore.errors import BadInput
from pairstore.export.registry import active_at
from pairstore.files import leftover_temps


def replacements(store, new_sha: dict[Path, str | None], *, replace: bool) -> list[str]:
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


def leftovers(store, folder: Path, finals: list[Path]) -> list[tuple[Path, str]]:
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


def started_exports(store) -> list[dict]:
    """Every export that began: its round, folder and final files (audit_log `export.started`)."""
    out = []
    for subject, detail in store.con.execute(
        "SELECT subject, detail FROM audit_log WHERE action = 'export.started' ORDER BY seq"
    ).fetchall():
        d = json.loads(detail) if isinstance(detail, str) else detail
        out.append({"round": subject, "out": d.get("out"), "files": d.get("files", [])})
    return out
