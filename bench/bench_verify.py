"""Answer verifier vs Hugging Face math-verify on a labeled corpus: label agreement and pairs/second.

    .venv/bin/python bench/bench_verify.py [--runs 3] [--corpus bench/data/verify_corpus.jsonl]

The corpus (bench/make_verify_corpus.py) holds whole model outputs with their gold answer and a label
from how each pair was built. Both verifiers see the same pairs in one process:
  * ours: miners.verify.is_equivalent(output, gold, kind), verdict cache cleared before each run
    (the mining case: several samples of one problem in one run); also measured with every cache
    cleared before every pair ("uncached").
  * math-verify 0.9 as it is normally used: verify(parse("$" + gold + "$"), parse(output)) with its
    default extraction configs and timeouts (main thread).
Throughput is the median over --runs runs. Prints a markdown section and writes bench/results/verify.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model, nproc, ram_text  # noqa: E402 (bench/machine.py)

from miners import verify as ours  # noqa: E402
from pairstore.files import atomic_write_text  # noqa: E402

DEFAULT_CORPUS = ROOT / "bench" / "data" / "verify_corpus.jsonl"
RESULT = ROOT / "bench" / "results" / "verify.md"


NOTES = """Notes on reading these figures:
- The corpus was written by the author of miners.verify, alongside it; every form in it is one the
  verifier was built to handle, so 100% (or near) agreement on it is the expected outcome and is no
  estimate of accuracy on real model outputs. tests/test_verify.py holds the form-by-form cases.
- Most of math-verify's disagreements are by design rather than bugs: it reads the last answer-like
  expression in the whole text, so it takes the answer of a hallucinated follow-up question and the
  last number of a runaway output with no committed answer; it parses the loop-fix task golds (words,
  "Q R r", decimals to N places) as math. On the MATH-style pairs (the kind it is made for) the two
  agree with the labels about equally often (see "By kind").
