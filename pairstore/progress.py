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
not (a log, Slurm, CI), and nothing with --quiet. Nothing goes to stdout, so `--json` output stays one
JSON object. In a log, a stage that runs long also writes a line every PAIRSTORE_PROGRESS_EVERY seconds
(default 30) with its count, rate and ETA ("generate: 48 of 200 prompts, 1.9 prompts/s, ETA 1 min 19 s").

A function deep in a call (a miner's verification, an audit's scan) that is not handed a Progress reports
to `current()`: the Progress the caller installed with `reporting(progress)` (the CLI installs its own
for every command), else none. `as_progress(None)` is that same current Progress, so a library call from
a notebook stays silent unless it asks for a bar.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pairstore.errors import BadInput


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
# Seconds between the lines a long stage writes to a log (PAIRSTORE_PROGRESS_EVERY overrides).
LOG_EVERY_S = 30.0


def rate_text(per_second: float) -> str:
    """A rate a reader can use at any speed: 1,234 / 56 / 3.2 / 0.041 (never a rounded-away 0)."""
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}"


def duration_text(seconds: float) -> str:
    """12 s / 4 min 05 s / 3 h 07 min."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class _LoggedStage(Stage):
    """A stage that writes a line with its count, rate and ETA when `every` seconds have passed since
    the last. The clock is read every `stride` advances, the stride adapting so that a fast loop pays an
    integer comparison per advance and a slow one is seen on time."""

    def __init__(self, name: str, total: int | None, unit: str, every: float, stream):
        super().__init__(name, total, unit)
        self.every, self.stream = every, stream
        self._calls = 0
        self._next_check = 1
        self._stride = 1
        self._last_check = self.started
        self._due = self.started + every

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._calls += 1
        if self._calls < self._next_check:
            return
        now = time.perf_counter()
        since = now - self._last_check
        if since < self.every / 20:
            self._stride = min(self._stride * 2, 1 << 16)
        elif since > self.every / 5:
            self._stride = max(1, self._stride // 2)
        self._last_check, self._next_check = now, self._calls + self._stride
        if now >= self._due:
            self._due = now + self.every
            print(self.line(now - self.started), file=self.stream, flush=True)

    def line(self, seconds: float) -> str:
        """ "generate: 48 of 200 prompts, 1.9 prompts/s, ETA 1 min 19 s"."""
        of = f" of {self.total:,}" if self.total is not None else ""
        text = f"{self.name}: {self.done:,}{of} {self.unit}"
        if self.done and seconds > 0:
            rate = self.done / seconds
            text += f", {rate_text(rate)} {self.unit}/s"
            if self.total is not None and self.total >= self.done:
                text += f", ETA {duration_text((self.total - self.done) / rate)}"
        return text


class LineProgress(Progress):
    """One line per finished stage on `stream`: its name, count and time; and, while a stage runs, a line
    with its count, rate and ETA every `every` seconds."""

    def __init__(self, stream=None, every: float = LOG_EVERY_S):
        self.stream = stream
        self.every = every

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "rows"):
        stage = _LoggedStage(name, total, unit, self.every, self.stream or sys.stderr)
        yield stage
        seconds = stage.elapsed()
        count = stage.done or stage.total or 0
        of = f" of {stage.total:,}" if stage.total is not None and stage.total != count else ""
        rate = f", {rate_text(count / seconds)} {unit}/s" if count and seconds > 0 else ""
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


def log_every() -> float:
    """Seconds between a long stage's lines in a log: PAIRSTORE_PROGRESS_EVERY, else LOG_EVERY_S."""
    text = os.environ.get("PAIRSTORE_PROGRESS_EVERY")
    if text is None:
        return LOG_EVERY_S
    try:
        every = float(text)
    except ValueError:
        every = -1.0
    if not every >= 0:
        raise BadInput(
            f"PAIRSTORE_PROGRESS_EVERY must be a number of seconds, got {text!r}",
            field="PAIRSTORE_PROGRESS_EVERY",
        )
    return every


def for_terminal(*, quiet: bool = False, stream=None) -> Progress:
    """What the CLI shows: nothing when quiet, a bar on a terminal, stage lines otherwise."""
    stream = stream or sys.stderr
    if quiet:
        return NO_PROGRESS
    return BarProgress() if stream.isatty() else LineProgress(stream, every=log_every())


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
