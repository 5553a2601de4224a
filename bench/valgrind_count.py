"""What the benches that count instructions share: valgrind's count of a command, their work folder,
and their results section (bench/ingest_instructions.py, bench/verify_instructions.py).

    from valgrind_count import instructions, work_folder, write_section
    n = instructions([sys.executable, "script.py"])   # every thread's instructions, as cachegrind counts
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from machine import cpu_model, ram_text  # bench/machine.py, beside this module

ROOT = Path(__file__).resolve().parents[1]
_REFS_RE = re.compile(r"I\s+refs:\s+([\d,]+)")
# One OpenBLAS thread: numpy's import makes one small dot product, whose idle threads then spin for a
# different count each run (noise, not work); a fixed hash seed, and no model hub.
_ENV = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def instructions(command: list[str]) -> int:
    """Instructions the command executes, all its threads, as cachegrind counts them."""
    got = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *command],
        capture_output=True,
        text=True,
        env={**os.environ, **_ENV},
        check=True,
    )
    found = _REFS_RE.search(got.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output: {got.stderr[-300:]}")
    return int(found.group(1).replace(",", ""))


def work_folder(name: str) -> Path:
    """bench/_work/NAME, empty; refuses to start where valgrind is not installed."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    work = ROOT / "bench" / "_work" / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def write_section(out: str, title: str, command: str, note: str, headline: str, lines: list[str]) -> None:
    """The results section (title, command, machine, `note`, headline, table lines) to `out`, and printed."""
    text = "\n".join(
        [
            f"## {title}",
            "",
            f"Command: `{command}`  ",
            f"Machine: {os.cpu_count()} CPUs ({cpu_model()}), {ram_text()}, "
            f"Python {sys.version.split()[0]}.  ",
            note,
            "",
            headline,
            "",
            *lines,
            "",
        ]
    )
    Path(out).write_text(text, encoding="utf-8")
    print(text)
