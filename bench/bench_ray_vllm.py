"""vLLM on Ray workers: `train sample` and `eval` with `--ray-address local --workers 2` against one vLLM
engine in one process, on one GPU: the same outputs, and the time of each.

    .venv/bin/python bench/bench_ray_vllm.py                         # the shipped so7a bundle, 256 items
    .venv/bin/python bench/bench_ray_vllm.py --model runs/sm11a --items 2000

Needs a GPU, vLLM and Ray (the `scale` extra); without them it says what is missing and exits with
status 2, having run nothing. It was written on a machine with no GPU and has NOT been run there: its
figures come only from a GPU machine. A few minutes on one GPU (four vLLM engines start: one per
one-process run, two per Ray run, the two Ray workers sharing the GPU's memory half and half).

Each run is a process of its own, in turn, so one engine's GPU memory is free before the next starts:
- `train sample --samples 2 --temperature 0.8 --seed 1` over generated arithmetic prompts, in one
  process (engine vllm) and on two Ray workers (`--shard-items 32`);
- `eval` greedy over the same prompts as a suite, the same two ways.
It checks that each pair of runs stored the same generations (gen_id, output) and the same scores, and
prints the wall time of each run. Seeds are per item and every vLLM request carries its own seed, so the
two placements should agree sample for sample; a mismatch is reported (with the first differing item)
and the exit status is 1. Writes bench/results/ray_vllm.md with the command that made it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pairstore.files import atomic_write_text  # noqa: E402
from pairstore.store.store import open_store  # noqa: E402


def missing() -> str | None:
    """What this machine lacks for the bench, in words, or None."""
    for module, what in (
        ("vllm", "vLLM"),
        ("ray", "Ray (pip install 'pairstore[scale]')"),
        ("torch", "torch"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{what} is not installed"
    import torch

    if not torch.cuda.is_available():
        return "no GPU (torch.cuda.is_available() is false)"
    return None


def write_prompts(path: Path, n: int) -> None:
    lines = []
    for i in range(n):
        a, b = 3 + (i * 7) % 50, 2 + (i * 11) % 30
        lines.append(json.dumps({"id": f"q{i:05d}", "prompt": f"What is {a} + {b}?", "gold": str(a + b)}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def child(command: str, placement: str, db: str, model: str, prompts: str, work: str) -> None:
    """One run, in this process: the command through the library, its result as a JSON line."""
    ray = (
        {"ray_address": "local", "workers": 2, "shard_items": 32, "work_dir": work}
        if placement == "ray"
        else {}
    )
    t0 = time.perf_counter()
    with open_store(db) as store:
        if command == "sample":
            from train.sample import SampleOptions, sample

            options = SampleOptions(
                model=model, items=prompts, samples=2, temperature=0.8, seed=1, name="m", engine="vllm", **ray
            )
            sample(store, options)
        else:
            from train.eval import EvalOptions, run_eval

            run_eval(
                store, EvalOptions(model=model, suite="bench", path=prompts, name="m", engine="vllm", **ray)
            )
    print(json.dumps({"wall_s": time.perf_counter() - t0}))


def stored(db: str) -> tuple[list, list]:
    with open_store(db, read_only=True) as store:
        gens = store.rows("SELECT item_id, sample_index, gen_id, output FROM generations ORDER BY 1, 2")
        scores = store.rows("SELECT item_id, score, extracted_answer, gen_id FROM evals ORDER BY 1")
    return [tuple(r.values()) for r in gens], [tuple(r.values()) for r in scores]


def first_difference(a: list, b: list) -> str:
    for x, y in zip(a, b):
        if x != y:
            return f"{x!r} != {y!r}"
    return f"{len(a)} rows against {len(b)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(ROOT / "pairstore" / "sample_data" / "so7a"), help="The bundle.")
    ap.add_argument("--items", type=int, default=256, help="Prompts answered by each run.")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ray_vllm.md"))
    ap.add_argument(
        "--child", nargs=6, metavar=("CMD", "PLACE", "DB", "MODEL", "PROMPTS", "WORK"), help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    lack = missing()
    if lack:
        print(f"bench_ray_vllm: nothing run: this bench needs a GPU, vLLM and Ray; {lack}.", file=sys.stderr)
        return 2
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="bench-ray-vllm-") as tmp:
        prompts = Path(tmp) / "prompts.jsonl"
        write_prompts(prompts, args.items)
        for command in ("sample", "eval"):
            results = {}
            for placement in ("one", "ray"):
                db, work = Path(tmp) / f"{command}-{placement}.duckdb", Path(tmp) / f"{command}-work"
                run = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        command,
                        placement,
                        str(db),
                        args.model,
                        str(prompts),
                        str(work),
                    ],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                )
                if run.returncode != 0:
                    print(run.stdout + run.stderr, file=sys.stderr)
                    print(f"bench_ray_vllm: the {command} run ({placement}) failed", file=sys.stderr)
                    return 1
                wall = json.loads(run.stdout.strip().splitlines()[-1])["wall_s"]
                results[placement] = (wall, stored(str(db)))
            (w1, (g1, s1)), (w2, (g2, s2)) = results["one"], results["ray"]
            same = g1 == g2 and s1 == s2
            ok = ok and same
            note = (
                "same"
                if same
                else f"DIFFER: {first_difference(g1, g2) if g1 != g2 else first_difference(s1, s2)}"
            )
            rows.append(f"| {command} | {len(g1)} | {w1:.1f} | {w2:.1f} | {note} |")
            print(rows[-1])
    import torch

    text = "\n".join(
        [
            "## vLLM on Ray workers: two workers against one process",
            "",
            "Command: `.venv/bin/python bench/bench_ray_vllm.py "
            f"--model {args.model} --items {args.items}`  ",
            f"Machine: {torch.cuda.get_device_name(0)}; Python {platform.python_version()}. "
            "Wall seconds include each engine's start.",
            "",
            "| command | generations | one process, wall s | 2 Ray workers, wall s | outputs and scores |",
            "| --- | --- | --- | --- | --- |",
            *rows,
            "",
        ]
    )
    atomic_write_text(args.out, text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
