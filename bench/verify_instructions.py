"""The answer verifier against math-verify and against its own code before, in instructions executed:
a count that the machine's load does not move.

    .venv/bin/python bench/verify_instructions.py                     # the corpora below, before = BEFORE_REF
    .venv/bin/python bench/verify_instructions.py --corpora verify_heldout13/heldout.jsonl --before HEAD~1

bench/bench_verify.py times both verifiers in one process, interleaved; on a shared 2-core machine
the ratio moves with the load (math-verify's sympy work slows more under load than ours: its
published ratios were higher on a loaded machine than on a quiet one). This counts instead what
each executes, under valgrind's cachegrind (`--cache-sim=no`: instructions only): per corpus and
contender, one process that imports everything and reads every row once (a warm-up: imports,
compiled patterns, math-verify's grammar), and one that then reads every row twice more; a pass is
half their difference. The contenders are bench_verify's: ours is a fresh `Verifier()` per pass
after `verify_rows.fresh_caches()` (no per-input cache warm from the pass before, in either tree),
math-verify is `verify(parse("$" + gold + "$"), parse(output))` with its defaults; every pass of
either starts with sympy's and math-verify's per-input caches empty
(`verify_rows.fresh_shared_caches`). "Before" is ours at commit --before (a git worktree), on the
same rows.

Counts of math-verify move between runs of the same code by well under 1% (the garbage collector
runs at other moments). Counts of ours move by more on a corpus whose second opinions parse LaTeX:
four runs of one tree (`ee6a660`) on `verify_heldout15` gave 365, 389, 424 and 439 M a pass, three
of the commit before it 431-472 (math-verify 1,603-1,610 in those runs), with the hash seed fixed;
where the spread comes from is not pinned down. Read an after / before ratio there as +-10%.
valgrind must be installed (`apt-get install valgrind`); it runs about fifty times slower, two
processes at a time. Writes bench/results/verify-instructions.md (or --out).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from contenders import before_worktree, byte_compile, remove_worktree  # noqa: E402
from valgrind_count import instructions, work_folder, write_section  # noqa: E402

PY = sys.executable
# the corpora whose speed goal bench_verify reported not met, or met last
CORPORA = (
    "verify_heldout8/heldout.jsonl",
    "verify_heldout15/heldout.jsonl",
    "verify_heldout14/heldout.jsonl",
    "verify_heldout9/heldout.jsonl",
)
# the commit before a second opinion scanned math-verify's patterns in their faster form
BEFORE_REF = "0c8450b"


def child(side: str, code: str, corpus: str, passes: int) -> None:
    """A warm-up pass over the corpus, then `passes` more, by `side` (ours from `code`, or math-verify)."""
    sys.path.insert(0, code)
    from verify_rows import DATA, fresh_shared_caches, load

    rows = load(DATA / corpus)
    if side == "math-verify":
        from math_verify import parse, verify

        def one_pass() -> None:
            fresh_shared_caches()
            for r in rows:
                try:
                    verify(parse("$" + r["gold"] + "$"), parse(r["pred"]))
                except Exception:  # its own failures are its verdicts (bench_verify.run_math_verify)
                    pass

    else:
        from verify_rows import fresh_caches

        from miners.verify import Verifier

        def one_pass() -> None:
            fresh_caches()
            fresh_shared_caches()
            verifier = Verifier()
            for r in rows:
                verifier.verify(r["pred"], r["gold"], r["kind"], options=r["options"])

    for _ in range(1 + passes):
        one_pass()


def per_pass(side: str, code: Path, corpus: str) -> float:
    """Instructions of one pass: (warm-up and two passes) - (warm-up), halved."""
    run = [PY, __file__, "--child", side, str(code), corpus]
    with ThreadPoolExecutor(2) as pool:
        warm, more = pool.map(lambda n: instructions([*run, str(n)]), (0, 2))
    return (more - warm) / 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA))
    ap.add_argument("--before", default=BEFORE_REF)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "verify-instructions.md"))
    ap.add_argument("--child", nargs=4, metavar=("SIDE", "CODE", "CORPUS", "PASSES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        side, code, corpus, passes = args.child
        child(side, code, corpus, int(passes))
        return
    work = work_folder("verify-instructions")
    byte_compile(ROOT)  # a process that compiles what it imports would count the compiler's work
    old = before_worktree(work / "before-code", args.before)
    lines = [
        "| corpus | ours, M a pass | math-verify, M a pass | math-verify / ours | ours before, M a pass "
        "| ours after / before |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    try:
        for corpus in args.corpora:
            ours = per_pass("ours", ROOT, corpus)
            theirs = per_pass("math-verify", ROOT, corpus)
            before = per_pass("ours", old, corpus)
            print(corpus, ours, theirs, before, flush=True)
            lines.append(
                f"| `{corpus}` | {ours / 1e6:,.0f} | {theirs / 1e6:,.0f} | **{theirs / ours:.2f}x** "
                f"| {before / 1e6:,.0f} | **{ours / before:.3f}x** |"
            )
    finally:
        remove_worktree(old)
        shutil.rmtree(work, ignore_errors=True)
    cmd = ".venv/bin/python bench/verify_instructions.py" + (
        "" if args.corpora == list(CORPORA) else " --corpora " + " ".join(args.corpora)
    )
    cmd += "" if args.before == BEFORE_REF else f" --before {args.before}"
    write_section(
        args.out,
        "Answer verifier vs math-verify, and after / before, in instructions (valgrind)",
        cmd,
        f"Before: commit `{args.before}`. Instructions of one pass over every row of the corpus, counted "
        "by cachegrind (a warm-up pass first, as bench_verify's runs are warm); one run each.",
        "Headline: math-verify / ours in instructions: "
        + ", ".join(f"{ln.split('|')[1].strip()} {ln.split('|')[4].strip()}" for ln in lines[2:])
        + "; ours after / before: "
        + ", ".join(ln.split("|")[6].strip() for ln in lines[2:]),
        lines,
    )


if __name__ == "__main__":
    main()
