"""Draw the third held-out verifier corpus's rows from a local copy of MathCheck's published
predictions, and join them with their hand labels into heldout.jsonl.

Each source file's draw takes ``random.Random(f"{SEED}:{repository}:{path}")`` over the file's
problem-solving records (the judging tasks' records are left out: their answers are verdicts, not
values). The labels are in labels.tsv, written by hand by reading each drawn output before any
verifier ran on it. No verifier or grader is run here.

    python bench/data/verify_heldout3/draw.py --mirror DIR                   # DIR/owner+name/repo
    python bench/data/verify_heldout3/draw.py --mirror DIR --drawn FILE      # the draw alone
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/data, for heldout_draw

import heldout_draw  # noqa: E402
from heldout_draw import Mirror  # noqa: E402

SEED = "22c"
HERE = Path(__file__).parent
ID_PREFIX = "m"

MATHCHECK = "PremiLab-Math/MathCheck"

# MathCheck-GSM: GSM8K test problems and three rewritings of each (reworded, with an inserted
# distractor, as a scenario with an unknown x). (file under results/, model, family, prompt, rows)
GSM_FILES = [
    (
        "gsm_checklist_chatglm3-6b_task_all_question_all_zeroshot_prediction.json",
        "ChatGLM3-6B",
        "GLM",
        "zero-shot",
        25,
    ),
    (
        "gsm_checklist_gemini-1.5-pro-latest_task_all_question_all_zeroshot_prediction.json",
        "Gemini-1.5-Pro",
        "Gemini",
        "zero-shot",
        40,
    ),
    (
        "gsm_checklist_gpt-3.5-turbo_task_all_question_all_zeroshot_prediction.json",
        "GPT-3.5-Turbo",
        "GPT",
        "zero-shot",
        40,
    ),
    (
        "gsm_checklist_internlm2-math-20b_task_all_question_all_fewshot_prediction.json",
        "InternLM2-Math-20B",
        "InternLM",
        "few-shot",
        40,
    ),
    (
        "gsm_checklist_o1-mini_task_all_question_all_zeroshot_prediction.json",
        "o1-mini",
        "GPT",
        "zero-shot",
        40,
    ),
    # the file names no model; its prompts are in DeepSeek's chat template
    (
        "deepseek-debug_task_all_question_all_prediction.json",
        "DeepSeek (unnamed)",
        "DeepSeek",
        "few-shot",
        20,
    ),
]

# MathCheck-GEO: plane-geometry problems (GeoQA, UniGeo, Geometry3K; many in Chinese) asked with their
# figure, and the same three rewritings; multimodal models, zero-shot. (file prefix under results/,
# model, family, rows): fewer rows from the models that solve few of these, so that the corpus's mix
# of right and wrong answers stays near the other corpora's
GEO_FILES = [
    ("Geo_checklist_claude-3-haiku-20240307", "Claude-3-Haiku", "Claude", 6),
    ("Geo_checklist_claude-3-opus-20240229", "Claude-3-Opus", "Claude", 11),
    ("Geo_checklist_claude-3-sonnet-20240229", "Claude-3-Sonnet", "Claude", 11),
    ("geo_checklist_claude-3-5-sonnet-20240620", "Claude-3.5-Sonnet", "Claude", 11),
    ("Geo_checklist_cogvlm-2", "CogVLM2", "GLM", 5),
    ("Geo_checklist_gemini-1.5-flash", "Gemini-1.5-Flash", "Gemini", 11),
    ("Geo_checklist_gemini-1.5-pro", "Gemini-1.5-Pro", "Gemini", 11),
    ("Geo_checklist_gpt-4-turbo-2024-04-09", "GPT-4-Turbo", "GPT", 11),
    ("Geo_checklist_gpt-4-vision-preview", "GPT-4V", "GPT", 11),
    ("Geo_checklist_gpt-4o", "GPT-4o", "GPT", 11),
    ("Geo_checklist_internvl-1.5", "InternVL-1.5", "InternLM", 5),
    ("Geo_checklist_phi-3", "Phi-3-Vision", "Phi", 5),
    ("geo_checklist_llava1_6-mistral-7b-instruct", "LLaVA-1.6-Mistral-7B", "Mistral", 5),
    ("geo_checklist_llava1_6-vicuna-7b-instruct", "LLaVA-1.6-Vicuna-7B", "Llama", 5),
    ("geo_checklist_minicpm_v_v2_5_chat", "MiniCPM-Llama3-V-2.5", "MiniCPM", 6),
    ("geo_checklist_qwen2-vl-72B", "Qwen2-VL-72B", "Qwen", 11),
]
GEO_SUFFIX = "_task_all_question_all_zeroshot_prediction.json"

REREADING = "Tebmer/Rereading-LLM-Reasoning"
# its baseline runs (one reading of the question): each record holds a direct answer ("vanilla") and a
# chain of thought ("cot"), both asked to end in \boxed{}; the draw picks among (record, setting) pairs.
# (path, model, benchmark, rows)
REREADING_FILES = [
    ("results/gsm_topp1.0_temp0.0_majority1_20230828_141934.jsonl", "text-davinci-003", "GSM8K", 15),
    ("results/gsm_topp1.0_temp0.0_majority1_20230828_1157.jsonl", "gpt-3.5-turbo", "GSM8K", 10),
    (
        "results/svamp_gpt-4o-mini-2024-07-18_topp1.0_temp0.0_majority1_readtimes1_20240926_223003.jsonl",
        "gpt-4o-mini-2024-07-18",
        "SVAMP",
        15,
    ),
]


def gold_text(value: float | int) -> str:
    # the source's number as JSON prints it: 18.0, 2.5, 3
    return json.dumps(value)


def solving_rows(mirror: Mirror, path: str, n: int, model: str, family: str, benchmark: str) -> list[dict]:
    records = json.loads(mirror.read(MATHCHECK, path))
    solving = [i for i, r in enumerate(records) if r["task_type"] == "solving"]
    out = []
    for i in sorted(heldout_draw.rng_for(SEED, MATHCHECK, path).sample(solving, n)):
        r = records[i]
        out.append(
            {
                "pred": r["model_prediction"],
                "gold": gold_text(r["answer"]),
                "kind": "gsm8k" if benchmark.startswith("MathCheck-GSM") else "math",
                "source": f"{MATHCHECK} {path} record {i} ({r['question_type']}) model={model} "
                f"family={family} ({benchmark})",
                "source_label": None,
            }
        )
    return out


def rereading_rows(mirror: Mirror) -> list[dict]:
    out = []
    for path, model, benchmark, n in REREADING_FILES:
        records = [json.loads(line) for line in mirror.read(REREADING, path).splitlines() if line.strip()]
        # a few records of a run hold no generation (the request failed); they cannot be drawn
        candidates = [
            (i, setting)
            for i, r in enumerate(records)
            for setting in ("vanilla", "cot")
            if isinstance(r[setting].get("generation"), list) and isinstance(r[setting]["generation"][0], str)
        ]
        for i, setting in sorted(heldout_draw.rng_for(SEED, REREADING, path).sample(candidates, n)):
            r = records[i]
            out.append(
                {
                    "pred": r[setting]["generation"][0],
                    "gold": gold_text(r["target"]),
                    "kind": "gsm8k",
                    "source": f"{REREADING} {path} record {i} (id {r['id']}, {setting}) model={model} "
                    f"family=GPT ({benchmark}, {'direct' if setting == 'vanilla' else 'chain of thought'}, "
                    "\\boxed{})",
                    "source_label": bool(r[setting]["score"]),
                }
            )
    return out


def draw(mirror: Mirror) -> list[dict]:
    rows = []
    for name, model, family, prompt, n in GSM_FILES:
        benchmark = f'MathCheck-GSM solving, {prompt}, "The answer is: ..."'
        rows += solving_rows(mirror, f"results/{name}", n, model, family, benchmark)
    for name, model, family, n in GEO_FILES:
        benchmark = 'MathCheck-GEO solving, zero-shot, "The answer is: ..."'
        rows += solving_rows(mirror, f"results/{name}{GEO_SUFFIX}", n, model, family, benchmark)
    # new sources go at the end, so that the ids of the rows drawn before stay as they are
    rows += rereading_rows(mirror)
    return [{"id": f"{ID_PREFIX}{n:04d}", **row} for n, row in enumerate(rows, 1)]


def main() -> None:
    heldout_draw.main(__doc__.splitlines()[0], HERE, draw)


if __name__ == "__main__":
    main()
