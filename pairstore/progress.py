"""Progress of long work, reported by library functions and shown by the CLI.

    def ingest_x(store, path, *, progress=None):
        progress = as_progress(progress)
        with progress.stage("read", total=n_lines) as stage:
            for rec in records:
                ...
                stage.advance()

A library function takes an optional Progress and never prints: the CLI picks what it shows
(`for_terminal`): a tqdm bar with the total and the rate on stderr when stderr is a terminal, one line
per stage with its count, total and time ("export r9: holdout gate: 34 of 34 pairs in 2.1 s") when it is
not (a log, CI), with a line every PAIRSTORE_PROGRESS_EVERY seconds (30) while a stage runs, and nothing
with --quiet. Nothing goes to stdout, so `--json` output stays one JSON object.

A function deep in a call (a miner's verification, an audit's scan) that is not handed a Progress reports
to `current()`: the Progress the caller installed with `reporting(progress)` (the CLI installs its own
for every command), else none. `as_progress(None)` is that same current Progress, so a library call from
a notebook stays silent unless it asks for a bar.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO, TypeVar

T = TypeVar("T")


class Stage:
    """One stage: advance(n) as work is done; `total` when known."""

    def __init__(self, name: str, total: int | None, unit: str):
        self.name, self.total, self.unit = name, total, unit
        self.done = 0
        self.started = time.perf_counter()

    def advance(self, n: int = 1) -> None:
        self.done += n

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


class Progress:
    """Reports nothing: the default of every library function."""

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "rows") -> Iterator[Stage]:
        yield Stage(name, total, unit)

    def track(
        self, iterable: Iterable[T], name: str, total: int | None = None, unit: str = "rows"
    ) -> Iterator[T]:
        """`iterable`, advancing a stage by one per item."""
        if total is None and isinstance(iterable, Sized):
            total = len(iterable)
        with self.stage(name, total, unit) as stage:
            for item in iterable:
                yield item
                stage.advance()


NO_PROGRESS = Progress()


def rate_text(count: float, seconds: float, unit: str) -> str:
    """'1,200 records/s', '12.5 prompts/s', '0.42 prompts/s': slow work never rounds to 0."""
    if seconds <= 0 or count <= 0:
        return f"0 {unit}/s"
    r = count / seconds
    if r >= 100:
        return f"{r:,.0f} {unit}/s"
    if r >= 10:
        return f"{r:.1f} {unit}/s"
    return f"{r:.2g} {unit}/s"


def duration_text(seconds: float) -> str:
    """'45 s', '12 min 03 s', '2 h 05 min'."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def heartbeat_seconds() -> float:
    """How often a running stage writes a line to a log: PAIRSTORE_PROGRESS_EVERY seconds (default 30)."""
    import os

    try:
        return max(0.05, float(os.environ.get("PAIRSTORE_PROGRESS_EVERY", "30")))
    except ValueError:
        return 30.0


class LineProgress(Progress):
    """Lines a log file can hold: while a stage runs, one every `every` seconds with its count, total,
    rate and the time left ("train sample: 120 of 480 prompts, 0.42 prompts/s, 14 min 17 s left"), and
    one when it ends, with its count and time. A watcher thread writes the running lines, so a stage
    whose work item takes minutes (a model generating, a long DuckDB statement) still shows it is alive."""

    def __init__(self, stream: TextIO | None = None, every: float | None = None) -> None:
        self.stream = stream
        self.every = heartbeat_seconds() if every is None else every

    def _print(self, text: str) -> None:
        print(text, file=self.stream or sys.stderr, flush=True)

    def running_line(self, stage: Stage) -> str:
        seconds = stage.elapsed()
        of = f" of {stage.total:,}" if stage.total is not None else ""
        parts = [f"{stage.name}: {stage.done:,}{of} {stage.unit}", rate_text(stage.done, seconds, stage.unit)]
        if stage.total is not None and stage.done > 0 and stage.total > stage.done:
            parts.append(f"{duration_text((stage.total - stage.done) * seconds / stage.done)} left")
        else:
            parts.append(f"{duration_text(seconds)} so far")
        return ", ".join(parts)

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "rows") -> Iterator[Stage]:
        import threading

        stage = Stage(name, total, unit)
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.every):
                self._print(self.running_line(stage))

        watcher = threading.Thread(target=beat, name=f"progress {name}", daemon=True)
        watcher.start()
        try:
            yield stage
        finally:
            stop.set()
            watcher.join()
        seconds = stage.elapsed()
        count = stage.done or stage.total or 0
        of = f" of {stage.total:,}" if stage.total is not None and stage.total != count else ""
        rate = f", {rate_text(count, seconds, unit)}" if count and seconds > 0 else ""
        self._print(f"{name}: {count:,}{of} {unit} in {seconds:.1f} s{rate}")


class BarProgress(Progress):
    """A tqdm bar per stage on stderr, with the total when known and the rate."""

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "rows") -> Iterator[Stage]:
        from tqdm import tqdm

        bar = tqdm(total=total, desc=name, unit=f" {unit}", unit_scale=True, leave=False, file=sys.stderr)
        stage = Stage(name, total, unit)
        real_advance = stage.advance

        def advance(n: int = 1) -> None:
            real_advance(n)
            bar.update(n)

        stage.advance = advance  # type: ignore[method-assign]  # the bar follows every advance
        try:
            yield stage
        finally:
            bar.close()


def for_terminal(*, quiet: bool = False, stream: TextIO | None = None) -> Progress:
    """What the CLI shows: nothing when quiet, a bar on a terminal, stage lines otherwise."""
    stream = stream or sys.stderr
    if quiet:
        return NO_PROGRESS
    return BarProgress() if stream is not None and stream.isatty() else LineProgress(stream)


_CURRENT: ContextVar[Progress] = ContextVar("pairstore_progress", default=NO_PROGRESS)


def current() -> Progress:
    """The Progress installed by the nearest `reporting` around this call; NO_PROGRESS when none is."""
    return _CURRENT.get()


@contextmanager
def reporting(progress: Progress) -> Iterator[Progress]:
    """Install `progress` as current() for the calls inside the block."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)


def as_progress(progress: Progress | bool | None) -> Progress:
    """A Progress from what callers pass: None (the current one), False (nothing), True (a bar), or a
    Progress."""
    if isinstance(progress, Progress):
        return progress
    if progress is None:
        return current()
    return BarProgress() if progress else NO_PROGRESS
