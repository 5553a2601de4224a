"""Facts about the machine a benchmark ran on, read once here for every bench script (stdlib only)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (platform's guess where there is none)."""
    try:
        return next(
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        )
    except (OSError, StopIteration):
        return platform.processor() or platform.machine() or "unknown"


def ram_gib() -> float | None:
    """Total RAM in GiB (None where /proc/meminfo cannot be read)."""
    try:
        kb = next(
            int(ln.split()[1])
            for ln in Path("/proc/meminfo").read_text().splitlines()
            if ln.startswith("MemTotal")
        )
    except (OSError, StopIteration, ValueError):
        return None
    return kb / 1024**2


def ram_text() -> str:
    gib = ram_gib()
    return "unknown" if gib is None else f"{gib:.1f} GiB"


def nproc() -> int:
    """CPUs this process may run on (what `nproc` prints)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def priority_text() -> str:
    """How this process was scheduled against the machine's other jobs: its nice value and, where the
    kernel groups processes by session (autogroup, where nice only orders the jobs of one session),
    its session group's nice. Empty where neither can be read."""
    parts = []
    try:
        parts.append(f"nice {os.nice(0)}")
    except OSError:
        pass
    try:
        group = Path("/proc/self/autogroup").read_text().split()
        if len(group) >= 3 and group[1] == "nice":
            parts.append(f"session group nice {group[2]}")
    except OSError:
        pass
    return ", ".join(parts)
