"""The demo's time budget: `pairstore demo` with the shipped incumbent vs training the incumbent inside it.

    .venv/bin/python bench/bench_demo.py            # the demo and 100 training steps, 3 rounds interleaved
    .venv/bin/python bench/bench_demo.py --full     # and the whole 1,800-step training once, checked bit for
                                                    # bit against the shipped bundle (about 15 minutes more)

The demo's incumbent so7a (pairstore/sample_data/so7a) is a tiny character-level Llama that
scripts/train_demo_model.py trains from its seed. The demo could train it itself or start from the shipped
bundle; this measures both in one run, interleaved (bench/contenders.py: each a process of its own, wall
and CPU time and peak RSS from the kernel): the demo as shipped (each step's time from its own lines),
and the training script's cost (100 steps timed and scaled to the shipped 1,800, plus its probe
evaluations; with --full, all of it once more). Goal: `make demo` < 3 minutes on 2 cores
after set-up. The demo's own headline (so7a vs sm11a on the held-out suite) is copied from its lines, so
the time and the result come from the same run. Writes bench/results/demo.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contenders import Contender, markdown_table, run_interleaved, run_once, summarize  # noqa: E402
from machine import cpu_model, nproc, ram_text  # noqa: E402 (bench/machine.py)

from pairstore.files import atomic_write_text  # noqa: E402
from pairstore.keys import sha256_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "pairstore" / "sample_data" / "so7a"
BUDGET_S = 180
STEP_LINE = re.compile(r"^\[\s*([\d.]+)s\] ([^:]+): (.*)$")


def demo_steps(output: str) -> list[tuple[float, str, str]]:
    return [
        (float(m.group(1)), m.group(2), m.group(3)) for m in map(STEP_LINE.match, output.splitlines()) if m
    ]


def step_durations(steps: list[tuple[float, str, str]]) -> dict[str, float]:
    """Seconds each step took (its line's time minus the previous line's), summed by step name."""
    out: dict[str, float] = {}
    last = 0.0
    for t, name, _ in steps:
        out[name] = out.get(name, 0.0) + t - last
        last = t
    return out


DEMO, TRAIN = "`pairstore demo`, shipped incumbent (what `make demo` runs)", "training steps of the incumbent"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--full", action="store_true", help="also train the incumbent for all its steps and compare"
    )
    p.add_argument("--steps", type=int, default=100, help="training steps timed in each round")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the demo and the training")
    p.add_argument("--keep", help="copy the bundle the full training wrote to this folder")
    ns = p.parse_args()
    python = (
        str(ROOT / ".venv" / "bin" / "python")
        if (ROOT / ".venv" / "bin" / "python").exists()
        else sys.executable
    )
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    load_start = os.getloadavg()[0]
    config = json.loads((SHIPPED / "tiny_chat_config.json").read_text())
    shipped_steps = config["steps"]
    evals = ns.steps // config["eval_every"]
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        tmp = Path(tmp)

        def empty(path: Path) -> Callable[[], None]:
            return lambda: shutil.rmtree(path, ignore_errors=True)

        demo = Contender(
            DEMO,
            [python, str(Path(python).parent / "pairstore"), "demo", str(tmp / "demo")][1:],
            env=env,
            cwd=str(ROOT),
            before=empty(tmp / "demo"),
        )
        train_argv = [
            python,
            "scripts/train_demo_model.py",
            "--out",
            str(tmp / "so7a"),
            "--steps",
            str(ns.steps),
        ]
        train = Contender(TRAIN, train_argv, env=env, cwd=str(ROOT), before=empty(tmp / "so7a"))
        runs = run_interleaved([demo, train], rounds=ns.rounds)
        full = None
        if ns.full:
            full = run_once(
                Contender("full training", [python, "scripts/train_demo_model.py", "--out", str(tmp / "full"),
                                            "--steps", str(shipped_steps)], env=env, cwd=str(ROOT))
            )  # fmt: skip
            evidence = json.loads((tmp / "full" / "training_evidence.json").read_text())
            same = sha256_file(tmp / "full" / "model.safetensors") == sha256_file(
                SHIPPED / "model.safetensors"
            )
            if ns.keep:
                shutil.copytree(tmp / "full", ns.keep, dirs_exist_ok=True)
        else:
            evidence = json.loads((tmp / "so7a" / "training_evidence.json").read_text())
        shutil.rmtree(tmp / "demo", ignore_errors=True)
    load_end = os.getloadavg()[0]
    stats = summarize(runs)
    demo_stats, train_stats = stats[DEMO], stats[TRAIN]
    # the demo's own lines, from its last run: each step's time and the headline
    output = [r for r in runs if r.name == DEMO][-1].stdout
    steps = demo_steps(output)
    durations = step_durations(steps)
    lines = {name: text for _, name, text in steps}
    # Steps cost about the same each (same batch shapes); the probe evaluations are timed in the history.
    per_step_wall, per_step_cpu = train_stats.median_wall / ns.steps, train_stats.median_cpu / ns.steps
    if full is not None:
        full_wall, full_cpu = full.wall_s, full.cpu_s
        how = (
            f"trained all {shipped_steps} steps here once: {full.wall_s:.0f} s wall, {full.cpu_s:.0f} s CPU; "
            "the weights are "
            + ("bit-identical to the shipped bundle's" if same else "NOT identical to the shipped bundle's")
        )
    else:
        full_wall, full_cpu = per_step_wall * shipped_steps, per_step_cpu * shipped_steps
        how = f"the {ns.steps} steps of each round scaled to the shipped {shipped_steps}"
    bundle_mb = sum(f.stat().st_size for f in SHIPPED.rglob("*") if f.is_file()) / 1e6
    demo_wall, demo_cpu = demo_stats.median_wall, demo_stats.median_cpu
    demo_rss, train_rss = demo_stats.max_rss_mb, train_stats.max_rss_mb
    rows = [
        ("`pairstore demo`, shipped incumbent (what `make demo` runs)", demo_wall, demo_cpu, demo_rss),
        ("training the incumbent from its seed (scripts/train_demo_model.py)", full_wall, full_cpu,
         train_rss),
        ("the demo if it trained its incumbent first", demo_wall + full_wall, demo_cpu + full_cpu,
         max(demo_rss, train_rss)),
    ]  # fmt: skip
    md = [
        "## The demo's time budget (`make demo`)",
        "",
        f"The demo as shipped and {ns.steps} training steps of its incumbent so7a (with {evals} probe "
        f"evaluation(s)), each a process of its own, interleaved (bench/contenders.py: {ns.rounds} rounds, "
        "A B, B A, ...; wall time, CPU time and peak RSS from the kernel), to weigh the demo against "
        f"training its incumbent from the seed instead of shipping it ({how}). The shipped bundle is "
        f"{bundle_mb:.1f} MB (budget 20 MB).",
        "",
        f"Headline: `pairstore demo` {demo_wall:.0f} s wall, {demo_cpu:.0f} s CPU (goal under {BUDGET_S} s); "
        f"training its incumbent inside it would add {full_wall:.0f} s",
        "",
        markdown_table(stats),
        "",
        "| what | wall (s) | CPU (s) | peak RSS (MB) | within 180 s |",
        "|---|---:|---:|---:|---|",
    ]
    md += [
        f"| {what} | {wall:.0f} | {cpu:.0f} | {rss:,.0f} | {'yes' if wall < BUDGET_S else 'no'} |"
        for what, wall, cpu, rss in rows
    ]
    md += [
        "",
        "Where the demo's time goes (seconds per step, from its own lines, its last run):",
        "",
        "| step | s |",
        "|---|---:|",
    ]
    md += [f"| {name} | {sec:.1f} |" for name, sec in sorted(durations.items(), key=lambda kv: -kv[1])[:8]]
    md += [
        "",
        "The same run's result (from the demo's lines):",
        "",
        f"- eval: {lines.get('eval', '?')}",
        f"- paired test: {lines.get('paired test', '?')}",
        f"- blind judge: {lines.get('blind judge', '?')}",
        "",
        f"Goal: `make demo` < {BUDGET_S} s on 2 cores after set-up: {demo_wall:.0f} s (median wall) -> "
        f"{'met' if demo_wall < BUDGET_S else 'NOT met'}. Training the incumbent inside the demo would "
        f"take it to {demo_wall + full_wall:.0f} s, hence the shipped bundle.",
        "",
        f"Incumbent training evidence: {evidence['steps_trained']} steps, last probe accuracy "
        f"{evidence['history'][-1]['probe_accuracy'] if evidence['history'] else '-'}.",
        "",
        f"Machine: {nproc()} CPUs, {cpu_model()}, {ram_text()} RAM; load average {load_start:.1f} at start, "
        f"{load_end:.1f} at end.",
        "",
        f"Command: `.venv/bin/python bench/bench_demo.py{' --full' if ns.full else ''}`",
        "",
    ]
    text = "\n".join(md)
    atomic_write_text(ROOT / "bench" / "results" / "demo.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
