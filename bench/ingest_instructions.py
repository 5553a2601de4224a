"""Ingest after / before in instructions executed: a count that the machine's load does not move.

    .venv/bin/python bench/ingest_instructions.py                      # battles, pairs, problems; 10,000 rows
    .venv/bin/python bench/ingest_instructions.py --tables battles --rows 20000

bench/bench_ingest.py times the ingest after / before in processes that take turns; on a shared
2-core machine its rounds spread by a quarter, so a difference of a few percent cannot be read from
them. This counts instead what each side executes, under valgrind's cachegrind (`--cache-sim=no`:
instructions only, every thread of the process, DuckDB's and Arrow's included): per table and side,
one process doing one ingest and one doing two. One ingest is the cost of a process started from
nothing (imports, opening the store, the work); the second ingest alone (two minus one) is the work
once everything is loaded and warm. The inputs and stores are bench/bench_ingest.py's, built by each
side's own code, and each side's ingest is its `ours()`: the same public functions.

Both sides run with one OpenBLAS thread (OPENBLAS_NUM_THREADS=1). numpy's import makes one small dot
product (a check of its own), which starts OpenBLAS's threads, and they then spin waiting for work:
31 to 50 M instructions a process, a different amount each run (one run's warm battles ingest counted
28 M more than the other side's from that alone). That dot product is the only BLAS call on either
side, so the setting changes no work, only that noise.

Counts still move between runs of the same code, by up to about 2.5% (DuckDB's threads wait
differently: this tree's warm battles ingest counted 2,122 M and 2,150 M in two runs, the warm pairs
ingest of commit bf1d49a 2,174 M and 2,229 M). valgrind
must be installed (`apt-get install valgrind`); it runs the processes about fifty times slower.
Writes bench/results/ingest-instructions.md (or --out).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_ingest  # noqa: E402
from contenders import before_worktree, byte_compile, remove_worktree  # noqa: E402
from valgrind_count import instructions, work_folder, write_section  # noqa: E402

PY = sys.executable
TABLES = "battles,pairs,problems"


def child(table: str, base: str, path: str, times: int) -> None:
    """`times` ingests in one process, each on a fresh copy of the base store."""
    for _ in range(times):
        bench_ingest.child(table, "ours", base, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=TABLES)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--before", default=bench_ingest.BEFORE_REF)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ingest-instructions.md"))
    ap.add_argument("--child", nargs=4, metavar=("TABLE", "BASE", "PATH", "TIMES"), help=argparse.SUPPRESS)
    ap.add_argument("--code", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        bench_ingest.use_code(args.code)
        table, base, path, times = args.child
        child(table, base, path, int(times))
        return
    work = work_folder("ingest-instructions")
    # both sides byte-compiled (before_worktree compiles its copy): a process that compiles the
    # sources it imports would count the compiler's work as the ingest's
    byte_compile(ROOT)
    old = before_worktree(work / "before-code", args.before)
    rows = []
    try:
        for table in [t for t in args.tables.split(",") if t]:
            counts = {}
            for side, code in (("after", None), ("before", old)):
                folder = work / side / table
                folder.mkdir(parents=True)
                extra = ["--code", str(code)] if code else []
                build = [PY, str(ROOT / "bench" / "bench_ingest.py"), "--build", table, str(folder)]
                made = subprocess.run(
                    [*build, str(args.rows), *extra], check=True, capture_output=True, text=True
                )
                base, path = json.loads(made.stdout.strip().splitlines()[-1])
                run = [PY, __file__, "--child", table, base, path]
                counts[side] = [instructions([*run, str(n), *extra]) for n in (1, 2)]
                print(table, side, counts[side], flush=True)
            rows.append((table, counts))
    finally:
        remove_worktree(old)
        shutil.rmtree(work, ignore_errors=True)
    lines = [
        "| table | side | 1 ingest (a process from nothing) | 2 ingests | the second alone (warm) "
        "| after / before: 1 ingest | warm |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for table, c in rows:
        warm = {side: c[side][1] - c[side][0] for side in c}
        for side in ("after", "before"):
            ratio = (
                f"**{c['after'][0] / c['before'][0]:.3f}x** | **{warm['after'] / warm['before']:.3f}x**"
                if side == "after"
                else " | "
            )
            lines.append(
                f"| {table} | {side} | {c[side][0] / 1e6:,.0f} M | {c[side][1] / 1e6:,.0f} M "
                f"| {warm[side] / 1e6:,.0f} M | {ratio} |"
            )
    headline = "Headline: after / before in instructions, a process from nothing and warm: " + ", ".join(
        f"{table} {c['after'][0] / c['before'][0]:.3f}x and "
        f"{(c['after'][1] - c['after'][0]) / (c['before'][1] - c['before'][0]):.3f}x"
        for table, c in rows
    )
    cmd = (
        ".venv/bin/python bench/ingest_instructions.py"
        + ("" if args.tables == TABLES else f" --tables {args.tables}")
        + ("" if args.rows == 10_000 else f" --rows {args.rows}")
    )
    write_section(
        args.out,
        "Ingest after / before in instructions (valgrind)",
        cmd,
        f"Rows: {args.rows:,} per table (bench/bench_ingest.py's inputs); before: commit `{args.before}`. "
        "Instructions executed by every thread of the process, counted by cachegrind: one run each; "
        "one OpenBLAS thread (its idle threads' spinning is noise, not work); counts move by up to "
        "about 2.5% between runs of the same code.",
        headline,
        lines,
    )


if __name__ == "__main__":
    main()