- Speed: most pairs never reach sympy in miners.verify (normalization plus an exact evaluator decide
  them); the few that do pay math-verify's cost. The "all caches cleared per pair" row is the rate with
  no reuse at all; mining many samples of one problem sits between the two rows."""


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def run_ours(items: list[dict], uncached: bool = False, per_kind: dict | None = None):
    ours.clear_cache()
    out = []
    clock = time.perf_counter
    t0 = clock()
    for it in items:
        if uncached:
            ours.clear_cache()
        t_item = clock()
        out.append(ours.is_equivalent(it["output"], it["gold"], it["kind"]))
        if per_kind is not None:
            per_kind[it["kind"]] += clock() - t_item
    return out, clock() - t0


def run_math_verify(items: list[dict], per_kind: dict | None = None):
    from math_verify import parse, verify

    out = []
    clock = time.perf_counter
    t0 = clock()
    for it in items:
        t_item = clock()
        gold = parse("$" + it["gold"] + "$")
        pred = parse(it["output"])
        out.append(bool(verify(gold, pred)))
        if per_kind is not None:
            per_kind[it["kind"]] += clock() - t_item
    return out, clock() - t0


def group_of(it: dict) -> str:
    form = it["form"]
    if it["kind"] == "gsm8k":
        for key in ("selfcorrect_right", "selfcorrect_wrong", "followup_tail", "gold_in_reasoning_only",
                    "intermediate", "no_final_answer_loop"):
            if key in form:
                return f"gsm8k: {key}"
        parts = form.split("_")
        rendering = parts[2] if parts[1] == "wrong" else parts[1]
        return f"gsm8k: {'wrong' if parts[1] == 'wrong' else 'right'} answer, {rendering}"
    return f"{it['kind']}: {form}"


def machine() -> str:
    return f"{nproc()} cores ({cpu_model()}), {ram_text()} RAM, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per verifier (median reported)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="labeled corpus (JSONL)")
    ap.add_argument("--out", type=Path, default=RESULT, help="markdown result file")
    ap.add_argument("--show", type=int, default=8, help="disagreements with the labels to list per verifier")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)  # math-verify logs every timeout; the verdicts are what we count

    items = load(args.corpus)
    labels = [bool(it["label"]) for it in items]
    # warm imports (sympy, latex2sympy, antlr) outside the timed runs, for both
    ours.is_equivalent("\\boxed{\\log_2 8}", "3", "math")
    run_math_verify(items[:5])

    ours_times, ours_uncached_times, mv_times = [], [], []
    ours_verdicts = mv_verdicts = None
    symbolic = 0
    ours_kind_s: dict[str, float] = defaultdict(float)
    mv_kind_s: dict[str, float] = defaultdict(float)
    for _ in range(args.runs):
        before = ours.symbolic_calls()
        ours_verdicts, t = run_ours(items, per_kind=ours_kind_s)
        symbolic = ours.symbolic_calls() - before
        ours_times.append(t)
        _, t = run_ours(items, uncached=True)
        ours_uncached_times.append(t)
        mv_verdicts, t = run_math_verify(items, per_kind=mv_kind_s)
        mv_times.append(t)

    n = len(items)
    ours_ok = [v == lab for v, lab in zip(ours_verdicts, labels)]
    mv_ok = [v == lab for v, lab in zip(mv_verdicts, labels)]
    t_ours, t_unc, t_mv = (statistics.median(x) for x in (ours_times, ours_uncached_times, mv_times))

    groups: dict[str, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        groups[group_of(it)].append(i)
    kinds = Counter(it["kind"] for it in items)

    cmd = "HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_verify.py " + " ".join(argv or sys.argv[1:])
    lines = [
        "## Answer verifier vs math-verify",
        "",
        f"Command: `{cmd.strip()}`  ",
        f"Machine: {machine()}; shared with other engineers' jobs while measuring, so absolute "
        "rates are noisy (the ratio is measured in one process, runs interleaved).  ",
        f"Corpus: `{args.corpus.relative_to(ROOT) if args.corpus.is_relative_to(ROOT) else args.corpus}` "
        f"({n} pairs: {kinds['gsm8k']} GSM8K-style outputs, {kinds['math']} MATH-style, {kinds['task']} "
        f"loop-fix task outputs; {sum(labels)} labeled equal, {n - sum(labels)} not), built by "
        "`bench/make_verify_corpus.py`; labels come from how each pair was constructed.  ",
        f"Timing: median of {args.runs} runs over the whole corpus, each verifier on the same whole outputs. "
        f"In one run miners.verify handed {symbolic} comparisons to its math-verify back end (the rest "
        "were decided by its own normalization and exact evaluator).",
        "",
        "| verifier | agrees with labels | pairs/s | speed-up vs math-verify |",
        "| --- | --- | --- | --- |",
        f"| miners.verify (verdict cache cleared per run) | {sum(ours_ok)}/{n} ({sum(ours_ok) / n:.1%}) "
        f"| {n / t_ours:,.0f} | {t_mv / t_ours:.1f}x |",
        f"| miners.verify (all caches cleared per pair) | {sum(ours_ok)}/{n} ({sum(ours_ok) / n:.1%}) "
        f"| {n / t_unc:,.0f} | {t_mv / t_unc:.1f}x |",
        f"| math-verify 0.9 parse+verify | {sum(mv_ok)}/{n} ({sum(mv_ok) / n:.1%}) | {n / t_mv:,.0f} | 1.0x |",
        "",
        "By kind (pairs agreeing with the label; pairs/s from the per-pair times of all runs, verdict cache "
        "cleared per run):",
        "",
        "| kind | pairs | miners.verify agrees | math-verify agrees | miners.verify pairs/s | math-verify pairs/s "
        "| speed-up |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for kind in ("gsm8k", "math", "task"):
        idx = [i for i, it in enumerate(items) if it["kind"] == kind]
        rate_ours = len(idx) * args.runs / ours_kind_s[kind]
        rate_mv = len(idx) * args.runs / mv_kind_s[kind]
        lines.append(f"| {kind} | {len(idx)} | {sum(ours_ok[i] for i in idx)} | {sum(mv_ok[i] for i in idx)} "
                     f"| {rate_ours:,.0f} | {rate_mv:,.0f} | {rate_ours / rate_mv:.1f}x |")
    lines += [
        "",
        "Per form (pairs agreeing with the label):",
        "",
        "| form | pairs | miners.verify | math-verify |",
        "| --- | --- | --- | --- |",
    ]
    for name in sorted(groups):
        idx = groups[name]
        lines.append(f"| {name} | {len(idx)} | {sum(ours_ok[i] for i in idx)} | {sum(mv_ok[i] for i in idx)} |")
    for who, ok, verdicts in (("miners.verify", ours_ok, ours_verdicts), ("math-verify", mv_ok, mv_verdicts)):
        wrong = [i for i in range(n) if not ok[i]]
        lines += ["", f"{who}: {len(wrong)} disagreements with the labels; the first {min(args.show, len(wrong))}:", ""]
        for i in wrong[: args.show]:
            it = items[i]
            tail = it["output"][-110:].replace("\n", "\\n").replace("|", "\\|")
            lines.append(f"- `{it['id']}` {it['form']}: gold `{it['gold']}`, label {it['label']}, "
                         f"said {verdicts[i]}; output ends `...{tail}`")
    lines += ["", NOTES]
    text = "\n".join(lines) + "\n"
    print(text)
    atomic_write_text(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
