"""Streaming I/O for the soup: exact positional reads and writes, early write-back, hashes of files read
in pieces, and the input shards' descriptors.

    files = OpenFiles(); preadv_exact(files.fd(path), view, pos, path); pwrite_all(out_fd, view, pos)
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import os
from pathlib import Path

from pairstore.errors import PairstoreError
from pairstore.keys import sha256_file

# Output bytes between write-back kicks (see WriteBack).
WRITEBACK_BYTES = 32 << 20


def preadv_exact(fd: int, view: memoryview, pos: int, path: Path) -> None:
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], pos + got)
        if n == 0:
            raise PairstoreError(f"{path}: file ended early at byte {pos + got} (changed while reading?)")
        got += n


def pwrite_all(fd: int, view: memoryview, pos: int) -> None:
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], pos + done)


class WriteBack:
    """Start write-back of each written range early and wait for the range before it, so the final fsync
    has little left to do and dirty pages never pile up (Linux sync_file_range; elsewhere a no-op)."""

    _WAIT_BEFORE, _WRITE, _WAIT_AFTER = 1, 2, 4

    def __init__(self):
        self._fn = None
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fn = libc.sync_file_range
            fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
            fn.restype = ctypes.c_int
            self._fn = fn
        self._fd = -1
        self._start = self._end = self._prev_start = self._prev_end = 0

    def begin(self, fd: int, pos: int) -> None:
        self._fd, self._start, self._end, self._prev_start, self._prev_end = fd, pos, pos, pos, pos

    def wrote(self, end: int) -> None:
        self._end = end
        if self._fn is None or self._end - self._start < WRITEBACK_BYTES:
            return
        self._fn(self._fd, self._start, self._end - self._start, self._WRITE)
        if self._prev_end > self._prev_start:
            self._fn(
                self._fd,
                self._prev_start,
                self._prev_end - self._prev_start,
                self._WAIT_BEFORE | self._WRITE | self._WAIT_AFTER,
            )
            with contextlib.suppress(OSError):
                os.posix_fadvise(
                    self._fd, self._prev_start, self._prev_end - self._prev_start, os.POSIX_FADV_DONTNEED
                )
        self._prev_start, self._prev_end = self._start, self._end
        self._start = self._end


class StreamHash:
    """SHA-256 of a file computed from the pieces read in order; falls back to re-reading the file when the
    pieces did not arrive in file order (B laid out differently from A)."""

    def __init__(self, path: Path, raw_header: bytes, size: int):
        self.path, self.size = path, size
        self.h = hashlib.sha256(raw_header)
        self.pos = len(raw_header)
        self.in_order = True

    def update(self, pos: int, data: memoryview) -> None:
        if self.in_order and pos == self.pos:
            self.h.update(data)
            self.pos += len(data)
        else:
            self.in_order = False

    def hexdigest(self) -> str:
        if self.in_order and self.pos == self.size:
            return self.h.hexdigest()
        return sha256_file(self.path)


class OpenFiles:
    """Read-only descriptors of the input shards, opened once each."""

    def __init__(self):
        self.fds: dict[Path, int] = {}

    def fd(self, path: Path) -> int:
        if path not in self.fds:
            self.fds[path] = os.open(path, os.O_RDONLY)
            with contextlib.suppress(OSError):
                os.posix_fadvise(self.fds[path], 0, 0, os.POSIX_FADV_SEQUENTIAL)
        return self.fds[path]

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
