"""Publishing a bundle (merge, soup): where it may go, the publish itself, what an interrupted run left.

    replace = prepare_output(store, out_dir)     # BadInput when out_dir holds something else
    ... write the whole bundle into pairstore.files.staged_folder(out_dir) ...
    publish_bundle(store, stage, out_dir, replace, register=lambda: register_checkpoint(store, ...))

With a store: the staged folder is sealed (fsynced, renamed `.ready`), the checkpoint registered and
committed, then the sealed folder renamed onto `out_dir`: the commit is the one point that decides. A
kill before it leaves the old state (the next run removes the sealed folder); after it, the new one (the
next run renames the sealed folder into place). Without a store the sealed folder is renamed at once.

Before anything is written: what a killed run left beside `out_dir` is cleaned (pairstore.files.
recover_folder: staged folders removed, a folder renamed aside put back). Then `out_dir` must be free (absent or
empty), or hold a bundle pairstore wrote (its training_evidence.json says merge or soup): a re-run, whose
registration is replaced in the same transaction as the folder, or what a run killed between its rename
and its commit left unregistered. Anything else is refused: pairstore never writes over a folder it did
not make.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from pairstore.errors import BadInput
from pairstore.files import (
    folder_is_free,
    publish_folder,
    publish_point,
    publish_sealed,
    recover_folder,
    seal_folder,
)

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
    recover_bundle(store, out)
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


def _committed(store, out: Path) -> Callable[[Path], bool]:
    """Whether the registration of the sealed folder `ready` committed: a checkpoint at `out` holding the
    very evidence the folder carries."""

    def check(ready: Path) -> bool:
        try:
            evidence = json.loads((ready / EVIDENCE_FILE).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return False
        rows = store.con.execute(
            "SELECT evidence FROM checkpoints WHERE path = ?", [str(out.resolve())]
        ).fetchall()
        return any(
            r[0] is not None and json.loads(r[0]) == json.loads(json.dumps(evidence, default=str))
            for r in rows
        )

    return check


def recover_bundle(store, out_dir) -> list[str]:
    """What a killed publish of `out_dir` left, cleaned (see the module's docstring); one line per thing."""
    out = Path(out_dir)
    return recover_folder(out, None if store is None else _committed(store, out))


def publish_bundle(store, stage: Path, out_dir, replace: bool, register: Callable[[], None] | None) -> None:
    """Publish the complete staged folder as `out_dir`; with a store and `register`, the registration
    commits between the seal and the rename (see the module's docstring)."""
    out = Path(out_dir)
    if store is None or register is None:
        publish_folder(stage, out, replace=replace)
        return
    ready = seal_folder(stage)
    try:
        with store.transaction():
            register()
            publish_point(f"commit checkpoint for {out.name}")
    except BaseException:
        shutil.rmtree(ready, ignore_errors=True)
        raise
    publish_sealed(ready, out, replace=replace)
