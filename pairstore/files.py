"""Writing files so that a reader never sees half of one: a temp name in the same folder, then a rename.

    from pairstore.files import atomic_path, atomic_write_json
    with atomic_path("mixtures/m11a.parquet") as tmp:
        write_parquet(tmp)                       # renamed onto the final name only if this succeeds
    atomic_write_json("runs/m11a/job.json", {"round": "m11a"})

Every file pairstore writes (exports, evidence, reports, bundles, job files) goes through here. A temp
file is named `.<final name>.<random>.tmp`, so `leftover_temps(folder)` can name what a killed writer
left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)

TEMP_SUFFIX = ".tmp"


def temp_path(final: Path) -> Path:
    """A new empty temp file beside `final` (mode as for any new file: mkstemp alone makes 0600)."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=TEMP_SUFFIX, dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_UMASK)
    return tmp


@contextlib.contextmanager
def atomic_path(path, *, fsync: bool = True) -> Iterator[Path]:
    """Yield a temp path in the same folder; on success it is fsynced and renamed onto `path`,
    on error removed."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(final)
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def atomic_write_bytes(path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path, obj) -> Path:
    return atomic_write_text(
        path, json.dumps(obj, indent=2, sort_keys=True, default=str, ensure_ascii=False) + "\n"
    )


def fsync_dir(path) -> None:
    """Make the renames inside a folder durable (a no-op where the OS cannot open folders)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def leftover_temps(folder, final_name: str | None = None) -> list[Path]:
    """Temp files a killed writer left in `folder` (for one final name, or any)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    prefix = f".{final_name}." if final_name else "."
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefix) and p.name.endswith(TEMP_SUFFIX))
