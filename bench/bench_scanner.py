"""Repetition scanner vs a plain word-6-gram Counter scan, on one labeled corpus, in one run.

    .venv/bin/python bench/bench_scanner.py                    # ~6 MB, 3 rounds of 5 passes each
                                                               # -> bench/results/scanner.md
    .venv/bin/python bench/bench_scanner.py --mb 1 --runs 1    # a quicker look

Each scanner runs in a process of its own, the processes interleaved (bench/contenders.py: rounds
A B C, C B A, ...): it reads the corpus the parent wrote, warms up on 300 texts, then times
--passes passes over each part of the corpus (all, normal only, degenerate only), wall and CPU, and
reports the medians; the kernel's account of the process (CPU, peak memory) stands beside them.

Goal: audits.loops.scan at >= 30 MB/s on one core and no slower than
the baseline, a plain `collections.Counter` over each text's word 6-grams
(`text.split()`, flag at 12 occurrences, the model card's threshold).

The corpus is built here, deterministically (xxh3-derived draws, no
`random`), as a mix of normal answers and degenerate ones:
- normal: package documentation (the METADATA long descriptions installed in
  this environment: markdown prose, lists, tables and code), standard-library
  Python source in code fences, GSM8K-style step-by-step solutions, correct
  loop-fix answers (long division, digit sums, letter counts, fraction
  expansions to at most 40 places), Chinese answers;
- degenerate, as in the model card's loop analysis: a question echoed until
  the token limit, numeric oscillations ("145 -0 ...", "+ 1 + 1 ..."), digit
  runaways inside one number, Chinese phrase loops, word-salad cycles, and
  answers whose tail loops a sentence a few times before being cut off.
Each text carries its label, so the report also counts how often each scanner
agrees with it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import xxhash

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from contenders import Contender, markdown_table, ratio_text, run_interleaved, summarize  # noqa: E402
from machine import cpu_model, ram_text  # noqa: E402 (bench/machine.py)

from audits.loops import scan, scan_many  # noqa: E402
from pairstore.files import atomic_write_text  # noqa: E402

BASELINE_THRESHOLD = 12


def counter_scan(text: str) -> bool:
    """The baseline: a plain Counter of whitespace-token 6-grams, flagged at 12 occurrences."""
    toks = text.split()
    counts = Counter(zip(toks, toks[1:], toks[2:], toks[3:], toks[4:], toks[5:]))
    return max(counts.values(), default=0) >= BASELINE_THRESHOLD


class Draws:
    """Deterministic draws: xxh3-64 of (seed, name, counter)."""

    def __init__(self, seed: int, name: str):
        self.prefix = f"{seed}\x1f{name}\x1f"
        self.i = 0

    def u64(self) -> int:
        self.i += 1
        return xxhash.xxh3_64_intdigest(f"{self.prefix}{self.i}".encode())

    def below(self, n: int) -> int:
        return self.u64() % n  # bias < n / 2**64: irrelevant for a benchmark mix

    def between(self, lo: int, hi: int) -> int:
        return lo + self.below(hi - lo + 1)

    def pick(self, seq):
        return seq[self.below(len(seq))]


# ---- normal answers ---------------------------------------------------------


def doc_chunks(limit_files: int = 400) -> list[str]:
    """Markdown answers cut from installed packages' long descriptions."""
    site = Path(sysconfig.get_paths()["purelib"])
    chunks = []
    for meta in sorted(site.glob("*.dist-info/METADATA"))[:limit_files]:
        text = meta.read_text(encoding="utf-8", errors="replace")
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        paras = [p for p in body.split("\n\n") if p.strip()]
        cur: list[str] = []
        size = 0
        for para in paras:
            cur.append(para)
            size += len(para)
            if size >= 1500:
                chunks.append("\n\n".join(cur))
                cur, size = [], 0
        if size >= 300:
            chunks.append("\n\n".join(cur))
    return chunks


