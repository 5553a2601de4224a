"""Draw the twelfth held-out verifier corpus's rows from local copies of public repositories, and join them
with their hand labels into heldout.jsonl.

Each source's draw takes ``random.Random(f"{SEED}:{repository}:{key}")``, the key naming the pool (for
simple-evals-ru, the results file). The labels are in labels.tsv, written by hand by reading each drawn
output before any verifier ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout12/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout12/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror, read_at  # noqa: E402

SEED = "g1h12"
HERE = Path(__file__).parent
ID_PREFIX = "z"

RU = "kuk/simple-evals-ru"
RU_COMMIT = "5fb1507eafd70be92ff3379440c13ee5272963ce"
# simple-evals' zero-shot chain-of-thought prompts run on instruct models (Russian and others) through
# their APIs: MGSM's English problems ('Answer:' then the integer asked on the last line) and MATH-500
# problems ('Answer: $ANSWER' on the last line, no \boxed asked). Each results file keeps, per record,
# the problem `id`, the whole reply (`answer`), the source's parse (`pred`) and flag (`is_correct`); the
# golds are the `target` of data/benches/<bench>.jsonl. (bench, kind, rows per results file)
RU_BENCHES = [("mgsm", "gsm8k", 2), ("math", "math", 2)]
# results file stem (number_model) -> family
RU_FAMILIES = {
    "gemini": "Gemini",
    "llama": "Llama",
    "qwen": "Qwen",
    "yandexgpt": "YandexGPT",
    "gigachat": "GigaChat",
    "deepseek": "DeepSeek",
    "cotype": "Cotype",
    "t": "T-Bank",
    "saiga": "Saiga",
    "vikhr": "Vikhr",
    "ruadapt": "RuAdapt",
}

CS336 = "PrecipiceBlades/cs336-assignment5-alignment"
CS336_COMMIT = "fc43ceb108b7e21dedb76b508dd2f3716bfdf6a5"
CS336_PATH = "results/gsm8k_results.jsonl"
# the base Llama-3.1-8B, zero-shot, greedy, on the 1,319 GSM8K test questions, prompted with
# '{question}\nAnswer:' and nothing else; each record keeps the whole `model_output`, the source's parse
# (the last number) and its `is_correct`.
CS336_ROWS = 38

TUTOR = "toyhouse/mlx-finetune-record"
TUTOR_COMMIT = "b37abb5ec8746ed7ba160634135fa73f3018f3b4"
# 18 grade-school problems (grades 1-5: word problems, arithmetic, fractions), asked kid-style ('Can you
# help me solve this step by step?'), no answer format asked, run through Ollama; each CSV row keeps the
# whole `response`, the `expected` answer as the source writes it ('$2', '5,112', '23/20', '3 3/4 cups')
# and the source's flag `correct` (whether the expected string occurs in the response). (path, rows per
# model)
TUTOR_PATHS = [("results/five_models/combined_results.csv", 5), ("results/combined_results.csv", 5)]
# MathTutor and s1k_init are the repository's own MLX fine-tunes; their base model is not named in it
TUTOR_FAMILIES = {
    "llama3": "Llama",
    "qwq": "Qwen",
    "phi4": "Phi",
    "gemma": "Gemma",
    "iamcoder18/acemath-instruct:7b": "AceMath",
    "MathTutor": "fine-tune",
    "s1k_init": "fine-tune",
}
PLAIN_NUMBER = re.compile(r"\$?[0-9][0-9,]*(\.[0-9]+)?")


def list_at(mirror: Mirror, repo: str, commit: str, folder: str) -> list[str]:
    command = ["git", f"--git-dir={mirror.git_dir(repo)}", "ls-tree", "--name-only", f"{commit}:{folder}"]
    out = subprocess.run(command, check=True, capture_output=True).stdout.decode("utf-8")
    return sorted(name for name in out.splitlines() if name.endswith(".jsonl"))


def read_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def ru_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for bench, kind, n in RU_BENCHES:
        golds = {
            r["id"]: r["target"]
            for r in read_jsonl(read_at(mirror, RU, RU_COMMIT, f"data/benches/{bench}.jsonl"))
        }
        folder = f"data/results/{bench}"
        for name in list_at(mirror, RU, RU_COMMIT, folder):
            path = f"{folder}/{name}"
            records = read_jsonl(read_at(mirror, RU, RU_COMMIT, path))
            stem = name.removesuffix(".jsonl")
            model = stem.split("_", 1)[1]
            family = RU_FAMILIES[model.split("_")[0]]
            benchmark = "MGSM English" if bench == "mgsm" else "MATH-500"
            for i in sorted(heldout_draw.rng_for(SEED, RU, path).sample(range(len(records)), n)):
                r = records[i]
                rows.append(
                    {
                        "pred": r["answer"],
                        "gold": golds[r["id"]],
                        "kind": kind,
                        "source": f"{RU} {path}@{RU_COMMIT[:7]} record {i} ({bench} id {r['id']}) "
                        f"model={model} family={family} ({benchmark}; "
                        "'Answer:' on the last line asked)",
                        "source_label": bool(r["is_correct"]),
                    }
                )
    return rows


def cs336_rows(mirror: Mirror) -> list[dict]:
    records = read_jsonl(read_at(mirror, CS336, CS336_COMMIT, CS336_PATH))
    rows = []
    for i in sorted(heldout_draw.rng_for(SEED, CS336, CS336_PATH).sample(range(len(records)), CS336_ROWS)):
        r = records[i]
        rows.append(
            {
                "pred": r["model_output"],
                "gold": r["ground_truth"],
                "kind": "gsm8k",
                "source": f"{CS336} {CS336_PATH}@{CS336_COMMIT[:7]} record {i} model=Llama-3.1-8B "
                "family=Llama (GSM8K test; base model, zero-shot '{question}\\nAnswer:')",
                "source_label": bool(r["is_correct"]),
            }
        )
    return rows


def tutor_rows(mirror: Mirror) -> list[dict]:
    rows = []
    for path, n in TUTOR_PATHS:
        records = list(csv.DictReader(io.StringIO(read_at(mirror, TUTOR, TUTOR_COMMIT, path))))
        for model in dict.fromkeys(r["model"] for r in records):
            index = [i for i, r in enumerate(records) if r["model"] == model]
            for i in sorted(heldout_draw.rng_for(SEED, TUTOR, f"{path}:{model}").sample(index, n)):
                r = records[i]
                word_problem = not r["problem"].startswith("What is")
                rows.append(
                    {
                        "pred": r["response"],
                        "gold": r["expected"],
                        "kind": "gsm8k" if word_problem and PLAIN_NUMBER.fullmatch(r["expected"]) else "math",
                        "source": f"{TUTOR} {path}@{TUTOR_COMMIT[:7]} row {i} (grade {r['grade']}, "
                        f"{r['category']}) model={model} family={TUTOR_FAMILIES[model]} "
                        "(grade-school problems through Ollama; no answer format asked)",
                        "source_label": r["correct"] == "True",
                    }
                )
    return rows


def draw(mirror: Mirror) -> list[dict]:
    rows = ru_rows(mirror) + cs336_rows(mirror) + tutor_rows(mirror)
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
