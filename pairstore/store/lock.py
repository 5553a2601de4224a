"""Turns at the store file: one fair lock that every pairstore command and `pairstore serve` take before
they open the store, so a command waiting for the file gets it at the holder's next pause.

    with open_in_turn("pairstore.duckdb", what="pairstore ingest battles", wait_s=10) as store:
        ...

Why: DuckDB lets one process write, or several read, at a time, and its own lock is tried, never waited
for. A process that lets the file go and opens it again at once (the web app between votes) takes it
back before a waiting command's next try comes, again and again.

Two lock files per store, locked with flock (released by the kernel when a process dies, so a crash never
leaves a stale lock). They live in this user's runtime folder (`$XDG_RUNTIME_DIR/pairstore-turns`, else
`<temp>/pairstore-turns-<uid>`), named by a digest of the store's full path, so the store's own folder
gets no new file:

- `KEY.lock`: the store's lock. A writer holds it exclusively, a reader shared. Its text names the
  holders, one JSON line each (what, process id, since when), which a waiter shows; a holder takes its
  line out when it lets go, and a line whose process is gone is not shown.
- `KEY.waiting`: held by the one process waiting for the store. A holder that lets go cannot take
  the store again before that waiter has it (taking it goes through `KEY.waiting`), and a holder
  that can pause sees a waiter (`StoreTurn.someone_waits`) and lets go at once (the web app does after
  the request in hand).

Another user's processes keep their own turn files: between users only DuckDB's lock holds.

A process that opens the store without these files (DuckDB's own clients, a script calling open_store)
still meets DuckDB's lock: that is retried as before (StoreBusy, every 50 ms), up to the same wait.
Where the lock files cannot be made (no runtime folder of this user's) the store is opened without
them. A thread that already holds its turn at a store may open it again inside (the count is kept per
thread).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pairstore.errors import StoreBusy
from pairstore.store.store import Store, open_store

try:
    import fcntl
except ImportError:  # pragma: no cover (no flock on this platform: DuckDB's own lock only)
    fcntl = None  # type: ignore[assignment]

POLL_S = 0.02  # how often a waiter tries again
TELL_AFTER_S = 0.5  # a waiter names the holder once it has waited this long, and again when it changes

_held: dict[tuple[str, int], int] = {}  # (lock path, thread id) -> nesting depth of this thread's turns
_held_lock = threading.Lock()
_DUCKDB_HOLDER = re.compile(r"\(held by (process \d+)\)")


def turns_folder() -> Path | None:
    """This user's folder of turn files, made private on first use; None where there is none that is
    this user's alone (another user made it, or it cannot be made)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = (
        Path(runtime) / "pairstore-turns"
        if runtime
        else Path(tempfile.gettempdir()) / f"pairstore-turns-{os.getuid()}"
    )
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    return folder


