"""Draw the fifth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source file's draw takes ``random.Random(f"{SEED}:{repository}:{path}")``. The labels are in
labels.tsv, written by hand by reading each drawn output before any verifier ran on it. No verifier or
grader is run here.

    python bench/data/verify_heldout5/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout5/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror  # noqa: E402

SEED = "22e"
HERE = Path(__file__).parent
ID_PREFIX = "f"

SCORE = "Chen-Yuanmeng/Score-LLMs-in-Mathematics"
# one file per question and model, three sampled answers per question; the model's whole output is
# `model_output`. (file suffix, model, family, rows)
SCORE_MODELS = [
    ("Mathstral", "Mathstral-7B-v0.1", "Mistral", 62),
    ("Deepseek", "deepseek-math-7b-instruct", "DeepSeek", 62),
    ("Qwen", "Qwen2.5-Math-7B-Instruct", "Qwen", 62),
    ("Llama", "Llama-3.1-8B-Instruct", "Llama", 62),
]
SCORE_DIR = "answers/answer_data"
# golds written in Chinese prose ("分别为样本期望和样本方差", "收敛") state no value a reader of the
# output can compare without the question's own conventions: those questions are left out of the draw
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")

KAROU = "karou1182001/finalProjectNLP"
# GSM8K test runs of a course project's small models: the whole generation is `pred_full`, written the
# way GSM8K's solutions are (calculator marks, `#### N`) and often cut at the token limit. The README
# names the models, not whether these two runs were fine-tuned. (path, model, family, rows)
KAROU_FILES = [
    ("phiModel/all_predictions_phi.json", "Phi-1.5", "Phi", 15),
    ("gpt2BaseModel/all_predictions.json", "GPT-2 (base size)", "GPT", 6),
]

BBH = "suzgunmirac/BIG-Bench-Hard"
# code-davinci-002 with the benchmark's three-shot chain-of-thought prompts: `prediction` is the whole
# continuation ("... So the answer is 24.", "... So the answer is (E)."). (task, rows)
BBH_TASKS = [("multistep_arithmetic_two", 20), ("object_counting", 20), ("date_understanding", 25)]
# the question's listed options, "(A) 07/09/1972" one a line after "Options:"
OPTION = re.compile(r"^\(([A-Z])\) .*$", re.M)

ICML = "XiaojinStu/ICML"
# Llama-3.2-3B-Instruct asked for "ONLY the final answer as a non-negative integer": the raw generation
# with its end-of-turn token (`raw_text`)
ICML_PATH = "v6.2/results_prompt_debug/llama3.2-3b/prompt_debug.json"
ICML_ROWS = 6


def tree(mirror: Mirror, repo: str, folder: str) -> list[str]:
    command = ["git", f"--git-dir={mirror.git_dir(repo)}", "ls-tree", "--name-only", "HEAD", folder + "/"]
    return sorted(subprocess.run(command, check=True, capture_output=True, text=True).stdout.split())


def score_rows(mirror: Mirror) -> list[dict]:
    out = []
    files = tree(mirror, SCORE, SCORE_DIR)
    for suffix, model, family, n in SCORE_MODELS:
        pool = []
        for path in files:
            if not path.endswith(f"_{suffix}.json"):
                continue
            for i, r in enumerate(json.loads(mirror.read(SCORE, path))):
                if not CJK.search(r["answer"]):
                    pool.append((path, i, r))
        for path, i, r in sorted(
            heldout_draw.rng_for(SEED, SCORE, f"{SCORE_DIR}/*_{suffix}.json").sample(pool, n),
            key=lambda c: (c[0], c[1]),
        ):
            out.append(
                {
                    "pred": r["model_output"],
                    "gold": r["answer"],
                    "kind": "math",
                    "source": f"{SCORE} {path} record {i} (occurrence {r['occurrence']}) model={model} "
                    f"family={family} (college math, {r['sub_category']}; step by step, final answer and "
                    "a confidence level)",
                    # the project's own hand mark, 0-100; only a full mark counts as its "correct"
                    "source_label": r["mark"] == 100,
                }
            )
    return out


def karou_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, family, n in KAROU_FILES:
        records = json.loads(mirror.read(KAROU, path))
        for i in sorted(heldout_draw.rng_for(SEED, KAROU, path).sample(range(len(records)), n)):
            r = records[i]
            out.append(
                {
                    "pred": r["pred_full"],
                    "gold": r["gold_number"],
                    "kind": "gsm8k",
                    "source": f"{KAROU} {path} record {i} model={model} family={family} "
                    "(GSM8K test, solution with calculator marks and `#### N`)",
                    "source_label": str(r["correct"]) == "True",
                }
            )
    return out


def bbh_rows(mirror: Mirror) -> list[dict]:
    out = []
    for task, n in BBH_TASKS:
        path = f"code-davinci-002-outputs/code-davinci-002-cot/{task}_few_shot_template_0-255000.json"
        records = json.loads(mirror.read(BBH, path))["outputs"]
        for i in sorted(heldout_draw.rng_for(SEED, BBH, path).sample(range(len(records)), n)):
            r = records[i]
            row = {
                "pred": r["prediction"],
                "gold": r["target"],
                "kind": "math",
                "source": f"{BBH} {path} record {i} model=code-davinci-002 family=GPT "
                f"(BIG-Bench Hard {task}, three-shot chain of thought, 'So the answer is ...')",
                "source_label": None,
            }
            question = r["input"].rsplit("\n\nQ: ", 1)[-1]
            options = [m.group(0) for m in OPTION.finditer(question)]
            if options:
                # the gold is stored as "(E)"; the corpora keep the letter alone
                row["gold"] = r["target"].strip("()")
                row["options"] = options
            out.append(row)
    return out


def icml_rows(mirror: Mirror) -> list[dict]:
    records = json.loads(mirror.read(ICML, ICML_PATH))["v6"]["records"]
    out = []
    for i in sorted(heldout_draw.rng_for(SEED, ICML, ICML_PATH).sample(range(len(records)), ICML_ROWS)):
        r = records[i]
        out.append(
            {
                "pred": r["gen"]["raw_text"],
                "gold": r["gold_answer"],
                "kind": "gsm8k",
                "source": f"{ICML} {ICML_PATH} v6 record {i} ({r['id']}) model=Llama-3.2-3B-Instruct "
                "family=Llama (GSM8K, the answer alone as an integer, raw text with <|eot_id|>)",
                "source_label": r["extracted_correct"],
            }
        )
    return out


def draw(mirror: Mirror) -> list[dict]:
    rows = score_rows(mirror) + karou_rows(mirror) + bbh_rows(mirror) + icml_rows(mirror)
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
