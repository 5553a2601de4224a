"""Draw the eleventh held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key naming the pool (a
second key, the pool's with " flagged wrong", draws among the records the source flagged wrong that the
first draw did not take). The labels are in labels.tsv, written by hand by reading each drawn output before
any verifier ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout11/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout11/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, read_at  # noqa: E402

SEED = "g1h11"
HERE = Path(__file__).parent
ID_PREFIX = "y"

BUDGET = "Hypogenic-AI/reasoning-trace-robustnes-6b65-claude"
BUDGET_COMMIT = "06adb7b3892f2d23b6e86bf9e9848789b8217b02"
BUDGET_PATH = "results/raw_results.json"
# gpt-4.1 on 80 MATH and 80 GSM8K test problems under five reasoning budgets (no chain of thought: 150
# output tokens at most; short: 300; medium: 800; long: 1500; unconstrained: 3000), 'ANSWER: <answer>'
# then 'CONFIDENCE: <0-100>' asked; each record keeps the whole `full_response`, its `finish_reason` and
# the run's `correct`. (dataset, kind, plain draw, draw among the records flagged wrong)
BUDGET_POOLS = [("MATH", "math", 30, 12), ("GSM8K", "gsm8k", 10, 3)]

CONV = "Hypogenic-AI/chain-of-thought-conv-claude"
CONV_COMMIT = "e6469f826f65cb49679fae2c134d79ee272c8573"
CONV_PATH = "results/all_responses.json"
# three OpenAI models on 30 GSM8K test questions, five samples each, answering directly ('Answer: <number>'
# only) or after step-by-step reasoning; each record keeps the whole `response` (no correctness flag).
CONV_MODELS = [("gpt-4.1", 8), ("gpt-4.1-mini", 8), ("gpt-4.1-nano", 8)]

COLLAB = "Hypogenic-AI/collab-rlvr-reasoning-f8bd-claude"
COLLAB_COMMIT = "f6f59fd405fce9fba3aaa334b36853ac8a90b42d"
COLLAB_PATH = "results/all_results.json"
# claude-sonnet-4 (through OpenRouter) on GSM8K test questions, alone and in a two-round debate with
# gpt-4.1, ending '#### <number>' as asked; the source keeps the responses of its first 15 questions
# (`_resp`), each cut by the source to its first 600 characters when stored, with the run's flags.
# (response key, its flag, rows drawn; None: every one of the 15)
COLLAB_CLAUDE_QUESTIONS = 15
COLLAB_KEYS = [("cl_r", "sc", None), ("cx_r0b", "cx_r0b", 8), ("cx_r1b", "cx_r1b", 7)]

KNOW = "Hypogenic-AI/llms-know-answer-73ae-claude"
KNOW_COMMIT = "9ae0b9285c7614de6ef99f4a63e3302c561a3894"
KNOW_PATH = "results/model_outputs/exp1_gsm8k.json"
# Qwen2.5-1.5B (base: a plain transcript), Qwen2.5-1.5B-Instruct and DeepSeek-R1-Distill-Qwen-1.5B on 150
# GSM8K test questions: the second turn, after feedback ('That answer is incorrect...', 'Are you sure...',
# or a hint) on the model's own first answer; '#### <number>' asked. The source stores each second-turn
# reply cut to its first 300 characters (`t2_text`), and its parse of the whole reply (`ans2`).
KNOW_MODELS = [
    ("base", "Qwen/Qwen2.5-1.5B", "Qwen", 26),
    ("instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen", 10),
    ("rl", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "DeepSeek", 5),
]


def without_dollars(gold: str) -> str:
    """The corpora's golds have one layer of ``$...$`` removed (bench/data/README.md, "Row format")."""
    return gold[1:-1] if len(gold) > 1 and gold.startswith("$") and gold.endswith("$") else gold


def two_draws(key: str, repo: str, pool: list, flagged_wrong: list[bool], n: int, wrong: int) -> list[int]:
    """The plain draw of n records, then `wrong` more among the records the source flagged wrong."""
    picked = sorted(heldout_draw.rng_for(SEED, repo, key).sample(range(len(pool)), n))
    rest = [j for j in range(len(pool)) if j not in set(picked) and flagged_wrong[j]]
    again = sorted(heldout_draw.rng_for(SEED, repo, f"{key} flagged wrong").sample(rest, wrong))
    return picked + again