def code_chunks() -> list[str]:
    """Standard-library source in code fences, as a coding answer shows it."""
    std = Path(sysconfig.get_paths()["stdlib"])
    names = [
        "argparse.py",
        "json/encoder.py",
        "json/decoder.py",
        "csv.py",
        "textwrap.py",
        "fractions.py",
        "statistics.py",
        "dataclasses.py",
        "heapq.py",
        "bisect.py",
        "calendar.py",
        "string.py",
        "difflib.py",
        "pprint.py",
        "shlex.py",
        "configparser.py",
        "enum.py",
        "functools.py",
    ]
    chunks = []
    for name in names:
        path = std / name
        if not path.exists():
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for start in range(0, len(lines), 60):
            block = "\n".join(lines[start : start + 60])
            chunks.append(
                f"Here is how `{path.stem}` does it:\n\n```python\n{block}\n```\n\n"
                "This keeps each step small and testable."
            )
    return chunks


_NAMES = [
    "Natalia",
    "Weng",
    "Betty",
    "Julie",
    "James",
    "Mark",
    "Albert",
    "Ken",
    "Alexis",
    "Tina",
    "Randy",
    "Joy",
]
_ITEMS = [
    "clips",
    "cupcakes",
    "pages",
    "marbles",
    "stickers",
    "apples",
    "books",
    "tickets",
    "shells",
    "cards",
]


def gsm8k_answer(d: Draws) -> str:
    name, item = d.pick(_NAMES), d.pick(_ITEMS)
    a, b, c = d.between(3, 90), d.between(2, 12), d.between(5, 400)
    price = d.between(2, 25)
    steps = [
        f"{name} starts with {a} {item}.",
        f"Each day {name} gets {b} times as many {item} as the day before, so on the second day that is "
        f"{a} x {b} = {a * b} {item}.",
        f"Together that makes {a} + {a * b} = {a + a * b} {item}.",
        f"{name} then gives away {c % (a + a * b) or 1} {item}, "
        f"leaving {a + a * b} - {c % (a + a * b) or 1} = "
        f"{a + a * b - (c % (a + a * b) or 1)} {item}.",
        f"At ${price} each, the remaining {item} are worth {a + a * b - (c % (a + a * b) or 1)} x {price} = "
        f"${(a + a * b - (c % (a + a * b) or 1)) * price}.",
    ]
    final = (a + a * b - (c % (a + a * b) or 1)) * price
    intro = d.pick(
        [
            "Let's solve this step by step.",
            "We can work through it in order.",
            "Let me break the problem down.",
            "Step by step:",
        ]
    )
    return (
        intro + "\n\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)) + f"\n\nFinal answer: {final}"
    )


