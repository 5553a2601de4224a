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
not (a log, CI), and nothing with --quiet. Nothing goes to stdout, so `--json` output stays one JSON object.

A function deep in a call (a miner's verification, an audit's scan) that is not handed a Progress reports
to `current()`: the Progress the caller installed with `reporting(progress)` (the CLI installs its own
for every command), else none. `as_progress(None)` is that same current Progress, so a library call from
a notebook stays silent unless it asks for a bar.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


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
    def stage(self, name: str, total: int | None = None, unit: str = "rows"):
        yield Stage(name, total, unit)

    def track(self, iterable, name: str, total: int | None = None, unit: str = "rows"):
        """`iterable`, advancing a stage by one per item."""
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)
        with self.stage(name, total, unit) as stage:
            for item in iterable:
                yield item
                stage.advance()


NO_PROGRESS = Progress()


class LineProgress(Progress):
    """One line per finished stage on `stream`: its name, count and time."""

    def __init__(self, stream=None):
        self.stream = stream

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "rows"):
        stage = Stage(name, total, unit)
        yield stage
        seconds = stage.elapsed()
        count = stage.done or stage.total or 0
        of = f" of {stage.total:,}" if stage.total is not None and stage.total != count else ""
        rate = f", {count / seconds:,.0f} {unit}/s" if count and seconds > 0 else ""
        print(
            f"{name}: {count:,}{of} {unit} in {seconds:.1f} s{rate}",
            file=self.stream or sys.stderr,
            flush=True,
        )


class BarProgress(Progress):
    """A tqdm bar per stage on stderr, with the total when known and the rate."""

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "rows"):
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


def for_terminal(*, quiet: bool = False, stream=None) -> Progress:
    """What the CLI shows: nothing when quiet, a bar on a terminal, stage lines otherwise."""
    stream = stream or sys.stderr
    if quiet:
        return NO_PROGRESS
    return BarProgress() if stream.isatty() else LineProgress(stream)


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


def as_progress(progress) -> Progress:
    """A Progress from what callers pass: None (the current one), False (nothing), True (a bar), or a
    Progress."""
    if isinstance(progress, Progress):
        return progress
    if progress is None:
        return current()
    return BarProgress() if progress else NO_PROGRESS
