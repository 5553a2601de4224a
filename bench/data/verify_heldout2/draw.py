"""Draw the second held-out verifier corpus's rows from local copies of public repositories, and join
them with their hand labels into heldout.jsonl.

Each source file's draw takes ``random.Random(f"{SEED}:{repository}:{path}")``. The labels are in
labels.tsv, one line per row id, written by hand by reading each drawn output before any verifier
ran on it (columns: id, T/F, tag, NA where the output commits to no answer, note). No verifier or
grader is run here.

    python bench/data/verify_heldout2/draw.py --mirror DIR          # DIR/owner+name/repo
    python bench/data/verify_heldout2/draw.py --mirror DIR --drawn  # the draw alone, for labelling
"""

from __future__ import annotations

import io
import json
import random
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror  # noqa: E402

SEED = "22b"
HERE = Path(__file__).parent
LETTERS = "ABCDEFGHIJ"

MMLU_PRO = "TIGER-AI-Lab/MMLU-Pro"
POT = "TIGER-AI-Lab/Program-of-Thoughts"
GAOKAO = "OpenLMLab/GAOKAO-Bench"
THEOREMQA = "TIGER-AI-Lab/TheoremQA"
ABEL = "GAIR-NLP/abel"

# MMLU-Pro's per-model output dumps (5-shot chain of thought, "The answer is (X)"), math category.
# (model as the file names it, family); the path is eval_results/model_outputs_{model}_5shots.zip
MMLU_PRO_MODELS = [
    ("DeepSeek-Coder-V2", "DeepSeek"),
    ("Llama-2-70b-hf", "Llama"),
    ("Meta-Llama-3_1-70B-Instruct", "Llama"),
    ("Meta-Llama-3_1-8B-Instruct", "Llama"),
    ("Mixtral-8x7B-Instruct-v0.1", "Mistral"),
    ("mathstral-7B", "Mistral"),
    ("Phi-3-mini-4k-instruct", "Phi"),
    ("Qwen1.5-72B-Chat", "Qwen"),
    ("Qwen1.5-110B", "Qwen"),
    ("Yi-34B", "Yi"),
    ("c4ai-command-r-v01", "Command-R"),
    ("gemini-1.5-pro-002", "Gemini"),
    ("gemini-1.5-flash-002", "Gemini"),
    ("gemma-7b", "Gemma"),
    ("jamba-1.5-large", "Jamba"),
]
# per model: rows whose source-extracted letter matches the gold, and rows where it does not (or
# where the source extracted none), so the corpus holds wrong and unreadable outputs too
MMLU_PRO_MATCHED, MMLU_PRO_UNMATCHED = 12, 3

POT_AQUA_GPT4 = ("outputs/aqua_gpt4_s0_e-1_03_31_22_24.jsonl", "GPT-4", 45)

GAOKAO_MCQ = [
    ("Results/gpt_4_0314_obj/gpt-4-0314_2010-2022_Math_I_MCQs.json", 13),
    ("Results/gpt_4_0314_obj/gpt-4-0314_2010-2022_Math_II_MCQs.json", 12),
]
GAOKAO_FILL = [
    ("Results/gpt_4_0314_sub/gpt-4-0314_2010-2022_Math_I_Fill-in-the-Blank.json", 13),
    ("Results/gpt_4_0314_sub/gpt-4-0314_2010-2022_Math_II_Fill-in-the-Blank.json", 12),
]

# TheoremQA's 5-shot output dumps: (path, model, family, rows)
THEOREMQA_FILES = [
    ("outputs/internlm2_math_20b_5shots_short.jsonl", "InternLM2-Math-20B", "InternLM", 15),
    ("outputs/internlm2_20b_5shots_short.jsonl", "InternLM2-20B", "InternLM", 15),
    ("outputs/Mistral_7B_v0.1_5shots_mistral.jsonl", "Mistral-7B-v0.1", "Mistral", 10),
]

# Abel-13B's GSM8K outputs on the perturbed ("robust") test set: numbered steps, "[Final solution] ... #### N"
ABEL_FILES = [("outputs/gsm8k_robust/13b.jsonl", "Abel-13B (Llama-2)", "Llama", 20)]


def rng_for(repo: str, path: str) -> random.Random:
    return heldout_draw.rng_for(SEED, repo, path)


def strip_dollars(gold: str) -> str:
    # GAOKAO's reference answers often end with the sentence's full stop ("$3 x-y=0$.", "2 .")
    gold = gold.strip().rstrip(".。").strip()
    if len(gold) > 1 and gold.startswith("$") and gold.endswith("$") and gold.count("$") == 2:
        return gold[1:-1].strip()
    return gold