def loopfix_answer(d: Draws) -> str:
    kind = d.below(4)
    if kind == 0:
        num, den = d.between(1, 999), d.between(3, 97)
        places = d.between(5, 40)
        frac = Fraction(num, den)
        digits = str(frac.numerator * 10**places // frac.denominator)
        whole, dec = digits[:-places] or "0", digits[-places:]
        return (
            f"Divide {num} by {den}.\n\n{num} / {den} = {whole}.{dec} (to {places} decimal places; the "
            f"remainder pattern repeats every few digits).\n\nFinal answer: {whole}.{dec}"
        )
    if kind == 1:
        n = d.between(10**8, 10**30)
        s = sum(int(ch) for ch in str(n))
        iters = [s]
        while iters[-1] >= 10:
            iters.append(sum(int(ch) for ch in str(iters[-1])))
        return (
            f"The digits of {n} are {', '.join(str(n))}.\nTheir sum is {s}.\n"
            + "".join(f"Summing again: {v}.\n" for v in iters[1:])
            + f"\nFinal answer: {iters[-1]}"
        )
    if kind == 2:
        word = d.pick(["strawberry", "bookkeeper", "mississippi", "committee", "assessment", "bubblegum"])
        letter = d.pick(sorted(set(word)))
        count = word.count(letter)
        return (
            f"Spell it out: {'-'.join(word)}.\nThe letter '{letter}' appears at positions "
            f"{', '.join(str(i + 1) for i, ch in enumerate(word) if ch == letter)}.\n\nFinal answer: {count}"
        )
    dividend, divisor = d.between(1000, 10**9), d.between(2, 99)
    q, r = divmod(dividend, divisor)
    return (
        f"Long division of {dividend} by {divisor}: {divisor} goes into {dividend} {q} times, since "
        f"{divisor} x {q} = {divisor * q}, and {dividend} - {divisor * q} = {r}.\n\n"
        f"Quotient {q}, remainder {r}.\n\nFinal answer: {q} R {r}"
    )


_ZH = [
    "人工智能的发展改变了许多行业的工作方式。",
    "首先，我们需要明确问题的定义和边界。",
    "其次，数据的质量直接决定了模型的效果。",
    "在实际应用中，还要考虑成本和延迟。",
    "例如，一个客服系统需要在一秒内给出回答。",
    "另外，隐私保护也是不可忽视的问题。",
    "总的来说，技术进步需要与社会责任同行。",
    "这首诗描写了春天江南的景色。",
    "诗人用简洁的语言表达了思乡之情。",
    "每一句的第一个字连起来，正好是一句祝福。",
    "我们可以把这个问题分成三个步骤来解决。",
    "第一步，列出所有已知条件。",
    "第二步，根据条件建立方程。",
    "第三步，求解方程并检验结果。",
    "所以最后的答案是四十二。",
    "希望这个解释对你有帮助。",
]


def chinese_answer(d: Draws) -> str:
    picks = [d.pick(_ZH) for _ in range(d.between(4, 12))]
    out = []
    for s in picks:  # a real answer does not say the same sentence twice in a row
        if not out or out[-1] != s:
            out.append(s)
    return "".join(out)


# ---- degenerate answers -------------------------------------------------------

_QUESTIONS = [
    "How many times does the letter r appear in the word strawberry?",
    "What is the sum of the digits of 982347561?",
    "Remove every letter e from the sentence: the green tree needs seven leaves.",
    "How many words are in the sentence 'the quick brown fox jumps over the lazy dog'?",
    "What is 7 divided by 13, to 20 decimal places?",
    "Count the letters s in 'mississippi' and give the number.",
]


def _cut(text: str, d: Draws, limit_chars: int) -> str:
    """Cut at a token limit, possibly mid-word, as a generation that ran out of tokens is."""
    return text[: limit_chars - d.below(7)]


def degenerate_answer(d: Draws) -> str:
    kind = d.below(6)
    limit = d.between(1800, 3200)
    if kind == 0:  # the question echoed instead of answered
        q = d.pick(_QUESTIONS)
        return _cut(d.pick(["", "Sure! ", "Let me think. "]) + (q + " ") * 200, d, limit)
    if kind == 1:  # numeric oscillation
        a = d.between(2, 999)
        unit = d.pick([f"{a} -0 ", "+ 1 ", f"= {a} ", f"{a} {a + 1} "])
        return _cut(f"We get {a} " + unit * 2000, d, limit)
    if kind == 2:  # a digit runaway inside one number
        num, den = d.between(1, 50), d.pick([7, 13, 17, 19, 23, 29, 31, 37, 41])
        digits = str(num * 10**1500 // den)
        return _cut(f"{num}/{den} = 0.{digits}", d, limit)
    if kind == 3:  # a Chinese phrase loop
        phrase = d.pick(["春风又绿江南岸，", "明月几时有，", "我爱你中国，", "祝你生日快乐，"])
        return _cut("好的，这是藏头诗：\n" + phrase * 400, d, limit // 2)
    if kind == 4:  # a word-salad attractor
        words = [
            d.pick(["the", "answer", "is", "count", "letter", "so", "we", "then", "again", "number"])
            for _ in range(d.between(3, 8))
        ]
        return _cut("Let me count. " + (" ".join(words) + " ") * 400, d, limit)
    # a normal start, then one sentence looped until the limit
    sentence = d.pick(
        [
            "I need to count each letter carefully before I give the final answer to this question.",
            "So the remainder is carried to the next digit and we divide again by the same divisor.",
            "Let me double check the sum of the digits once more to be sure it is right.",
        ]
    )
    return _cut(gsm8k_answer(d).rsplit("\n\n", 1)[0] + "\n\n" + (sentence + " ") * 40, d, limit)


def build_corpus(target_mb: float, seed: int = 0) -> list[tuple[str, bool]]:
    """(text, is_degenerate) pairs totalling about target_mb of UTF-8."""
    docs, code = doc_chunks(), code_chunks()
    d = Draws(seed, "corpus")
    out: list[tuple[str, bool]] = []
    total = 0
    while total < target_mb * 1e6:
        roll = d.below(100)
        if roll < 10:
            text, bad = degenerate_answer(d), True
        elif roll < 40:
            text, bad = d.pick(docs), False
        elif roll < 55:
            text, bad = d.pick(code), False
        elif roll < 75:
            text, bad = gsm8k_answer(d), False
        elif roll < 92:
            text, bad = loopfix_answer(d), False
        else:
            text, bad = chinese_answer(d), False
        out.append((text, bad))
        total += len(text.encode("utf-8"))
    return out


# ---- measurement -----------------------------------------------------------------


def _time(run, texts) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for run(texts)."""
    wall, cpu = time.perf_counter(), time.process_time()
    run(texts)
    return time.perf_counter() - wall, time.process_time() - cpu


def _one_by_one(fn):
    return lambda texts: [fn(t) for t in texts]


def _machine() -> list[str]:
    return [
        f"- CPU: {cpu_model()}; `nproc` = {os.cpu_count()}; RAM {ram_text()}",
        f"- Python {platform.python_version()}, numpy {np.__version__}; one process, one thread per scanner",
    ]


GOAL, BASE, PER_TEXT = (
    "audits.loops.scan_many",
    "Counter 6-gram baseline",
    "audits.loops.scan, one call per text",
)
METHODS = {GOAL: scan_many, BASE: _one_by_one(counter_scan), PER_TEXT: _one_by_one(scan)}
# The parts of the corpus each scanner is timed on (scan per text only on the whole of it: it is slow).
PARTS = {
    GOAL: ("all", "normal only", "degenerate only"),
    BASE: ("all", "normal only", "degenerate only"),
    PER_TEXT: ("all",),
}


def child(name: str, corpus_path: Path, passes: int) -> None:
    """One contender run: the scanner `name` over each part of the corpus, `passes` times; one JSON line of
    the median (wall, CPU) per part."""
    corpus = [(t, bad) for t, bad in json.loads(corpus_path.read_text())]
    subsets = {
        "all": [t for t, _ in corpus],
        "normal only": [t for t, bad in corpus if not bad],
        "degenerate only": [t for t, bad in corpus if bad],
    }
    run = METHODS[name]
    run(subsets["all"][:300])  # warm caches, tables and imports once
    out = {}
    for part in PARTS[name]:
        times = [_time(run, subsets[part]) for _ in range(passes)]
        out[part] = [statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)]
    print(json.dumps(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=6.0, help="corpus size in MB (UTF-8)")
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds of the scanners")
    ap.add_argument("--passes", type=int, default=5, help="timed passes per part in each run (median)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scanner.md"))
    ap.add_argument("--child", nargs=2, metavar=("SCANNER", "CORPUS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], Path(args.child[1]), args.passes)
        return 0

    load_before = os.getloadavg()
    corpus = build_corpus(args.mb, args.seed)
    texts = [t for t, _ in corpus]
    labels = [bad for _, bad in corpus]
    normal = [t for t, bad in corpus if not bad]
    degenerate = [t for t, bad in corpus if bad]
    sizes = {
        "all": sum(len(t.encode("utf-8")) for t in texts),
        "normal only": sum(len(t.encode("utf-8")) for t in normal),
        "degenerate only": sum(len(t.encode("utf-8")) for t in degenerate),
    }
    (ROOT / "bench" / "_work").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=ROOT / "bench" / "_work", prefix="scanner"))
    try:
        corpus_path = work / "corpus.json"
        corpus_path.write_text(json.dumps(corpus))
        me = [sys.executable, str(Path(__file__).resolve()), "--passes", str(args.passes), "--child"]
        runs = run_interleaved(
            [Contender(name, [*me, name, str(corpus_path)]) for name in (GOAL, BASE, PER_TEXT)],
            rounds=args.runs,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    command = " ".join(
        [".venv/bin/python bench/bench_scanner.py", *(argv if argv is not None else sys.argv[1:])]
    )
    inside = {
        name: [json.loads(r.stdout.strip().splitlines()[-1]) for r in runs if r.name == name]
        for name in METHODS
    }

    scan_flags = [r.flagged for r in scan_many(texts)]
    base_flags = [counter_scan(t) for t in texts]

    def agreement(flags):
        tp = sum(f and b for f, b in zip(flags, labels))
        fp = sum(f and not b for f, b in zip(flags, labels))
        fn = sum(b and not f for f, b in zip(flags, labels))
        return tp, fp, fn

    lines = [
        "## Repetition scanner",
        "",
        "Goal: `audits.loops` >= 30 MB/s on one core and no slower than a plain word-6-gram "
        "`collections.Counter` scan, on the same corpus in the same run.",
        "",
        f"Corpus: {len(texts)} texts, {sizes['all'] / 1e6:.2f} MB UTF-8 ({len(normal)} normal answers, "
        f"{len(degenerate)} degenerate; built by the script, seed {args.seed}; see its docstring). "
        f"Each scanner in a process of its own, {args.runs} rounds interleaved (bench/contenders.py); in "
        f"each run the median of {args.passes} passes over each part, then the median over the rounds. "
        'MB/s from CPU time of the one process (the measure for "one core" on a shared machine) '
        "and from wall time.",
        "",
        "| scanner | corpus | MB | median CPU s | MB/s (CPU) | median wall s | MB/s (wall) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    speed = {}
    for name in METHODS:
        for part in PARTS[name]:
            wall = statistics.median(x[part][0] for x in inside[name])
            cpu = statistics.median(x[part][1] for x in inside[name])
            mb = sizes[part] / 1e6
            speed[(name, part)] = (mb / cpu, mb / wall)
            lines.append(
                f"| {name} | {part} | {mb:.2f} | {cpu:.3f} | {mb / cpu:.1f} | {wall:.3f} | {mb / wall:.1f} |"
            )
    g_cpu, g_wall = speed[(GOAL, "all")]
    b_cpu, b_wall = speed[(BASE, "all")]
    per_round = [b["all"][1] / g["all"][1] for g, b in zip(inside[GOAL], inside[BASE])]
    met = g_cpu >= 30 and g_cpu >= b_cpu
    lines += [
        "",
        f"Headline: scan_many {ratio_text(per_round)} faster than a Counter 6-gram scan, CPU "
        f"({g_cpu:.1f} MB/s; goal at least 30 MB/s and no slower)",
        "",
        f"Whole corpus: scan_many {g_cpu:.1f} MB/s CPU ({g_wall:.1f} wall) vs baseline {b_cpu:.1f} "
        f"({b_wall:.1f} wall): {ratio_text(per_round)} faster by CPU time, round by round; "
        f"{g_wall / b_wall:.2f}x by wall time on the medians; "
        f"goal {'met' if met else 'NOT met'} (CPU). `scan(text)` answers one text at a time with the same "
        "code (a batch of one), paying numpy's per-call overhead on every text: use `scan_many` (as "
        "`loop_table` does) for bulk work.",
        "",
        "The processes as a whole (reading the corpus, imports, the warm-up and every pass):",
        "",
        markdown_table(summarize(runs)),
        "",
        "Agreement with the corpus labels (a flag on a degenerate text is a hit):",
        "",
        "| scanner | degenerate flagged | normal flagged (false) | degenerate missed |",
        "| --- | --- | --- | --- |",
    ]
    for name, flags in (
        ("audits.loops", scan_flags),
        (f"Counter 6-gram >= {BASELINE_THRESHOLD}", base_flags),
    ):
        tp, fp, fn = agreement(flags)
        lines.append(f"| {name} | {tp}/{len(degenerate)} | {fp}/{len(normal)} | {fn} |")
    lines += (
        [
            "",
            "The baseline cannot see loops without spaces (a digit runaway inside one number, a "
            "Chinese phrase loop) nor short cycles whose 6-grams stay under 12, and it computes no cycles, "
            "tail loops or catastrophic (100x) repeats; the scanner does all of that in the time measured.",
            "",
            "Machine:",
            "",
        ]
        + _machine()
        + [
            f"- load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} "
            "cores: the machine was shared with other jobs, so wall times are noisy",
            "",
            f"Command: `{command}`",
            "",
        ]
    )
    report = "\n".join(lines)
    print(report)
    atomic_write_text(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
