"""Ctrl-C as one line and exit 130, also in the middle of a DuckDB statement.

Python runs its SIGINT handler in the main thread between bytecodes, so a long DuckDB statement (the
gate's scan, an export's COPY) would run to its end before Ctrl-C is seen, and what surfaced then was
whatever the library made of it. Here the signal's number is also written to a pipe the moment it
arrives (signal.set_wakeup_fd, done in C), and a watcher thread reading that pipe asks every open store's
running statement to stop (DuckDB's interrupt), and asks again until the command has ended. The command
then ends in KeyboardInterrupt or in DuckDB's InterruptException; PairstoreGroup turns either, and any
error raised after the signal, into one line.
"""

from __future__ import annotations

import os
import signal
import threading
import time

INTERRUPTED_STATUS = 130  # 128 + SIGINT, what shells report for a command stopped by Ctrl-C
INTERRUPTED_LINE = "interrupted; nothing was committed"
REPEAT_SECONDS = 0.05  # how often, after Ctrl-C, the running statements are asked to stop again

# Set once a SIGINT has arrived: whatever the command raises afterwards is the interrupt's doing.
INTERRUPTED = threading.Event()


def _watch(read_fd: int) -> None:
    from pairstore.store.store import interrupt_open_stores

    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data:
            INTERRUPTED.set()
            # Asked once, the interrupt can miss: a statement that starts just after it finds nothing to
            # stop, and Python's own KeyboardInterrupt waits until that statement returns (hours, for
            # a long scan). So every running statement is asked again until the command has ended.
            while True:
                interrupt_open_stores()
                time.sleep(REPEAT_SECONDS)


def watch_interrupts() -> bool:
    """Start the watcher (once, from the main thread). False where it cannot run: not the main thread,
    or a wakeup fd already set by someone else (an embedding program keeps its own)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    try:
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except ValueError:
        os.close(read_fd)
        os.close(write_fd)
        return False
    if previous != -1:  # someone else's: put it back
        signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)
        return False
    threading.Thread(target=_watch, args=(read_fd,), name="pairstore-interrupts", daemon=True).start()
    return True
