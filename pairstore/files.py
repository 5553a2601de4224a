"""Writing files so that a reader never sees half of one: a temp name in the same folder, then a rename.

    from pairstore.files import atomic_path, atomic_write_json
    with atomic_path("mixtures/m11a.parquet") as tmp:
        write_parquet(tmp)                       # renamed onto the final name only if this succeeds
    atomic_write_json("runs/m11a/job.json", {"round": "m11a"})

Every file pairstore writes (exports, evidence, reports, bundles, job files) goes through here. A temp
file is named `.<final name>.<random>.tmp`, so `leftover_temps(folder)` can name what a killed writer
left behind.

A folder (a bundle, a report) is published the same way: written complete inside `staged_folder`
(`.<final name>.<random>.tmp` beside it), every file fsynced and the folder renamed `.ready`
(`seal_folder`), then made visible by one rename (`publish_sealed`); a folder it replaces is first
renamed to `.<final name>.<random>.old`. Where a store registers the folder, the registration commits
between the seal and the rename, so the commit decides: `recover_folder` (the next run) publishes a
sealed folder whose registration committed and removes one whose did not, puts back or removes a
folder renamed aside, and removes staged folders.

Fault injection: every rename and commit that publishes something calls `publish_point(label)`. With
PAIRSTORE_FAULT_KILL_AT=N in the environment the process kills itself (SIGKILL) at the Nth point; with
PAIRSTORE_FAULT_TRACE=FILE each point's label is appended to FILE. The tests use both to stop a writer at
every point in turn.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeAlias

from pairstore.errors import PairstoreError

# A path as the functions here and their callers take it: a string or any os.PathLike of str.
StrPath: TypeAlias = "str | os.PathLike[str]"

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
def atomic_path(path: StrPath, *, fsync: bool = True) -> Iterator[Path]:
    """Yield a temp path in the same folder; on success it is fsynced and renamed onto `path`,
    on error removed."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(final)
    try:
        yield tmp
        if fsync:
            fsync_file(tmp)
        publish_point(f"rename {final.name}")
        os.replace(tmp, final)
        if fsync:
            fsync_dir(final.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def atomic_write_bytes(path: StrPath, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: StrPath, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: StrPath, obj: object) -> Path:
    return atomic_write_text(
        path, json.dumps(obj, indent=2, sort_keys=True, default=str, ensure_ascii=False) + "\n"
    )


def fsync_dir(path: StrPath) -> None:
    """Make the renames inside a folder durable (a no-op where the OS cannot open folders)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def leftover_temps(folder: StrPath, final_name: str | None = None) -> list[Path]:
    """Temp files a killed writer left in `folder` (for one final name, or any)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    prefix = f".{final_name}." if final_name else "."
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefix) and p.name.endswith(TEMP_SUFFIX))


def missing_folders(path: StrPath) -> list[Path]:
    """`path` and its parents that do not exist yet, deepest first: what mkdir(parents=True) makes."""
    missing = []
    p = Path(path).absolute()
    while not p.exists() and not p.is_symlink() and p != p.parent:
        missing.append(p)
        p = p.parent
    return missing