def lock_paths(store_path: str | os.PathLike) -> tuple[Path, Path] | None:
    """(the store's lock file, its waiting file), named by a digest of the store's full path."""
    folder = turns_folder()
    if folder is None:
        return None
    key = hashlib.sha256(str(Path(store_path).resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return folder / f"{key}.lock", folder / f"{key}.waiting"


def describe(holder: dict) -> str:
    """'pairstore serve (process 123, writing) since 12:00:01' from a lock file's text."""
    what = holder.get("what") or "a pairstore process"
    mode = "writing" if holder.get("mode") == "write" else "reading"
    since = str(holder.get("since") or "")[11:19]
    return f"{what} (process {holder.get('pid', '?')}, {mode})" + (f" since {since}" if since else "")


class StoreTurn:
    """One process's (one thread's) turn at a store: acquire, hold, release."""

    def __init__(self, store_path: str | os.PathLike):
        self.store_path = str(store_path)
        paths = lock_paths(store_path)
        self.usable = paths is not None and fcntl is not None
        self.lock_path, self.waiting_path = paths or (Path(os.devnull), Path(os.devnull))
        self._fd: int | None = None
        self._nested_key: tuple[str, int] | None = None  # set when this turn is inside one of its thread's
        self._held_key: tuple[str, int] | None = None
        self._shared = False
        self._entry: dict = {}

    def _key(self) -> tuple[str, int]:
        return (str(self.lock_path), threading.get_ident())

    def _open(self, path: Path) -> int | None:
        if not self.usable:
            return None
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError:
            return None  # a read-only folder, or none yet: DuckDB's own lock only

    @staticmethod
    def _try(fd: int, mode: int) -> bool:
        assert fcntl is not None
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def holders(self) -> list[dict]:
        """The holders the lock file names whose process is still alive."""
        if not self.usable:
            return []
        try:
            lines = self.lock_path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        found = []
        for line in lines:
            try:
                entry = json.loads(line)
                pid = int(entry["pid"])
            except (ValueError, KeyError, TypeError):
                continue
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass  # alive, another user's
            found.append(entry)
        return found

    def holder(self) -> str:
        """Who holds the store, as its lock file names it ('' when unknown)."""
        return "; ".join(describe(h) for h in self.holders())

    def acquire(
        self,
        *,
        shared: bool = False,
        wait_s: float = 10.0,
        what: str = "",
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        """Wait for the store (in turn) up to wait_s seconds; StoreBusy naming the holder after that."""
        with _held_lock:
            key = self._key()
            if _held.get(key, 0):
                _held[key] += 1
                self._nested_key = key
                return
        fd = self._open(self.lock_path)
        if fd is None:
            return
        assert fcntl is not None  # _open gives a descriptor only where flock exists
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        if self._try(fd, mode):  # free and no one waiting for it: no need to queue
            if self._no_waiter_or_me():
                self._take(fd, shared, what)
                return
            fcntl.flock(fd, fcntl.LOCK_UN)
        started = time.monotonic()
        deadline = started + wait_s
        told = ""
        waiting = self._open(self.waiting_path)
        try:
            # First in the queue: the waiting file, then the store's lock. While this process holds the
            # waiting file no holder can take the store again, so it comes at the holder's next release.
            for target, target_mode in ((waiting, fcntl.LOCK_EX), (fd, mode)):
                while target is not None and not self._try(target, target_mode):
                    now = time.monotonic()
                    holder = self.holder()
                    if on_wait is not None and now - started >= TELL_AFTER_S and holder != told:
                        on_wait(holder or "another pairstore process")
                        told = holder
                    if now >= deadline:
                        os.close(fd)
                        raise StoreBusy(
                            f"store {self.store_path} is in use by "
                            f"{holder or 'another pairstore process'}; waited {wait_s:g} s "
                            "(PAIRSTORE_BUSY_WAIT sets how long); try again when it finishes"
                        )
                    time.sleep(POLL_S)
            self._take(fd, shared, what)
        finally:
            if waiting is not None:
                os.close(waiting)  # closing lets the waiting file go

    def _no_waiter_or_me(self) -> bool:
        """True when no other process waits in line (this one got the lock without queueing)."""
        waiting = self._open(self.waiting_path)
        if waiting is None:
            return True
        assert fcntl is not None  # _open gives a descriptor only where flock exists
        try:
            if self._try(waiting, fcntl.LOCK_EX):
                return True
            return False
        finally:
            os.close(waiting)

    def _take(self, fd: int, shared: bool, what: str) -> None:
        self._fd = fd
        self._held_key = self._key()
        with _held_lock:
            _held[self._held_key] = 1
        self._shared = shared
        self._entry = {
            "what": what or "a pairstore process",
            "pid": os.getpid(),
            "mode": "read" if shared else "write",
            "since": datetime.now().isoformat(timespec="seconds"),
            "turn": secrets.token_hex(6),
        }
        line = (json.dumps(self._entry) + "\n").encode()
        try:
            if shared:  # beside the other readers' lines (an append of a line is one write)
                with open(self.lock_path, "ab") as f:
                    f.write(line)
            else:  # the one holder: its line alone
                os.ftruncate(fd, 0)
                os.pwrite(fd, line, 0)
        except OSError:
            pass  # the names are for people waiting; the lock holds without them

    def _forget_entry(self) -> None:
        """Take this holder's line out of the lock file (before letting go)."""
        try:
            if not self._shared:
                assert self._fd is not None
                os.ftruncate(self._fd, 0)
                return
            with open(self.lock_path, "r+b") as f:
                lines = f.read().splitlines(keepends=True)
                mine = f'"turn": "{self._entry["turn"]}"'.encode()
                kept = b"".join(ln for ln in lines if mine not in ln)
                f.seek(0)
                f.write(kept)
                f.truncate()
        except (OSError, AssertionError):
            pass

    def someone_waits(self) -> bool:
        """True when another process waits in line for the store (a holder that can pause should let go)."""
        if fcntl is None or self._fd is None:
            return False
        return not self._no_waiter_or_me()

    def release(self) -> None:
        # The key saved when the turn was taken: a server may let go from another thread than the taker.
        if self._nested_key is not None:
            with _held_lock:
                _held[self._nested_key] -= 1
            self._nested_key = None
            return
        if self._fd is None:
            return
        with _held_lock:
            if self._held_key is not None:
                _held.pop(self._held_key, None)
        self._forget_entry()
        os.close(self._fd)  # closing the descriptor lets the flock go
        self._fd = None


class StoreInTurn(Store):
    """A store opened in turn: closing it lets the turn go too."""

    turn: StoreTurn

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.turn.release()


def open_in_turn(
    path: str | os.PathLike,
    *,
    read_only: bool = False,
    wait_s: float = 10.0,
    what: str = "",
    on_wait: Callable[[str], None] | None = None,
) -> Store:
    """open_store after waiting for the store in turn (up to wait_s), then for DuckDB's own lock (a process
    outside the turns) in the time left. Closing the store lets the turn go."""
    turn = StoreTurn(path)
    started = time.monotonic()
    turn.acquire(shared=read_only, wait_s=wait_s, what=what, on_wait=on_wait)
    try:
        deadline = started + wait_s
        told = False
        while True:
            try:
                store = open_store(path, read_only=read_only)
                break
            except StoreBusy as e:
                now = time.monotonic()
                if now >= deadline:
                    raise
                if on_wait is not None and not told and now - started >= TELL_AFTER_S:
                    held = _DUCKDB_HOLDER.search(str(e))
                    on_wait(f"{held.group(1) if held else 'another process'}, outside pairstore's turns")
                    told = True
                time.sleep(0.05)
    except BaseException:
        turn.release()
        raise
    in_turn = StoreInTurn(store.con, store.path, store.read_only)
    in_turn.turn = turn
    return in_turn
