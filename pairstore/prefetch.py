"""Run a producer a few items ahead of its consumer, in a thread: the one prefetch pipe in the project.

    chunks = prefetch(fetch_chunks(), depth=1, name="export-fetch")
    try:
        for chunk in chunks:
            write(chunk)      # DuckDB fetches the next chunk meanwhile
    finally:
        chunks.close()        # the producer is stopped and joined here, whatever happened

The export overlaps DuckDB's fetch with parquet writing this way; the soup overlaps reading the shards
with hashing and arithmetic. The producer's exception is raised in the consumer at the point where its
item would have arrived. Closing the iterator (a finished loop, or `close()` after an exception or
a `break`) stops the producer before the next item it would hand over and joins its thread, so
nothing outlives the loop.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterable
from typing import TypeVar

T = TypeVar("T")

_DONE = object()
# How often a blocked producer looks whether the consumer has gone.
_POLL_S = 0.05


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def prefetch(items: Iterable[T], *, depth: int = 1, name: str = "prefetch") -> Generator[T, None, None]:
    """Yield the items of `items`, produced in a background thread at most `depth` (at least 1) items
    ahead."""
    handoff: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, which raises it
            put(_Failed(e))
        finally:
            close = getattr(items, "close", None)
            if close is not None and stop.is_set():
                close()

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = handoff.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting to hand over an item
            try:
                handoff.get(timeout=_POLL_S)
            except queue.Empty:
                pass
        thread.join()
