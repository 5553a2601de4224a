"""The training path on a GPU: the tests that train, merge, sample and evaluate, run where CUDA is there.

    python bench/gpu_tests.py                       # on a machine with a GPU and the `train` extra
    python bench/gpu_tests.py --out /some/dir/gpu_tests.md

CI has no GPU, so the code that only runs on one (train/dpo.py trains in bf16 with gradient
checkpointing there, train/sample.py and train/ray_shards.py put the model on the GPU) is tested only
here: tests/train/test_train.py (DPO with the NLL term, resume, merge, sample, eval, the accelerate
launcher), tests/train/test_tiny_chat.py, tests/cli/test_demo.py (the whole demo: ingest, mine,
export, train, merge, soup, evaluate, report), and the other files that train or load what training
wrote (TEST_FILES). `--files` runs some of them. Nothing is timed against a baseline: this is a check, and
its figures are what passed. Without a GPU it says so and exits with status 2, having run nothing.
Writes bench/results/gpu_tests.md (or --out).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pairstore.files import atomic_write_text  # noqa: E402

TEST_FILES = (
    "tests/train/test_train.py",
    "tests/train/test_tiny_chat.py",
    "tests/cli/test_demo.py",
    "tests/train/test_bundle_compat.py",
    "tests/train/test_bundle_refusals.py",
    "tests/train/test_recipes_doc_train.py",
    "tests/train/test_train_logs.py",
    "tests/export/test_trl_exports.py",
    "tests/test_real_round.py",
)
PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "duckdb", "pyarrow")
_COUNTS_RE = re.compile(r"(\d+) (passed|failed|skipped|error|errors)")


def gpu_name() -> str | None:
    """The GPU's name, or None where torch sees none."""
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def run_file(test_file: str) -> dict:
    """One test file in a pytest process of its own: its counts, failures and seconds."""
    t0 = time.perf_counter()
    got = subprocess.run(
        [sys.executable, "-m", "pytest", test_file, "-o", "addopts=", "-q", "-p", "no:cacheprovider", "-rfE"],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
    )
    summary = next((ln for ln in reversed(got.stdout.splitlines()) if _COUNTS_RE.search(ln)), "")
    counts = {kind.rstrip("s"): int(n) for n, kind in _COUNTS_RE.findall(summary)}
    failed = [ln.split(" ", 1)[1] for ln in got.stdout.splitlines() if ln.startswith(("FAILED ", "ERROR "))]
    return {
        "file": test_file,
        "rc": got.returncode,
        "counts": counts,
        "failed": failed,
        "s": time.perf_counter() - t0,
    }


def report(gpu: str, runs: list[dict], command: str, *, of: int) -> str:
    """The results section for `runs`, the first of `of` files asked for."""
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    passed = sum(r["counts"].get("passed", 0) for r in runs)
    failed = sum(r["counts"].get("failed", 0) + r["counts"].get("error", 0) for r in runs)
    lines = [
        "## The training path on a GPU (bench/gpu_tests.py)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {gpu}; Python {platform.python_version()}; {', '.join(versions)}.",
        "",
        f"Headline: on {gpu}, {passed} tests passed and {failed} failed "
        f"({', '.join(Path(r['file']).name for r in runs)})"
        + ("" if len(runs) == of else f"; {of - len(runs)} more files asked for did not run (stopped)"),
        "",
        "| test file | passed | failed | skipped | seconds | failures |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        c = r["counts"]
        lines.append(
            f"| `{r['file']}` | {c.get('passed', 0)} | {c.get('failed', 0) + c.get('error', 0)} | "
            f"{c.get('skipped', 0)} | {r['s']:.0f} | {'; '.join(r['failed']) or '-'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu_tests.md"))
    ap.add_argument("--files", nargs="+", default=list(TEST_FILES), help="test files to run (default: all)")
    args = ap.parse_args()
    gpu = gpu_name()
    if gpu is None:
        print("no GPU (torch is missing or torch.cuda.is_available() is false): nothing run", file=sys.stderr)
        return 2
    command = " ".join(["python", "bench/gpu_tests.py", *sys.argv[1:]])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    text = ""
    for test_file in args.files:
        runs.append(run_file(test_file))
        print(runs[-1], flush=True)
        # written after every file, so a run stopped at a time limit keeps what it measured
        text = report(gpu, runs, command, of=len(args.files))
        atomic_write_text(out, text)
    print(text)
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
