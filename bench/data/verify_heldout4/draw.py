"""Draw the fourth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source file's draw takes ``random.Random(f"{SEED}:{repository}:{path}")``. The labels are in
labels.tsv, written by hand by reading each drawn output before any verifier ran on it. No verifier or
grader is run here.

    python bench/data/verify_heldout4/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout4/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror  # noqa: E402

SEED = "22d"
HERE = Path(__file__).parent
ID_PREFIX = "q"

RASBT = "rasbt/reasoning-from-scratch"
# MATH-500 answers kept by the book's parser experiment: each record is the model's boxed answer as the
# file stores it (GPT's often in plain-text math: `3*sqrt(13)`, `pi/2`). (path, model, family, rows)
RASBT_FILES = [
    ("ch03/03_advanced-parser/math500_gpt_answers.json", "GPT (not named further)", "GPT", 40),
    ("ch03/03_advanced-parser/math500_qwen3_answers.json", "Qwen3 (the book's base model)", "Qwen", 90),
]

MACKLIN = "macklinhrw/llm-reasoning"
# GSM8K zero-shot and k-shot runs: a response in prose, no answer marker asked for. (path, model, rows)
MACKLIN_FILES = [
    (
        "results/archive/evaluation_results-Llama-3.2-1B-Instruct-2024-11-24-01.json",
        "Llama-3.2-1B-Instruct",
        30,
    ),
    (
        "results/archive/evaluation_results-Llama-3.2-1B-Instruct-k_shot_generate-2025-01-05-05-44.json",
        "Llama-3.2-1B-Instruct",
        30,
    ),
]
# the hundred GSM8K problems Qwen2.5-7B-Instruct found hardest, twenty sampled responses each
MACKLIN_QWEN = (
    "results/analysis/difficulty/evaluation_results-Qwen2.5-7B-Instruct-self_consistency_generate-"
    "2025-01-08-04-39-difficult-top100.json",
    "Qwen2.5-7B-Instruct",
    20,
)

FAITHFUL = "veronica320/Faithful-COT"
# predictions of the paper's baselines: (dataset folder, configuration, model, prompt, rows)
FAITHFUL_FILES = [
    ("AQUA", "gpt4_COT", "GPT-4", "chain of thought, option letter", 15),
    ("AQUA", "gpt-3.5-turbo_COT", "gpt-3.5-turbo", "chain of thought, option letter", 15),
    ("SVAMP", "text003_standard", "text-davinci-003", "direct answer", 10),
    ("GSM8K", "code002_COT", "code-davinci-002", "chain of thought, 'The answer is'", 10),
    ("MultiArith", "gpt-3.5-turbo_LtM", "gpt-3.5-turbo", "least-to-most", 10),
    ("ASDiv", "text002_COT", "text-davinci-002", "chain of thought, 'The answer is'", 10),
    ("GSM8K", "gpt4_COT", "GPT-4", "chain of thought, 'The answer is'", 10),
]


# the book's two sample runs of its distillation scripts on five MATH-500 problems: the final answer
# (`message_content`, the thinking stream kept apart in the file); the file names no model, the README
# shows each run's command and model. (path, model)
RASBT_DISTILL = [
    ("ch08/02_generate_distillation_data/sample_ollama_outputs.json", "deepseek-r1:8b (Ollama)"),
    (
        "ch08/02_generate_distillation_data/sample_openrouter_outputs.json",
        "deepseek/deepseek-r1 (OpenRouter)",
    ),
]


def rasbt_distill_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model in RASBT_DISTILL:
        for i, r in enumerate(json.loads(mirror.read(RASBT, path))):
            out.append(
                {
                    "pred": r["message_content"],
                    "gold": r["gtruth_answer"],
                    "kind": "math",
                    "source": f"{RASBT} {path} record {i} model={model} family=DeepSeek "
                    "(MATH-500, \\boxed{}, final answer after a separate thinking stream)",
                    "source_label": None,
                }
            )
    return out


def rasbt_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, family, n in RASBT_FILES:
        records = json.loads(mirror.read(RASBT, path))
        for i in sorted(heldout_draw.rng_for(SEED, RASBT, path).sample(range(len(records)), n)):
            r = records[i]
            out.append(
                {
                    "pred": r["prediction"],
                    "gold": r["answer"],
                    "kind": "math",
                    "source": f"{RASBT} {path} record {i} model={model} family={family} "
                    "(MATH-500, \\boxed{})",
                    "source_label": None,
                }
            )
    return out


def gold_number(value: float) -> str:
    return json.dumps(int(value)) if float(value).is_integer() else json.dumps(value)


def predicted_value(predicted):
    # the k-shot runs store the extracted value in a one-element list
    return predicted[0] if isinstance(predicted, list) and len(predicted) == 1 else predicted


def macklin_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, n in MACKLIN_FILES:
        records = json.loads(mirror.read(MACKLIN, path))
        for i in sorted(heldout_draw.rng_for(SEED, MACKLIN, path).sample(range(len(records)), n)):
            r = records[i]
            out.append(
                {
                    "pred": r["response"],
                    "gold": gold_number(r["correct"]),
                    "kind": "gsm8k",
                    "source": f"{MACKLIN} {path} record {i} model={model} family=Llama (GSM8K, prose)",
                    "source_label": predicted_value(r["predicted"]) == r["correct"],
                }
            )
    path, model, n = MACKLIN_QWEN
    problems = json.loads(mirror.read(MACKLIN, path))["problems"]
    candidates = [(p, k) for p in range(len(problems)) for k in range(len(problems[p]["all_responses"]))]
    for p, k in sorted(heldout_draw.rng_for(SEED, MACKLIN, path).sample(candidates, n)):
        r = problems[p]
        out.append(
            {
                "pred": r["all_responses"][k],
                "gold": gold_number(r["correct_answer"]),
                "kind": "gsm8k",
                "source": f"{MACKLIN} {path} problem {p} (index {r['index']}) response {k} model={model} "
                "family=Qwen (GSM8K, hardest 100, sampled)",
                "source_label": None,
            }
        )
    return out


def gold_after_marks(answer: str) -> str:
    # the word-problem sets store GSM8K's whole solution or "#### N" as the answer: the gold is N
    return answer.rsplit("####", 1)[-1].strip()


def same_answer(predicted, gold: str) -> bool:
    # the source's own flag, as its scorer would have it: the extracted answer against the gold, by value
    # where both are numbers (6.0 and "6"), else as text
    try:
        return float(predicted) == float(gold.replace(",", ""))
    except (TypeError, ValueError):
        return str(predicted).strip() == gold


def faithful_rows(mirror: Mirror) -> list[dict]:
    out = []
    for dataset, config, model, prompt, n in FAITHFUL_FILES:
        gold_path = f"data/{dataset}/test.jsonl"
        golds = {}
        for line in mirror.read(FAITHFUL, gold_path).splitlines():
            if line.strip():
                g = json.loads(line)
                golds[g["id"]] = g
        path = f"output_dir/{dataset}/test/{config}/predictions.jsonl"
        records = [json.loads(line) for line in mirror.read(FAITHFUL, path).splitlines() if line.strip()]
        for i in sorted(heldout_draw.rng_for(SEED, FAITHFUL, path).sample(range(len(records)), n)):
            r = records[i]
            g = golds[r["id"]]
            row = {
                "pred": r["completion"],
                "gold": gold_after_marks(str(g["answer"])),
                "kind": "math" if dataset == "AQUA" else "gsm8k",
                "source": f"{FAITHFUL} {path} id {r['id']} model={model} family=GPT ({dataset}, {prompt})",
                "source_label": same_answer(r["answer"], gold_after_marks(str(g["answer"]))),
            }
            if dataset == "AQUA":
                row["options"] = g["options"]
            out.append(row)
    return out


def draw(mirror: Mirror) -> list[dict]:
    rows = rasbt_rows(mirror) + macklin_rows(mirror) + faithful_rows(mirror) + rasbt_distill_rows(mirror)
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