def remove_empty_folders(folders: Iterable[Path]) -> None:
    """rmdir each of `folders` (deepest first) that is empty: a failed write leaves no empty folder it made
    at a final path (one that holds anything stays)."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


# ---------------------------------------------------------------------------- publishing points

_points = 0


def publish_point(label: str) -> None:
    """A rename or commit that publishes something is about to happen (see the module's docstring)."""
    global _points
    _points += 1
    trace = os.environ.get("PAIRSTORE_FAULT_TRACE")
    if trace:
        with open(trace, "a", encoding="utf-8") as f:
            f.write(f"{_points}\t{label}\n")
    kill_at = os.environ.get("PAIRSTORE_FAULT_KILL_AT")
    if kill_at and kill_at.isdigit() and int(kill_at) == _points:
        os.kill(os.getpid(), signal.SIGKILL)


def fsync_file(path: StrPath) -> None:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


# ---------------------------------------------------------------------------- space


def free_space(folder: StrPath) -> int:
    """The bytes free where `folder` is (or the nearest existing folder above it)."""
    probe = Path(folder).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_free_space(folder: StrPath, needed: int, *, what: str = "this") -> None:
    """PairstoreError (exit 1) naming the folder and the bytes when `folder` (or the nearest existing folder
    above it) has less than `needed` bytes free."""
    free = free_space(folder)
    if free < needed:
        raise PairstoreError(
            f"{folder}: not enough free space for {what}: it needs {needed:,} bytes, {free:,} are free; "
            "free space there or choose another folder"
        )


def write_failure(where: StrPath, error: BaseException) -> PairstoreError:
    """One line for a write into `where` that failed (a full disk, a permission, a read-only folder)."""
    first = (str(error).splitlines() or [type(error).__name__])[0]
    no_space = (
        getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "no space left" in first.lower()
    )
    with contextlib.suppress(OSError):
        no_space = no_space or shutil.disk_usage(
            Path(where) if Path(where).is_dir() else Path(where).parent
        ).free < (1 << 20)
    if no_space:
        return PairstoreError(f"{where}: no space left on the device; free space there and run again")
    code = getattr(error, "errno", None)
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return PairstoreError(f"{where}: cannot write there ({os.strerror(code)}); choose a writable folder")
    return PairstoreError(f"{where}: writing failed ({first}); check free space and permissions there")


# ---------------------------------------------------------------------------- folders

STAGED_SUFFIX = ".tmp"
REPLACED_SUFFIX = ".old"
READY_SUFFIX = ".ready"


def fsync_tree(folder: StrPath) -> None:
    """fsync every file under `folder`, then every folder in it, deepest first."""
    folders = []
    for root, _dirs, files in os.walk(folder):
        folders.append(root)
        for name in files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                fsync_file(p)
    for root in reversed(folders):
        fsync_dir(root)


@contextlib.contextmanager
def writes_into(where: StrPath) -> Iterator[None]:
    """An OSError inside the block (a full disk, a permission, a read-only folder) becomes
    `write_failure`'s one line naming `where`."""
    try:
        yield
    except OSError as e:
        raise write_failure(where, e) from None


@contextlib.contextmanager
def staged_folder(final: StrPath) -> Iterator[Path]:
    """A new empty folder beside `final` to write a whole artefact into; removed if the block fails.
    Publish it with `publish_folder` inside the block."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=STAGED_SUFFIX, dir=final.parent))
    os.chmod(tmp, 0o777 & ~_UMASK)
    try:
        yield tmp
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def folder_is_free(final: StrPath) -> bool:
    """Nothing at `final`, or an empty folder: a publish there replaces nothing."""
    final = Path(final)
    return not final.exists() or (final.is_dir() and not final.is_symlink() and not any(final.iterdir()))


def seal_folder(staged: StrPath) -> Path:
    """fsync everything in the complete folder `staged` and rename it `.<final name>.<random>.ready`: from
    here on it is whole, and only waits to be published (a publish point)."""
    staged = Path(staged)
    fsync_tree(staged)
    ready = staged.with_name(staged.name[: -len(STAGED_SUFFIX)] + READY_SUFFIX)
    publish_point(f"seal {staged.name}")
    os.rename(staged, ready)
    fsync_dir(ready.parent)
    return ready


def publish_sealed(ready: StrPath, final: StrPath, *, replace: bool = False) -> None:
    """Make the sealed folder `ready` visible as `final` by one rename. A folder already at `final` with
    files in it is refused unless `replace`: then it is first renamed aside and removed once the new one
    is in place."""
    ready, final = Path(ready), Path(final)
    aside = None
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        raise PairstoreError(f"{final}: exists and is not a folder; remove it or choose another path")
    if final.exists() and not folder_is_free(final):
        if not replace:
            raise PairstoreError(f"{final}: the folder already holds files; choose a new folder")
        aside = final.with_name(f".{final.name}.{os.urandom(6).hex()}{REPLACED_SUFFIX}")
        publish_point(f"rename {final.name} aside")
        os.rename(final, aside)
    publish_point(f"rename {final.name}")
    os.rename(ready, final)  # onto an empty folder too: rename(2) replaces an empty directory
    fsync_dir(final.parent)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def publish_folder(staged: StrPath, final: StrPath, *, replace: bool = False) -> None:
    """Seal `staged` and publish it as `final` (no registration to wait for)."""
    publish_sealed(seal_folder(staged), final, replace=replace)


def recover_folder(final: StrPath, committed: Callable[[Path], bool] | None = None) -> list[str]:
    """Clean what a killed publish of `final` left beside it, and return one line per thing done:

    - a sealed folder (`.ready`) is published when `committed(ready)` says its registration committed
      (or when there is no registration: `committed` None), else removed;
    - a folder renamed aside (`.old`) is put back when nothing took its place, else removed;
    - a staged folder (`.tmp`, never sealed) is removed."""
    final = Path(final)
    notes: list[str] = []
    parent = final.parent
    if not parent.is_dir():
        return notes
    mine = [p for p in sorted(parent.iterdir()) if p.name.startswith(f".{final.name}.") and p.is_dir()]
    for p in mine:
        if p.name.endswith(READY_SUFFIX):
            if committed is None or committed(p):
                publish_sealed(p, final, replace=True)
                notes.append(f"{final}: published the complete folder an interrupted run had sealed")
            else:
                shutil.rmtree(p, ignore_errors=True)
                notes.append(f"{p}: removed a complete folder whose registration never committed")
    for p in mine:
        if not p.exists():
            continue
        if p.name.endswith(REPLACED_SUFFIX):
            if not final.exists():
                os.rename(p, final)
                notes.append(f"{final}: put back the folder an interrupted run had renamed aside ({p.name})")
            else:
                shutil.rmtree(p, ignore_errors=True)
                notes.append(f"{p}: removed the old folder an interrupted run had replaced")
        elif p.name.endswith(STAGED_SUFFIX):
            shutil.rmtree(p, ignore_errors=True)
            notes.append(f"{p}: removed the partial folder of an interrupted run")
    return notes