def mmlu_pro_rows(mirror: Mirror) -> list[dict]:
    out = []
    for model, family in MMLU_PRO_MODELS:
        path = f"eval_results/model_outputs_{model}_5shots.zip"
        archive = zipfile.ZipFile(io.BytesIO(mirror.read_bytes(MMLU_PRO, path)))
        records = json.loads(archive.read(archive.namelist()[0]))
        # a few dumps hold stray strings between the records
        math = [r for r in records if isinstance(r, dict) and r.get("category") == "math"]
        math.sort(key=lambda r: int(r["question_id"]))
        matched = [i for i, r in enumerate(math) if r.get("pred") == r["answer"]]
        unmatched = [i for i, r in enumerate(math) if r.get("pred") != r["answer"]]
        rng = rng_for(MMLU_PRO, path)
        picked = rng.sample(matched, MMLU_PRO_MATCHED) + rng.sample(unmatched, MMLU_PRO_UNMATCHED)
        for i in sorted(picked):
            r = math[i]
            text = r.get("generated_text", r.get("model_outputs"))
            out.append(
                {
                    "pred": text,
                    "gold": r["answer"],
                    "kind": "math",
                    "source": f"{MMLU_PRO} {path} question_id {r['question_id']} model={model} "
                    f"family={family} (MMLU-Pro math, 5-shot CoT)",
                    "source_label": r.get("pred") == r["answer"],
                    "options": [f"{LETTERS[k]}) {o}" for k, o in enumerate(r["options"])],
                }
            )
    return out


def pot_aqua_rows(mirror: Mirror) -> list[dict]:
    path, model, n = POT_AQUA_GPT4
    rows = [json.loads(line) for line in mirror.read(POT, path).splitlines() if line.strip()]
    out = []
    for i in sorted(rng_for(POT, path).sample(range(len(rows)), n)):
        r = rows[i]
        out.append(
            {
                "pred": r["rationale"],
                "gold": r["answer"],
                "kind": "math",
                "source": f"{POT} {path} record {i} model={model} family=GPT (AQuA test, CoT)",
                "source_label": None,
                "options": r["options"],
            }
        )
    return out


def gaokao_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, n in GAOKAO_MCQ:
        examples = json.loads(mirror.read(GAOKAO, path))["example"]
        for i in sorted(rng_for(GAOKAO, path).sample(range(len(examples)), n)):
            r = examples[i]
            out.append(
                {
                    "pred": r["model_output"],
                    "gold": "".join(r["standard_answer"]),
                    "kind": "math",
                    "source": f"{GAOKAO} {path} index {r['index']} model=gpt-4-0314 family=GPT "
                    "(GAOKAO math multiple choice, Chinese)",
                    "source_label": r.get("model_answer") == r["standard_answer"],
                    "options": ["A", "B", "C", "D"],
                }
            )
    for path, n in GAOKAO_FILL:
        examples = json.loads(mirror.read(GAOKAO, path))["example"]
        for i in sorted(rng_for(GAOKAO, path).sample(range(len(examples)), n)):
            r = examples[i]
            out.append(
                {
                    "pred": r["model_output"],
                    "gold": strip_dollars(r["standard_answer"]),
                    "kind": "math",
                    "source": f"{GAOKAO} {path} index {r['index']} model=gpt-4-0314 family=GPT "
                    "(GAOKAO math fill-in-the-blank, Chinese)",
                    "source_label": None,
                }
            )
    return out


def theoremqa_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, family, n in THEOREMQA_FILES:
        rows = [json.loads(line) for line in mirror.read(THEOREMQA, path).splitlines() if line.strip()]
        for i in sorted(rng_for(THEOREMQA, path).sample(range(len(rows)), n)):
            r = rows[i]
            # "correct" is [the answer as a string, its value or None]
            gold = str(r["correct"][0])
            out.append(
                {
                    "pred": r["solution"],
                    "gold": gold,
                    "kind": "math",
                    "source": f"{THEOREMQA} {path} record {i} model={model} family={family} "
                    "(TheoremQA, 5-shot)",
                    "source_label": None,
                }
            )
    return out


def abel_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, family, n in ABEL_FILES:
        rows = [json.loads(line) for line in mirror.read(ABEL, path).splitlines() if line.strip()]
        for i in sorted(rng_for(ABEL, path).sample(range(len(rows)), n)):
            r = rows[i]
            out.append(
                {
                    "pred": r["response"],
                    "gold": str(r["gold"]),
                    "kind": "gsm8k",
                    "source": f"{ABEL} {path} record {i} (id {r['id']}) model={model} family={family} "
                    "(GSM8K with perturbed numbers)",
                    "source_label": r.get("result"),
                }
            )
    return out


def draw(mirror: Mirror) -> list[dict]:
    # new sources go at the end, so that the ids of the rows drawn before stay as they are
    rows = mmlu_pro_rows(mirror) + pot_aqua_rows(mirror) + gaokao_rows(mirror) + theoremqa_rows(mirror)
    rows += abel_rows(mirror)
    return [{"id": f"k{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
