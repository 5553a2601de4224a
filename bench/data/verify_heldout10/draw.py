"""Draw the tenth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key being the file's path (a
second key, the path with " flagged wrong", draws among the rows the source flagged wrong that the first
draw did not take). The labels are in labels.tsv, written by hand by reading each drawn output before any
verifier ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout10/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout10/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, read_at  # noqa: E402

SEED = "g1h10"
HERE = Path(__file__).parent
ID_PREFIX = "x"

csv.field_size_limit(1 << 30)

EXAMPLERS = "michaelnaeim/Examplers"
EXAMPLERS_COMMIT = "5aa0865353d19f64d58a344f8e408f53af7c7734"
# Chain-of-thought runs of two OpenAI chat models on GSM8K (test) and SVAMP, the reply asked to end with
# '# <answer>'. Each CSV has no header; its five columns are the question, the gold (GSM8K: the reference
# solution, whose '#### N' gives the gold), the whole reply, the GSM8K gold as a float (SVAMP and some
# GSM8K rows: empty), and the run's parse of the reply.
# (path, model, benchmark, plain draw, draw among the rows whose parse differs from the gold)
EXAMPLERS_FILES = [
    ("Final_results/GSM8K_dataset/GSM8K_with_GPT-3.5-Turbo/cot.csv", "gpt-3.5-turbo", "GSM8K", 12, 3),
    ("0. GSM8k/GPT-4omini/0. COT and non COT/gsm8k_gpt-4o-mini__cot.csv", "gpt-4o-mini", "GSM8K", 12, 3),
    ("Final_results/SVAMP_dataset/SVAMP_with_GPT-3.5-Turbo/COT.csv", "gpt-3.5-turbo", "SVAMP", 12, 3),
    ("Final_results/SVAMP_dataset/SVAMP_with_GPT-4o-mini/cot.csv", "gpt-4o-mini", "SVAMP", 12, 3),
]

LAZY = "Hypogenic-AI/fix-lazy-llms-codex"
LAZY_COMMIT = "17c8d8e91d1b32602180de1c8b5ee5b56dadd6d8"
LAZY_PATH = "results/model_outputs/raw_outputs.jsonl"
# gpt-4.1 (256 output tokens at most) on 50 GSM8K test questions under six prompts: direct ('Final: <number>'
# asked; neutral, polite, rude), chain of thought, and a revision after a harsh critique (with a lower token
# budget in one); each record keeps the whole `response` and the run's `correct`.
LAZY_ROWS, LAZY_WRONG = 30, 15

HAWKEYE = "Zhuohao-Li/Hawkeye"
HAWKEYE_COMMIT = "7f4cafbab8dacbd35561242f8a9bff08b7f83bd5"
# DeepSeek-R1-Distill-Qwen-7B on the 1,319 GSM8K test questions, as released and fine-tuned for shorter
# chains of thought; each record keeps the whole `model_output` (a `<think>` block, then the answer, most
# often boxed) and the run's `score`.
# (path, model, plain draw, draw among the rows scored 0)
HAWKEYE_FILES = [
    ("benchark/gsm/results/DeepSeek-R1-Distill-Qwen-7B/0_result.json", "DeepSeek-R1-Distill-Qwen-7B", 16, 7),
    (
        "benchark/gsm/results/Efficient_CoT_DeepSeek-R1-Distill-Qwen-7B/0_result.json",
        "Efficient_CoT_DeepSeek-R1-Distill-Qwen-7B (the source's fine-tune for shorter chains of thought)",
        15,
        7,
    ),
]


def gsm8k_gold(solution: str) -> str:
    """GSM8K's gold: the number after the solution's ``####`` (the float column is empty in places)."""
    return solution.split("####")[-1].strip().replace(",", "")


def same_number(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def two_draws(key: str, repo: str, pool: list, flagged_wrong: list[bool], n: int, wrong: int) -> list[int]:
    """The plain draw of n records, then `wrong` more among the records the source flagged wrong."""
    picked = sorted(heldout_draw.rng_for(SEED, repo, key).sample(range(len(pool)), n))
    rest = [j for j in range(len(pool)) if j not in set(picked) and flagged_wrong[j]]
    again = sorted(heldout_draw.rng_for(SEED, repo, f"{key} flagged wrong").sample(rest, wrong))
    return picked + again


def examplers_rows(mirror: Mirror) -> tuple[list[dict], list[dict]]:
    plain, flagged = [], []
    for path, model, benchmark, n, wrong in EXAMPLERS_FILES:
        records = list(csv.reader(io.StringIO(read_at(mirror, EXAMPLERS, EXAMPLERS_COMMIT, path))))
        golds = [gsm8k_gold(r[1]) if benchmark == "GSM8K" else r[1] for r in records]
        marks = [not same_number(r[4], g) for r, g in zip(records, golds)]
        picks = two_draws(path, EXAMPLERS, records, marks, n, wrong)
        for k, i in enumerate(picks):
            row = {
                "pred": records[i][2],
                "gold": golds[i],
                "kind": "gsm8k",
                "source": f"{EXAMPLERS} {path}@{EXAMPLERS_COMMIT[:7]} record {i} model={model} family=GPT "
                f"({benchmark}, chain of thought; '# <answer>' asked)",
                "source_label": not marks[i],
            }
            (plain if k < n else flagged).append(row)
    return plain, flagged


def lazy_rows(mirror: Mirror) -> tuple[list[dict], list[dict]]:
    lines = read_at(mirror, LAZY, LAZY_COMMIT, LAZY_PATH).splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    index = [i for i, r in enumerate(records) if r["dataset"] == "gsm8k"]
    pool = [records[i] for i in index]
    picks = two_draws(LAZY_PATH, LAZY, pool, [not r["correct"] for r in pool], LAZY_ROWS, LAZY_WRONG)
    rows = [
        {
            "pred": pool[j]["response"],
            "gold": pool[j]["gold"],
            "kind": "gsm8k",
            "source": f"{LAZY} {LAZY_PATH}@{LAZY_COMMIT[:7]} record {index[j]} (question {pool[j]['index']}, "
            f"{pool[j]['condition']}) model=gpt-4.1 family=GPT (GSM8K test, 256 output tokens at most)",
            "source_label": bool(pool[j]["correct"]),
        }
        for j in picks
    ]
    return rows[:LAZY_ROWS], rows[LAZY_ROWS:]


def hawkeye_rows(mirror: Mirror) -> tuple[list[dict], list[dict]]:
    plain, flagged = [], []
    for path, model, n, wrong in HAWKEYE_FILES:
        records = json.loads(read_at(mirror, HAWKEYE, HAWKEYE_COMMIT, path))
        picks = two_draws(path, HAWKEYE, records, [r["score"] != 1 for r in records], n, wrong)
        for k, i in enumerate(picks):
            row = {
                "pred": records[i]["model_output"],
                "gold": records[i]["answer"],
                "kind": "gsm8k",
                "source": f"{HAWKEYE} {path}@{HAWKEYE_COMMIT[:7]} record {i} model={model} family=DeepSeek "
                "(GSM8K test)",
                "source_label": records[i]["score"] == 1,
            }
            (plain if k < n else flagged).append(row)
    return plain, flagged


def draw(mirror: Mirror) -> list[dict]:
    examplers, examplers_flagged = examplers_rows(mirror)
    lazy, lazy_flagged = lazy_rows(mirror)
    hawkeye, hawkeye_flagged = hawkeye_rows(mirror)
    # the draws among the rows the sources flagged wrong come last, after every plain draw
    rows = examplers + lazy + hawkeye + examplers_flagged + lazy_flagged + hawkeye_flagged
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
