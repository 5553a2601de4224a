"""Run contenders side by side, fairly: interleaved rounds, each run in its own process, wall and CPU.

    from contenders import Contender, markdown_table, ratio_text, ratios, run_interleaved, summarize
    runs = run_interleaved(
        [Contender("pairstore export", [py, "-c", "..."], before=fresh_store),
         Contender("COPY", [py, "-c", "..."])],
        rounds=3,
    )
    print(markdown_table(summarize(runs)))
    print(ratio_text(ratios(runs, "pairstore export", "COPY")))    # CPU, per round: '1.52x [1.40-1.61]'

Why this shape (bench/RESULTS.md's figures rely on it):
- **Interleaved**: round 1 runs A then B, round 2 B then A, and so on, so a load that rises or falls
  during the run (another job on a shared machine) lands on both contenders alike.
- **CPU time beside wall time**: user + system seconds of the contender's process and everything it
  waited for (os.wait4's rusage), which a busy machine inflates much less than the wall clock.
- **Peak memory**: the child's highest resident set (ru_maxrss), never the parent's.
- **Same starting point**: a contender's `before` (a fresh copy of a store, an empty output folder) runs
  in this process before each of its runs, untimed.
- **Bytecode as installed**: pip writes every module's bytecode when it installs a package, but a shell
  with PYTHONDONTWRITEBYTECODE set (this machine's) never does, so each process would compile the
  project's sources again (0.1 s for an ingest's 30 modules), and the side with more code pays more.
  run_interleaved and before_worktree byte-compile the code they run first.

Standard library only: bench scripts import it before the project's venv is known to be importable.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Contender:
    name: str
    argv: Sequence[str]  # the command; it does the contender's work once and exits 0
    env: dict[str, str] | None = None  # added to this process's environment
    cwd: str | None = None
    before: Callable[[], None] | None = None  # run here before each run, untimed (a fresh store copy, ...)


@dataclass
class Run:
    name: str
    round: int
    order: int  # position inside its round (0 first)
    wall_s: float
    cpu_s: float  # user + system of the child and its children
    user_s: float
    sys_s: float
    peak_rss_mb: float
    stdout: str = ""


@dataclass
class Stats:
    name: str
    runs: list[Run] = field(default_factory=list)

    @property
    def median_wall(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def median_cpu(self) -> float:
        return statistics.median(r.cpu_s for r in self.runs)

    @property
    def max_rss_mb(self) -> float:
        return max(r.peak_rss_mb for r in self.runs)

    @property
    def wall_range(self) -> tuple[float, float]:
        return min(r.wall_s for r in self.runs), max(r.wall_s for r in self.runs)

    @property
    def cpu_range(self) -> tuple[float, float]:
        return min(r.cpu_s for r in self.runs), max(r.cpu_s for r in self.runs)


def run_once(c: Contender, round_no: int = 0, order: int = 0, timeout: float | None = None) -> Run:
    """Run the contender once in a child process: wall time from here, CPU and peak memory from the
    kernel's account of the child (os.wait4), so nothing the parent does is counted."""
    env = dict(os.environ, **(c.env or {}))
    if c.before is not None:
        c.before()
    started = time.perf_counter()
    proc = subprocess.Popen(list(c.argv), env=env, cwd=c.cwd, stdout=subprocess.PIPE, text=True)
    deadline = None if timeout is None else started + timeout
    out_chunks = []
    # Read stdout while waiting, so a chatty child never blocks on a full pipe.
    assert proc.stdout is not None
    for line in proc.stdout:
        out_chunks.append(line)
        if deadline is not None and time.perf_counter() > deadline:
            proc.kill()
            break
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{c.name} exited {proc.returncode}: {' '.join(c.argv)}")
    return Run(
        name=c.name,
        round=round_no,
        order=order,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        user_s=usage.ru_utime,
        sys_s=usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,  # KiB on Linux
        stdout="".join(out_chunks),
    )


def interleaved_order(n: int, rounds: int) -> list[list[int]]:
    """The contenders' order in each round: forward, then backward, alternating (A B, B A, A B, ...)."""
    forward = list(range(n))
    return [forward if r % 2 == 0 else forward[::-1] for r in range(rounds)]


PACKAGES = ("pairstore", "generators", "miners", "train", "audits", "bench")


def byte_compile(root: Path) -> None:
    """Write the bytecode of the project's packages under `root`, as pip does at install (module
    docstring: without it each process compiles the sources again)."""
    for name in PACKAGES:
        if (root / name).is_dir():
            compileall.compile_dir(root / name, quiet=1, workers=1)


def run_interleaved(
    contenders: Sequence[Contender], rounds: int = 3, timeout: float | None = None, log=print
) -> list[Run]:
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    byte_compile(Path(__file__).resolve().parents[1])
    runs = []
    for r, order in enumerate(interleaved_order(len(contenders), rounds)):
        for pos, i in enumerate(order):
            run = run_once(contenders[i], r, pos, timeout)
            runs.append(run)
            if log is not None:
                log(
                    f"round {r + 1}/{rounds} {run.name}: wall {run.wall_s:.2f} s, cpu {run.cpu_s:.2f} s, "
                    f"peak {run.peak_rss_mb:,.0f} MB"
                )
    return runs


def summarize(runs: Sequence[Run]) -> dict[str, Stats]:
    out: dict[str, Stats] = {}
    for run in runs:
        out.setdefault(run.name, Stats(run.name)).runs.append(run)
    return out


def ratios(runs: Sequence[Run], a: str, b: str, what: str = "cpu_s") -> list[float]:
    """a/b per round (the two runs of one round compared), for a median [range] beside the medians."""
    by_round: dict[int, dict[str, Run]] = {}
    for run in runs:
        by_round.setdefault(run.round, {})[run.name] = run
    return [
        getattr(rs[a], what) / getattr(rs[b], what)
        for _, rs in sorted(by_round.items())
        if a in rs and b in rs
    ]


def ratio_text(values: Sequence[float]) -> str:
    """'2.06x [1.98-2.44]': the median and the range of per-round ratios."""
    if not values:
        return "-"
    return f"{statistics.median(values):.2f}x [{min(values):.2f}-{max(values):.2f}]"


def markdown_table(stats: dict[str, Stats]) -> str:
    lines = [
        "| contender | runs | wall s, median [range] | CPU s, median [range] | peak RSS MB (highest) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in stats.values():
        (w0, w1), (c0, c1) = s.wall_range, s.cpu_range
        lines.append(
            f"| {s.name} | {len(s.runs)} | {s.median_wall:.2f} [{w0:.2f}-{w1:.2f}] | "
            f"{s.median_cpu:.2f} [{c0:.2f}-{c1:.2f}] | {s.max_rss_mb:,.0f} |"
        )
    return "\n".join(lines)


def before_worktree(path: Path, ref: str) -> Path:
    """A detached git worktree of `ref` at `path` (the code before, for a bench's before/after rows);
    kept as it is where a kept run left one there."""
    if not (path / "pairstore").is_dir():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path.resolve()), ref],
            check=True,
            capture_output=True,
            cwd=Path(__file__).resolve().parent,
        )
    byte_compile(path)
    return path


def remove_worktree(path: Path) -> None:
    """Remove a worktree made by before_worktree (nothing to do where it is gone)."""
    subprocess.run(
        ["git", "worktree", "remove", "--force", str(path.resolve())],
        check=False,
        cwd=Path(__file__).resolve().parent,
    )
