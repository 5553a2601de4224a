"""How long a short command takes, whole: `pairstore --help`, `holdout list`, `sql` on a small store.

    .venv/bin/python bench/bench_startup.py                 # against commit 613afb7, 7 rounds
    .venv/bin/python bench/bench_startup.py --before HEAD~3 --rounds 11

A short command is mostly Python's start and the imports of the command tree. Each command runs as
`python -m pairstore.cli` in a process of its own, this checkout against a git worktree of the code
before (both byte-compiled), interleaved (bench/contenders.py), on one store made by this checkout's
`open_store` (the same schema on both sides). Reported: wall and CPU seconds (user + system) per
command, their medians over the rounds, and after / before per round. Also which of the heavy modules
each side's `--help` imports (pandas: pyarrow's first pa.array imports it; numba and scipy: the
compiled modules). Writes bench/results/startup.md (or --out).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from contenders import (  # noqa: E402
    Contender,
    before_worktree,
    markdown_table,
    ratio_text,
    ratios,
    remove_worktree,
    run_interleaved,
    summarize,
)
from valgrind_count import write_section  # noqa: E402

BEFORE = "613afb7"  # the last commit before the CLI stopped importing pandas, numba and scipy at start
HEAVY = ("pandas", "numba", "scipy", "torch", "transformers", "datasets")
COMMANDS = {
    "--help": ["--help"],
    "holdout list": ["holdout", "list"],
    "sql": ["sql", "SELECT count(*) FROM pairs"],
}


def heavy_imports(code: Path) -> list[str]:
    """The HEAVY modules loaded after `pairstore --help` with the code at `code`."""
    probe = (
        f"import sys; sys.path.insert(0, {str(code)!r})\n"
        "from pairstore.cli import cli\n"
        "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return [m for m in out.rsplit("HEAVY:", 1)[1].strip().split(",") if m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "startup.md"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    old = before_worktree(work / "before-code", args.before)
    try:
        sys.path.insert(0, str(ROOT))
        from pairstore.store.store import open_store

        db = work / "store.duckdb"
        open_store(db).close()
        contenders = []
        for name, argv in COMMANDS.items():
            for side, code in (("after", ROOT), ("before", old)):
                env = {"PYTHONPATH": str(code), "HF_HUB_OFFLINE": "1"}
                command = [sys.executable, "-m", "pairstore.cli", "--db", str(db), "-q", *argv]
                contenders.append(Contender(f"{name} {side}", command, env=env, cwd=str(work)))
        runs = run_interleaved(contenders, rounds=args.rounds)
        heavy = {"after": heavy_imports(ROOT), "before": heavy_imports(old)}
    finally:
        remove_worktree(old)
        shutil.rmtree(work, ignore_errors=True)
    stats = summarize(runs)
    per = {name: ratios(runs, f"{name} after", f"{name} before") for name in COMMANDS}
    lines = [markdown_table(stats), "", "| command | after / before, CPU | wall |", "| --- | --- | --- |"]
    for name in COMMANDS:
        wall = ratio_text(ratios(runs, f"{name} after", f"{name} before", "wall_s"))
        lines.append(f"| `pairstore {name}` | **{ratio_text(per[name])}** | {wall} |")
    lines += ["", f"Heavy modules loaded by `pairstore --help`: {json.dumps(heavy)}."]
    headline = "Headline: after / before, CPU per round: " + ", ".join(
        f"`{name}` {ratio_text(per[name])}" for name in COMMANDS
    )
    same = args.before == BEFORE and args.rounds == 7
    cmd = ".venv/bin/python bench/bench_startup.py" + (
        "" if same else f" --before {args.before} --rounds {args.rounds}"
    )
    write_section(
        args.out,
        "Short commands, whole: start, imports, the work",
        cmd,
        f"Before: commit `{args.before}` (a git worktree); {args.rounds} interleaved rounds, each command a "
        "process of its own (`python -m pairstore.cli`); CPU = user + system. The machine is shared, so "
        "read CPU times.",
        headline,
        lines,
    )


if __name__ == "__main__":
    main()