def budget_rows(mirror: Mirror) -> tuple[list[dict], list[dict]]:
    records = json.loads(read_at(mirror, BUDGET, BUDGET_COMMIT, BUDGET_PATH))
    plain, flagged = [], []
    for dataset, kind, n, wrong in BUDGET_POOLS:
        index = [i for i, r in enumerate(records) if r["dataset"] == dataset]
        pool = [records[i] for i in index]
        picks = two_draws(dataset, BUDGET, pool, [not r["correct"] for r in pool], n, wrong)
        for k, j in enumerate(picks):
            r = pool[j]
            row = {
                "pred": r["full_response"],
                "gold": without_dollars(r["gold_answer"]),
                "kind": kind,
                "source": f"{BUDGET} {BUDGET_PATH}@{BUDGET_COMMIT[:7]} record {index[j]} "
                f"({r['question_id']}, budget {r['budget']}, finish_reason {r['finish_reason']}) "
                "model=gpt-4.1 family=GPT "
                f"({dataset} test; 'ANSWER: <answer>' and 'CONFIDENCE: <0-100>' asked)",
                "source_label": bool(r["correct"]),
            }
            (plain if k < n else flagged).append(row)
    return plain, flagged


def conv_rows(mirror: Mirror) -> list[dict]:
    records = json.loads(read_at(mirror, CONV, CONV_COMMIT, CONV_PATH))
    rows = []
    for model, n in CONV_MODELS:
        index = [i for i, r in enumerate(records) if r["dataset"] == "gsm8k" and r["model"] == model]
        for i in sorted(heldout_draw.rng_for(SEED, CONV, model).sample(index, n)):
            r = records[i]
            rows.append(
                {
                    "pred": r["response"],
                    "gold": r["gold_answer"],
                    "kind": "gsm8k",
                    "source": f"{CONV} {CONV_PATH}@{CONV_COMMIT[:7]} record {i} "
                    f"(question {r['question_id']}, {r['condition']}, sample {r['sample_idx']}) "
                    f"model={model} family=GPT "
                    "(GSM8K test; 'Answer: <number>' asked)",
                    "source_label": None,  # the source stores no per-record flag
                }
            )
    return rows


def collab_rows(mirror: Mirror) -> list[dict]:
    questions = json.loads(read_at(mirror, COLLAB, COLLAB_COMMIT, COLLAB_PATH))["gsm8k"]
    rows = []
    for key, flag, n in COLLAB_KEYS:
        index = list(range(COLLAB_CLAUDE_QUESTIONS))
        if n is not None:
            index = sorted(heldout_draw.rng_for(SEED, COLLAB, key).sample(index, n))
        for i in index:
            q = questions[i]
            role = {"cl_r": "alone", "cx_r0b": "debate round 0", "cx_r1b": "debate round 1, after gpt-4.1's"}
            rows.append(
                {
                    "pred": q["_resp"][key],
                    "gold": q["gold"],
                    "kind": "gsm8k",
                    "source": f"{COLLAB} {COLLAB_PATH}@{COLLAB_COMMIT[:7]} gsm8k record {i} ({q['id']}, "
                    f"{key}: {role[key]}) model=claude-sonnet-4 family=Claude "
                    "(GSM8K test; '#### <number>' asked; stored cut to 600 characters)",
                    "source_label": bool(q[flag]),
                }
            )
    return rows


def know_rows(mirror: Mirror) -> list[dict]:
    records = json.loads(read_at(mirror, KNOW, KNOW_COMMIT, KNOW_PATH))["records"]
    rows = []
    for key, model, family, n in KNOW_MODELS:
        index = [i for i, r in enumerate(records) if r["model"] == key]
        for i in sorted(heldout_draw.rng_for(SEED, KNOW, key).sample(index, n)):
            r = records[i]
            rows.append(
                {
                    "pred": r["t2_text"],
                    "gold": r["gold"],
                    "kind": "gsm8k",
                    "source": f"{KNOW} {KNOW_PATH}@{KNOW_COMMIT[:7]} record {i} ({r['qid']}, {r['feedback']} "
                    f"feedback) model={model} family={family} (GSM8K test, second turn; '#### <number>' "
                    "asked; stored cut to 300 characters)",
                    "source_label": r["ans2"] == r["gold"],
                }
            )
    return rows


def draw(mirror: Mirror) -> list[dict]:
    budget, budget_flagged = budget_rows(mirror)
    # the draws among the rows the source flagged wrong come last, after every plain draw
    rows = budget + conv_rows(mirror) + collab_rows(mirror) + know_rows(mirror) + budget_flagged
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
